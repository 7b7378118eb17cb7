"""Numbers and markdown tables of the GEMM benchmark. Pure Python (no torch).

A case's result (what `bench_gemm.py` writes)::

    {"case": "gemm_bf16_4096x4096x4096", "dtype": "bfloat16", "shape": [4096, 4096, 4096],
     "flops": 137438953472, "bound": 8e-3, "artifact": "gemm_bf16_n4096_k4096",
     "impls": {"ours": IMPL, "torch": IMPL, "triton": IMPL, "tilelang": IMPL}}

    IMPL = {"status": "ok" | "missing" | "error" | "skipped", "reason": "...", "call": "...",
            "times_us": [t1, t2], "error": 1.2e-3, "ok": bool, "unwritten": 0}

and per artifact of ours (`resources`): {"path": "mma.sync" | "SIMT" | ..., "regs", "local",
"local_insts", "shared" (static), "dynamic_shared", "opcodes": {"HMMA": n, ...}, "compile_s"}.
"""

from __future__ import annotations

from typing import Any, Sequence

from benchmarks.gemm_cases import tflops
from benchmarks.report import fmt_err, fmt_num, markdown_table, spread

IMPLS = ("ours", "torch", "triton", "tilelang")
LABELS = {"ours": "tilemlir", "torch": "torch.matmul (cuBLAS)", "triton": "Triton", "tilelang": "TileLang"}
PEERS = IMPLS[1:]
TENSOR_CORE_PATHS = ("mma.sync", "wgmma")


def impl_time(impl: dict[str, Any] | None) -> float | None:
    """The lower of the rounds' medians; None when the implementation did not run or was wrong."""
    if not passed(impl) or not impl.get("times_us"):
        return None
    return min(impl["times_us"])


def passed(impl: dict[str, Any] | None) -> bool:
    return bool(impl) and impl.get("status") == "ok" and bool(impl.get("ok"))


def metrics(result: dict[str, Any]) -> dict[str, Any]:
    """Per implementation: TFLOP/s, spread; ours as a fraction of cuBLAS and of the best peer."""
    per_impl = {}
    for name in IMPLS:
        t = impl_time(result["impls"].get(name))
        if t is not None:
            per_impl[name] = {"time_us": t, "tflops": tflops(result["flops"], t),
                              "spread": spread(result["impls"][name]["times_us"])}
    peers = [(per_impl[p]["tflops"], p) for p in PEERS if p in per_impl]
    best = max(peers) if peers else None
    ours = per_impl.get("ours", {}).get("tflops")
    cublas = per_impl.get("torch", {}).get("tflops")
    return {"impls": per_impl, "best_peer": best[1] if best else None,
            "of_cublas": ours / cublas if ours and cublas else None,
            "of_best_peer": ours / best[0] if ours and best else None}


def rate_cell(impl: dict[str, Any] | None, flops: int) -> str:
    """TFLOP/s (spread), or why there is none."""
    if not impl:
        return "—"
    if impl.get("status") != "ok":
        return impl.get("status") or "—"
    if not impl.get("ok"):
        return "WRONG"
    t = impl_time(impl)
    if t is None:
        return "untimed"
    return f"{tflops(flops, t):.1f} (±{100 * spread(impl['times_us']):.1f}%)"


def perf_table(results: Sequence[dict[str, Any]], paths: dict[str, str] | None = None) -> str:
    headers = ["case", "ours path", *(f"{LABELS[p]} TFLOP/s" for p in IMPLS), "ours / cuBLAS", "ours / best peer",
               "best peer"]
    rows = []
    for r in results:
        m = metrics(r)
        rows.append([r["case"], (paths or {}).get(r.get("artifact", ""), "—"),
                     *(rate_cell(r["impls"].get(p), r["flops"]) for p in IMPLS),
                     fmt_num(None if m["of_cublas"] is None else 100 * m["of_cublas"], 1, "%"),
                     fmt_num(None if m["of_best_peer"] is None else 100 * m["of_best_peer"], 1, "%"),
                     LABELS.get(m["best_peer"], "—")])
    return markdown_table(headers, rows)


def error_cell(impl: dict[str, Any] | None) -> str:
    if not impl or impl.get("status") != "ok" or "error" not in impl:
        return "—"
    cell = ("ok " if impl.get("ok") else "FAIL ") + fmt_err(impl["error"])
    if impl.get("unwritten"):
        cell += f" ({impl['unwritten']} NaN)"
    return cell


def correctness_table(results: Sequence[dict[str, Any]]) -> str:
    headers = ["case", "bound", *(f"{LABELS[p]} error" for p in IMPLS)]
    rows = [[r["case"], fmt_err(r["bound"]), *(error_cell(r["impls"].get(p)) for p in IMPLS)] for r in results]
    return markdown_table(headers, rows)


def resources_row(artifact: str, res: dict[str, Any]) -> list[str]:
    if res.get("error"):
        return [artifact, res.get("path", "—"), res["error"], *["—"] * 9]
    spills = "0" if not res.get("local") and not res.get("local_insts") else \
        f"{res.get('stack', 0)} B stack, {res.get('local', 0)} B local, {res.get('local_insts', 0)} LDL/STL"
    ops = res.get("opcodes") or {}
    return [artifact, res.get("path", "—"), str(res.get("regs", "—")), spills, str(res.get("shared", "—")),
            str(res.get("dynamic_shared", "—")), *(str(ops.get(op, "—")) for op in ("HMMA", "LDSM", "LDGSTS")),
            f"{ops.get('FFMA', '—')} / {ops.get('FMUL', '—')}",
            fmt_num(res.get("compile_s"), 1), extra_args_cell(res.get("extra_args"))]


def extra_args_cell(extra: dict[str, Any] | None) -> str:
    """The factory arguments the artifact was built with beyond N, K and the dtype ('defaults' when none)."""
    if extra is None:
        return "—"
    return ", ".join(f"{k}={v}" for k, v in sorted(extra.items())) or "defaults"


def resources_table(resources: dict[str, dict[str, Any]]) -> str:
    headers = ["our artifact", "path", "regs", "spills", "static smem B", "dynamic smem B", "HMMA", "LDSM", "LDGSTS",
               "FFMA / FMUL", "compile s (here)", "factory args"]
    return markdown_table(headers, [resources_row(a, r) for a, r in resources.items()])


def path_notes(resources: dict[str, dict[str, Any]]) -> list[str]:
    """One line when some of our kernels are not on the tensor cores: what that means for the numbers."""
    simt = [a for a, r in resources.items() if r.get("path") not in TENSOR_CORE_PATHS]
    if not simt:
        return []
    return [f"- ours: {len(simt)} of {len(resources)} artifacts compiled to the SIMT path (no HMMA in the SASS: "
            f"T.gemm ran on CUDA cores, lower-gemm-simt): {', '.join(simt)}. Their TFLOP/s measure the CUDA-core "
            "GEMM, not the tensor-core one; rebuild the artifacts once select-mma / lower-gemm-mma have landed."]


def notes_lines(results: Sequence[dict[str, Any]], shown: int = 6) -> list[str]:
    """Why implementations have no number: one line per distinct reason, with the cases it applies to."""
    groups: dict[tuple[str, str], list[str]] = {}
    for r in results:
        for name in IMPLS:
            impl = r["impls"].get(name)
            if impl and impl.get("status") != "ok" and impl.get("reason"):
                text = f"{impl['status']}: {impl['reason']}".replace(r["case"], "<case>")
                groups.setdefault((name, text), []).append(r["case"])
    lines = []
    for (name, text), where in groups.items():
        listed = ", ".join(where[:shown]) + (f", … ({len(where)} cases)" if len(where) > shown else "")
        lines.append(f"- {LABELS[name]}: {text} — {listed}")
    return lines


def below_half_of_cublas(results: Sequence[dict[str, Any]]) -> list[str]:
    """Cases where ours ran correctly below 50% of cuBLAS (issue 16's target asks to explain each)."""
    found = []
    for r in results:
        share = metrics(r)["of_cublas"]
        if share is not None and share < 0.5:
            found.append(f"{r['case']} ({100 * share:.1f}%)")
    return found


def full_markdown(report: dict[str, Any]) -> str:
    env, results = report.get("env", {}), report["results"]
    resources = report.get("resources", {})
    paths = {a: r.get("path", "—") for a, r in resources.items()}
    parts = ["## Environment", "", *(f"- {k}: {v}" for k, v in env.items()), "",
             "## TFLOP/s = 2MNK / time (time: the lower of the rounds' do_bench medians; ± the rounds' spread)", "",
             perf_table(results, paths), "",
             "## Correctness: ||C - ref|| / ||ref||, ref = float32 torch.matmul with TF32 off", "",
             correctness_table(results), ""]
    if resources:
        parts += ["## Our kernels (cuobjdump of the carried cubins)", "", resources_table(resources), ""]
    below = below_half_of_cublas(results)
    notes = path_notes(resources) + notes_lines(results) + [f"- {n}" for n in report.get("notes", [])]
    if below:
        notes.append(f"- below 50% of cuBLAS (to explain in RESULTS.md): {', '.join(below)}")
    if notes:
        parts += ["## Notes", "", *notes, ""]
    return "\n".join(parts)
