"""``xedm warmup``: compile the kernels a session will use, once per machine
(:func:`xedm.warmup`)."""

from __future__ import annotations

from ._common import CLIError, examples, int_at_least, int_list


def add_parser(sub) -> None:
    """The ``warmup`` subcommand of the parser."""
    w = sub.add_parser("warmup", help="compile the GPU (or CPU) kernels once, into the disk "
                       "cache, so later processes start fast",
                       description="Run each function once on small synthetic data at every "
                       "E a session may use, so that CuPy's kernel cache ($CUPY_CACHE_DIR, "
                       "default ~/.cupy/kernel_cache) or numba's ($XEDM_CACHE_DIR, default "
                       "~/.cache/xedm/numba) holds the compiled kernels; on the CPU also what "
                       "a session meets first (the quick start, the demo, sweeps, RQA). Shows "
                       "a progress bar; prints where the cache lives, whether the kernels "
                       "compiled ahead with the package serve, and the GPU variants compiled.",
                       **examples("xedm warmup --backend gpu",
                                  "xedm warmup --backend gpu --E-max 8 --E 3,5",
                                  "xedm warmup --backend cpu"))
    w.add_argument("--backend", choices=["cpu", "gpu"], default="gpu",
                   help="which kernels (default gpu)")
    w.add_argument("--E-max", dest="E_max", type=int_at_least(1), default=10,
                   help="largest E of the choice of E (default 10)")
    w.add_argument("--E", type=int_list, default=None,
                   help="E used with a fixed E, e.g. 3 or 3,5 (default 1..E-max)")
    w.add_argument("--functions", default=None,
                   help="comma list among simplex, embed_dimension, smap, ccm, xmap, ivf "
                   "(default all)")
    w.add_argument("--lengths", type=int_list, default=None,
                   help="series lengths to run at (default: both kNN paths of the backend)")
    w.add_argument("-q", "--quiet", action="store_true", help="print only the summary")
    w.set_defaults(func=command)


def command(args) -> int:
    """``xedm warmup``."""
    from ..precompile import FUNCTIONS, warmup

    functions = FUNCTIONS if args.functions is None else [
        f.strip() for f in args.functions.split(",") if f.strip()]
    try:
        lengths = [args.lengths] if isinstance(args.lengths, int) else args.lengths
        info = warmup(args.backend, E_max=args.E_max, E=args.E, functions=functions,
                      lengths=lengths, progress=not args.quiet)
    except ValueError as err:
        raise CLIError(str(err)) from None
    if info["variants"]:
        print(f"{len(info['variants'])} GPU kernel modules compiled or loaded:")
        for v in info["variants"]:
            print(f"  {v}")
    for name, err in info.get("errors", {}).items():
        print(f"{name}: not warmed ({err})")
    pre = info.get("precompiled")
    if pre is not None:
        print(f"kernels compiled ahead ({pre['dir']}): " + (
            f"used ({pre['hits']} loaded)" if pre["used"] else f"not used: {pre['why_not']}"))
    print(f"warmup {info['backend']}: {info['total_seconds']} s; cache: {info['cache_dir']}")
    return 1 if info.get("errors") else 0
