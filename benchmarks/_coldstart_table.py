"""The README's tables of ``benchmarks/coldstart.py --backend cpu``, from its JSON alone
(``python benchmarks/coldstart.py --table benchmarks/results/coldstart_cpu.json``)."""

from __future__ import annotations


def sec(v) -> str:
    if v is None:
        return "–"
    return f"{v:.3f} s" if v < 0.1 else f"{v:.2f} s" if v < 10 else f"{v:.1f} s"


def yes(flag) -> str:
    return "–" if flag is None else "yes" if flag else "no"


def cold_table(cold: dict) -> list[str]:
    jit, shp = cold.get("jit", {}), cold.get("shipped", {})
    out = ["| call (one process, in this order) | before: first call (jit) "
           "| after: first call (shipped) | second call (shipped) |", "|---|---|---|---|"]
    for name, code in cold["rows"]:
        j, s = jit.get("rows", {}).get(name, {}), shp.get("rows", {}).get(name, {})
        out.append(f"| `{code}` | {sec(j.get('cold_s'))} | {sec(s.get('cold_s'))} "
                   f"| {sec(s.get('second_s'))} |")
    second = [r["second_s"] for r in shp.get("rows", {}).values() if r.get("second_s")]
    out.append(f"| **total** | {sec(jit.get('total_cold_s'))} "
               f"| **{sec(shp.get('total_cold_s'))}** | {sec(sum(second) if second else None)} |")
    t = cold.get("targets_met")
    if t:
        over = "" if t["all_rows_le_3s"] else f" ({', '.join(t['rows_over_3s'])} over)"
        out.append(f"\nTargets (shipped): every row <= 3 s: {yes(t['all_rows_le_3s'])}{over}; "
                   f"total <= 20 s: {yes(t['total_le_20s'])}. Shipped kernels used: "
                   f"{yes(shp.get('seen', {}).get('shipped_usable'))}, a build of these "
                   f"sources: {yes(shp.get('seen', {}).get('shipped_build_current'))}.")
    return out


def runs_table(demo: dict | None, quick: dict | None) -> list[str]:
    out = ["| run (fresh process, empty cache) | before (jit) | after (shipped) |", "|---|---|---|"]
    if demo:
        out.append(f"| `xedm demo` | {sec(demo.get('jit', {}).get('wall_s'))} "
                   f"| {sec(demo.get('shipped', {}).get('wall_s'))} |")
    if quick:
        p = quick.get("pytest", {})
        counts = ", ".join(f"{p[k]} {k}" for k in ("passed", "failed", "error", "skipped")
                           if p.get(k)) or p.get("summary") or "no summary"
        out.append(f"| quick tests in a new venv: `{quick.get('install_command')}`, then "
                   f"`{quick.get('tests_command')}` | – | {sec(quick.get('install_s'))} + "
                   f"{sec(quick.get('tests_s'))} = {sec(quick.get('total_s'))} ({counts}; "
                   f"passed in <= 300 s: {yes(quick.get('target_met'))}) |")
    return out


def warm_table(warm: dict) -> list[str]:
    out = ["| warm call | shipped | jit | shipped / jit | kernels not shipped |",
           "|---|---|---|---|---|"]
    for c, r in warm["summary"].items():
        ratio = r.get("ratio")
        cell = ("–" if ratio is None else f"**{ratio:.2f}** (> 1.05)" if r.get("over_1_05")
                else f"{ratio:.2f}")
        n = r.get("shipped_compiled")
        out.append(f"| `{warm['cases'][c]}` | {sec(r.get('shipped_s'))} "
                   f"| {sec(r.get('jit_s'))} | {cell} | {'–' if n is None else n} |")
    out.append(f"\nMedians of all the timed calls of a mode ({warm['timing']}; "
               f"{warm['rounds']} processes per mode, alternating); above 1.05 in bold; kernels "
               "not shipped: compiled in shipped mode too (for this CPU, as in jit mode).")
    return out


def table(doc: dict) -> str:
    """The cold table (before / after), the demo and quick-test runs, the warm speed."""
    m = doc.get("machine", {})
    out = [f"{m.get('cpu_model')}, {m.get('cpu_count')} cores, Python {doc.get('python')}, "
           f"numba {doc.get('numba')} (`{doc.get('command')}`, {doc.get('date')})"]
    if doc.get("cold"):
        out += [""] + cold_table(doc["cold"])
    if doc.get("demo") or doc.get("quick_tests"):
        out += [""] + runs_table(doc.get("demo"), doc.get("quick_tests"))
    if doc.get("warm"):
        out += [""] + warm_table(doc["warm"])
    return "\n".join(out)
