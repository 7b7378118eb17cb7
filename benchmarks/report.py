"""Derived numbers and markdown tables of the memory-bound benchmark. Pure Python (no torch).

A case's result is a JSON-ready dict (what `bench_memory_bound.py` writes)::

    {"case": "softmax_bf16_8192x8192", "kernel": "softmax_bf16", "shape": [8192, 8192],
     "bytes": 268435456,
     "impls": {"ours": IMPL, "torch": IMPL, "triton": IMPL, "tilelang": IMPL},
     "resources": {"regs": 32, "stack": 0, "shared": 0, "local": 0, "local_insts": 0,
                   "ldg128": 8, "stg128": 8} or {"error": "..."}}

    IMPL = {"status": "ok" | "missing" | "error" | "skipped", "reason": "...",
            "times_us": [t1, t2],
            "check": {"ok": bool, "errors": {"Y": 1.1e-3}, "poisoned": bool, "note": "..."},
            "bitwise": {"Y": {"mismatches": 0, "total": 1024, "variant": "x / s"}},   # casts, quant
            "batch_invariance": {"ok": bool, "detail": "..."}}                          # row kernels
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

IMPLS = ("ours", "torch", "triton", "tilelang")
PEERS = IMPLS[1:]


# -- numbers ---------------------------------------------------------------------------
def gbps(nbytes: int, time_us: float) -> float:
    """Bytes over time in GB/s (10^9 bytes per second)."""
    if not time_us or time_us <= 0:
        raise ValueError(f"time must be positive, got {time_us!r}")
    return nbytes / (time_us * 1e-6) / 1e9


def percent(value: float, ceiling: float) -> float:
    if ceiling <= 0:
        raise ValueError(f"ceiling must be positive, got {ceiling!r}")
    return 100.0 * value / ceiling


def spread(times: Sequence[float]) -> float:
    """(max - min) / min of repeated measurements of one configuration."""
    if not times:
        raise ValueError("no measurement")
    low = min(times)
    return (max(times) - low) / low


def impl_time(impl: dict[str, Any] | None) -> float | None:
    """The reported time of an implementation: the lower of its measurements; None when it did not run."""
    if not impl or impl.get("status") != "ok" or not impl.get("times_us"):
        return None
    return min(impl["times_us"])


def passed(impl: dict[str, Any] | None) -> bool:
    return bool(impl) and impl.get("status") == "ok" and bool(impl.get("check", {}).get("ok"))


def best_peer(impls: dict[str, Any]) -> tuple[str, float] | None:
    """(name, time) of the fastest peer that ran and passed its correctness check."""
    timed = [(impl_time(impls.get(p)), p) for p in PEERS if passed(impls.get(p))]
    timed = [(t, p) for t, p in timed if t is not None]
    if not timed:
        return None
    t, p = min(timed)
    return p, t


def ratio_to_best_peer(result: dict[str, Any]) -> float | None:
    """best peer time / our time (> 1: ours is faster); None when either is missing."""
    ours = impl_time(result["impls"].get("ours"))
    best = best_peer(result["impls"])
    if ours is None or best is None:
        return None
    return best[1] / ours


def case_metrics(result: dict[str, Any], copy_gbps: float | None) -> dict[str, Any]:
    """GB/s and % of copy bandwidth per implementation, best peer and ratio."""
    per_impl = {}
    for name in IMPLS:
        t = impl_time(result["impls"].get(name))
        if t is None:
            continue
        rate = gbps(result["bytes"], t)
        same_size = result.get("same_size_copy_gbps")
        per_impl[name] = {"time_us": t, "gbps": rate,
                          "pct_copy": percent(rate, copy_gbps) if copy_gbps else None,
                          "pct_same_size_copy": percent(rate, same_size) if same_size else None,
                          "spread": spread(result["impls"][name]["times_us"])}
    best = best_peer(result["impls"])
    return {"impls": per_impl, "best_peer": best[0] if best else None,
            "best_peer_us": best[1] if best else None, "ratio": ratio_to_best_peer(result)}


# -- formatting ------------------------------------------------------------------------
def fmt_us(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def fmt_num(value: float | None, digits: int = 0, suffix: str = "") -> str:
    return "—" if value is None else f"{value:.{digits}f}{suffix}"


def fmt_err(value: float | None) -> str:
    if value is None:
        return "—"
    return "nan" if math.isnan(value) else f"{value:.1e}"


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row has {len(row)} cells, the table {len(headers)} columns: {row!r}")
        lines.append("| " + " | ".join(str(cell).replace("|", "/") for cell in row) + " |")
    return "\n".join(lines)


def impl_cell(impl: dict[str, Any] | None) -> str:
    """Time of one implementation, or why there is none; '!' marks a failed correctness check."""
    if not impl:
        return "—"
    status = impl.get("status")
    if status != "ok":
        return status or "—"
    cell = fmt_us(impl_time(impl))
    return cell if passed(impl) else cell + " (wrong!)"


def perf_table(results: Sequence[dict[str, Any]], copy_gbps: float | None) -> str:
    headers = ["case", "MB", "ours us", "GB/s", "% copy", "% same-size copy", "spread", "torch us", "triton us",
               "tilelang us", "best peer", "ratio"]
    rows = []
    for r in results:
        m = case_metrics(r, copy_gbps)
        ours = m["impls"].get("ours", {})
        rows.append([
            r["case"], fmt_num(r["bytes"] / 1e6, 1), impl_cell(r["impls"].get("ours")),
            fmt_num(ours.get("gbps")), fmt_num(ours.get("pct_copy"), 1, "%"),
            fmt_num(ours.get("pct_same_size_copy"), 1, "%"),
            fmt_num(100 * ours["spread"], 1, "%") if ours else "—",
            *(impl_cell(r["impls"].get(p)) for p in PEERS),
            m["best_peer"] or "—", fmt_num(m["ratio"], 2),
        ])
    return markdown_table(headers, rows)


def peer_rate_table(results: Sequence[dict[str, Any]], copy_gbps: float | None) -> str:
    """% of copy bandwidth of every implementation, for comparing peers with each other."""
    headers = ["case", *(f"{p} % copy" for p in IMPLS)]
    rows = []
    for r in results:
        m = case_metrics(r, copy_gbps)["impls"]
        rows.append([r["case"], *(fmt_num(m[p]["pct_copy"], 1, "%") if p in m and m[p]["pct_copy"] is not None
                                  else "—" for p in IMPLS)])
    return markdown_table(headers, rows)


def check_cell(impl: dict[str, Any] | None) -> str:
    if not impl or impl.get("status") != "ok":
        return "—"
    check = impl.get("check", {})
    errors = check.get("errors", {})
    worst = max(errors.values(), key=lambda e: math.inf if math.isnan(e) else e) if errors else None
    cell = ("ok " if check.get("ok") else "FAIL ") + fmt_err(worst)
    if check.get("poisoned") is False:
        cell += " (unpoisoned)"
    return cell


def bitwise_cell(impl: dict[str, Any] | None) -> str:
    """'=' when every output matches PyTorch's bits, else mismatching elements per output and
    the rounding variant that matched (when one did)."""
    if not impl or impl.get("status") != "ok" or not impl.get("bitwise"):
        return "—"
    parts = []
    for out, b in impl["bitwise"].items():
        if b.get("error"):
            parts.append(f"{out}: {b['error']}")
        elif b["mismatches"] == 0:
            parts.append(f"{out} =")
        else:
            text = f"{out} {b['mismatches']}/{b['total']} differ"
            if b.get("variant"):
                text += f", = torch[{b['variant']}]"
            parts.append(text)
    return "; ".join(parts)


def invariance_cell(impl: dict[str, Any] | None) -> str:
    inv = impl.get("batch_invariance") if impl and impl.get("status") == "ok" else None
    if not inv:
        return "—"
    verdict = {True: "ok", False: "NO", None: "n/a"}[inv["ok"]]
    return verdict + (f" ({inv['detail']})" if inv.get("detail") else "")


def _other_loads(bits: dict | None) -> str:
    """' (9 x 32-bit)': the global loads of a kernel without 16-byte ones (JSON keys are strings)."""
    if not bits:
        return ""
    return " (" + ", ".join(f"{n} x {b}-bit" for b, n in sorted(bits.items(), key=lambda kv: -int(kv[0]))) + ")"


def resources_cell(res: dict[str, Any] | None) -> list[str]:
    if not res:
        return ["—"] * 4
    if res.get("error"):
        return [res["error"], "—", "—", "—"]
    spills = "0" if not res.get("local") and not res.get("local_insts") else \
        f"LOCAL {res.get('local')} B, {res.get('local_insts')} LDL/STL"
    ldg = f"yes ({res['ldg128']})" if res.get("ldg128") else "no" + _other_loads(res.get("ldg_bits"))
    return [str(res.get("regs", "—")), spills, str(res.get("shared", "—")), ldg]


def quality_table(results: Sequence[dict[str, Any]]) -> str:
    headers = ["case", *(f"{p} err" for p in IMPLS), "bitwise ours", "batch-inv ours",
               "regs", "spills", "smem B", "LDG.E.128"]
    rows = []
    for r in results:
        impls = r["impls"]
        rows.append([r["case"], *(check_cell(impls.get(p)) for p in IMPLS), bitwise_cell(impls.get("ours")),
                     invariance_cell(impls.get("ours")), *resources_cell(r.get("resources"))])
    return markdown_table(headers, rows)


def launch_table(launch: dict[str, Any]) -> str:
    headers = ["implementation", "host us/call", "with sync us/call", "spread", "call"]
    rows = []
    for name in IMPLS:
        item = launch.get(name)
        if not item:
            continue
        if item.get("status") != "ok":
            rows.append([name, item.get("status", "—"), "—", "—", item.get("reason", "")])
            continue
        rows.append([name, fmt_us(min(item["host_us"])), fmt_us(min(item["total_us"])),
                     fmt_num(100 * spread(item["host_us"]), 1, "%"), item.get("call", "")])
    return markdown_table(headers, rows)


def notes_lines(results: Sequence[dict[str, Any]], shown_cases: int = 6) -> list[str]:
    """Why implementations have no number or an unchecked one: one line per distinct reason
    (the case name in a reason generalized to <case>), with the cases it applies to."""
    groups: dict[tuple[str, str], list[str]] = {}
    for r in results:
        for name in IMPLS:
            impl = r["impls"].get(name)
            if not impl:
                continue
            if impl.get("status") in ("missing", "error", "skipped") and impl.get("reason"):
                text = f"{impl['status']}: {impl['reason']}"
            elif impl.get("check", {}).get("note"):
                text = impl["check"]["note"]
            else:
                continue
            groups.setdefault((name, text.replace(r["case"], "<case>")), []).append(r["case"])
    lines = []
    for (name, text), where in groups.items():
        listed = ", ".join(where[:shown_cases]) + (f", … ({len(where)} cases)" if len(where) > shown_cases else "")
        lines.append(f"- {name}: {text} — {listed}")
    return lines


def full_markdown(report: dict[str, Any]) -> str:
    """The whole report: environment, copy bandwidth, the three tables, launch overhead, notes."""
    env = report.get("env", {})
    copy = report.get("copy_gbps")
    parts = ["## Environment", "", *(f"- {k}: {v}" for k, v in env.items()), "",
             f"Copy bandwidth (device to device, bytes read + written): "
             f"{fmt_num(copy)} GB/s (measurements: {', '.join(fmt_num(c) for c in report.get('copy_runs', []))})", "",
             "## Time and bandwidth (time: lowest of the rounds' medians; ratio: best peer time / our time)", "",
             perf_table(report["results"], copy), "",
             "## Every implementation, % of copy bandwidth", "", peer_rate_table(report["results"], copy), "",
             "## Correctness (relative norm error vs float64), bitwise, batch invariance, resources", "",
             quality_table(report["results"]), ""]
    if report.get("launch"):
        parts += ["## Launch overhead (10,000 tiny adds through the public call path)", "",
                  launch_table(report["launch"]), ""]
    notes = notes_lines(report["results"]) + list(report.get("notes", []))
    if notes:
        parts += ["## Notes", "", *notes, ""]
    return "\n".join(parts)
