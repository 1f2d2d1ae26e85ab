# Root conftest: modules that need CuPy are not collected for doctests on machines without it.
import importlib.util

collect_ignore_glob = [] if importlib.util.find_spec("cupy") else ["xedm/kernels/gpu_*.py"]
