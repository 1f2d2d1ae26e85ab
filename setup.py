"""Build hooks (the metadata is pyproject.toml's): kernels compiled ahead into the wheel.

``build_py`` compiles the CPU kernels a session uses for the portable x86-64-v3 target
(``python -m xedm.ahead build``, about 1.5 minutes on 2 cores) into ``xedm/_precompiled`` of
the wheel, or of the source tree for an editable install (``pip install -e .``), where a build
of the same sources, numba and Python is reused.  The wheel is then specific to the Python
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


def _precompile(package_root: str, reuse: str | None) -> bool:
    """Build ``package_root/xedm/_precompiled`` (``reuse``: a current build to copy)."""
    target = os.path.join(package_root, SHIPPED)
    env = dict(os.environ)
    env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
    check = ("import sys, xedm.ahead as a; "
             "sys.exit(0 if a.current(sys.argv[1]) else 1)")
    for path in filter(None, (target, reuse)):
        if subprocess.run([sys.executable, "-c", check, path], env=env, cwd=package_root,
                          capture_output=True).returncode == 0:
            if path != target:
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(path, target)
            print(f"xedm: kernels compiled ahead: reused {path}", flush=True)
            return True
    print("xedm: compiling the CPU kernels ahead for the x86-64-v3 baseline (about 1.5 min "
          "on 2 cores; XEDM_PRECOMPILE=0 skips it)", flush=True)
    p = subprocess.run([sys.executable, "-m", "xedm.ahead", "build", target], env=env,
                       cwd=package_root)
    return p.returncode == 0


class BuildPy(build_py):
    def run(self):
        super().run()
        if _mode() in ("0", "no", "off", "false"):
            return
        editable = getattr(self, "editable_mode", False)
        root = HERE if editable else os.path.abspath(self.build_lib)
        reuse = None if editable else os.path.join(HERE, SHIPPED)
        try:
            ok = _precompile(root, reuse)
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
