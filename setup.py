"""Build hooks (the metadata is pyproject.toml's): kernels compiled ahead into the wheel.

``build_py`` compiles the CPU kernels a session uses for the portable targets
(``python -m xedm.ahead build``, about 2.5 minutes per target on 2 cores) into
``xedm/_precompiled/<target>`` of the wheel (x86-64-v4 and x86-64-v3), or of the source tree
for an editable install (``pip install -e .``: the best target of this CPU only), where a
build of the same sources, numba and Python is reused.  ``XEDM_PRECOMPILE_TARGETS`` (``all``,
``host`` or a comma list) overrides the choice.  The wheel is then specific to the Python
version and machine (numba's object code is), with no compiled extension.

``XEDM_PRECOMPILE``: ``auto`` (default: build; on failure say why and go on without), ``0``
(skip: kernels compile on first use), ``require`` (a failure fails the build).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70
    from wheel.bdist_wheel import bdist_wheel

HERE = os.path.dirname(os.path.abspath(__file__))
SHIPPED = os.path.join("xedm", "_precompiled")


def _mode() -> str:
    return os.environ.get("XEDM_PRECOMPILE", "auto").strip().lower() or "auto"


def _precompile(package_root: str, targets: str, reuse: str | None) -> bool:
    """Build ``package_root/xedm/_precompiled/<target>`` (``reuse``: current builds to copy)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
    print(f"xedm: the CPU kernels compiled ahead ({targets} targets; about 2.5 min per target on "
          "2 cores unless a current build is reused; XEDM_PRECOMPILE=0 skips it)", flush=True)
    cmd = [sys.executable, "-m", "xedm.ahead", "build", os.path.join(package_root, SHIPPED),
           "--targets", targets] + (["--reuse", reuse] if reuse else [])
    return subprocess.run(cmd, env=env, cwd=package_root).returncode == 0


class BuildPy(build_py):
    def run(self):
        super().run()
        if _mode() in ("0", "no", "off", "false"):
            return
        editable = getattr(self, "editable_mode", False)
        root = HERE if editable else os.path.abspath(self.build_lib)
        reuse = None if editable else os.path.join(HERE, SHIPPED)
        # an editable install serves this machine only: its best target; a wheel: every one
        targets = os.environ.get("XEDM_PRECOMPILE_TARGETS") or ("host" if editable else "all")
        try:
            ok = _precompile(root, targets, reuse)
            why = "see the output above"
        except Exception as err:  # noqa: BLE001
            ok, why = False, f"{type(err).__name__}: {err}"
        if not ok:
            if _mode() == "require":
                raise SystemExit(f"xedm: compiling the kernels ahead failed ({why})")
            print(f"xedm: WARNING: no kernels compiled ahead ({why}); they will compile on "
                  "first use", flush=True)
            shutil.rmtree(os.path.join(root, SHIPPED), ignore_errors=True)


class BdistWheel(bdist_wheel):
    """A wheel for this Python and machine when it carries compiled kernels."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = _mode() in ("0", "no", "off", "false")
        if not self.root_is_pure:  # platlib, at the wheel's root (not .data/purelib)
            self.distribution.has_ext_modules = lambda: True

    def get_tag(self):
        python, abi, plat = super().get_tag()
        if not self.root_is_pure:
            python, abi = "cp{}{}".format(*sys.version_info[:2]), "none"
            if plat == "linux_x86_64":  # no shared library inside: any glibc will do
                plat = "manylinux2014_x86_64"
        return python, abi, plat


setup(cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel})
