"""Other tools' figures beside ours on the same inputs, and which one the measurement supports.

    python -m validate.other_tools            # runs the tools it finds, prints the table
    python -m validate.other_tools --write    # and records their figures in validate/other_tools.json

The tools (llm-analysis 0.2.2, LLM-Viewer, Calculon, Megatron-LM's theoretical_memory_usage.py
and num_floating_point_operations) are never dependencies of the project: validate/
other_tools_peers.py says how each is installed and run; a tool not found is skipped with one
line. The cases: Llama-2-7B training on one GPU (the size whose parameters, FLOPs and saved bytes
the tests measure on Hugging Face's class), Llama-2-7B and -70B in Megatron layouts, Llama-2-7B
prefill and decode, Llama-2-7B decoding as gpt-fast measured it, GPT-3 175B in Korthikanti et al.'s
Table 5 layout (validate/other_tools_cases.py: each case in every tool's terms). "measured" is a figure a
test of the project measures (cited beside it) or a published measurement; ours comes from the
costmodel API, the same functions the CLI calls. tests/test_other_tools.py (and _gqa_moe.py) check our side and
explain each of the tools' differences from the recorded figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from reports.published_runs import korthikanti_runs
from validate.other_tools_cases import CASES, HARDWARE, MEASURED, llama_hf_config, llm_analysis_model
from validate.other_tools_notes import NOTES

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "validate" / "other_tools.json"
TOOLS = ROOT / ".other_tools"  # where the tools are looked for by default (ignored by git)
TRAIN_ROWS = ("params", "flops_sequence", "weights", "gradients", "optimizer", "model_states", "activations",
              "seconds")
DECODE_ROWS = ("tokens_per_second",)
INFER_ROWS = ("params", "prefill_flops", "decode_flops", "weights", "kv_cache", "prefill_seconds", "decode_seconds")


def measured(case: dict[str, Any]) -> dict[str, tuple[float, str]]:
    out = {}
    for quantity, key in case["measured"].items():
        key, factor = (key, 1) if isinstance(key, str) else key
        value, source = MEASURED[key]
        out[quantity] = (value * factor, source if factor == 1 else f"{factor} x {source}")
    return out


def _korthikanti() -> tuple[Any, Any, Any]:
    """Table 5's 175B row with SP + selective recomputation, as reports/published_runs.py builds it."""
    return next((cfg, workload, layout) for row, key, cfg, workload, layout in korthikanti_runs()
                if row[0] == "175B" and key == "present")


def case_layout(name: str) -> tuple[Any, Any, Any]:
    """The config, workload and layout of a Megatron, layout or Korthikanti case (ours() and
    validate/other_tools_time.py's step splits read it)."""
    from costmodel.config import Workload
    from costmodel.layout import Layout
    from costmodel.presets import load_preset

    case = CASES[name]
    if case["kind"] == "megatron":
        a = case["megatron"]["args"]
        cfg = load_preset(case["preset"])
        workload = Workload(seq_len=a["seq_length"], batch=1, dtype="bf16", impl="megatron", attention="flash",
                            recompute=a["recompute_granularity"] or "none")
        layout = Layout(tp=a["tensor_model_parallel_size"], pp=a["pipeline_model_parallel_size"],
                        dp=a["data_parallel_size"], cp=a["context_parallel_size"], ep=a["expert_model_parallel_size"],
                        sp=a["sequence_parallel"], zero=1, framework="megatron",
                        microbatches=case["megatron"]["num_microbatches"])
    elif case["kind"] == "layout":
        cfg = load_preset(case["preset"])
        workload = Workload(seq_len=case["seq_len"], batch=1, dtype="bf16", impl=case["impl"],
                            attention=case["attention"])
        layout = Layout(**case["layout"])
    else:
        cfg, workload, layout = _korthikanti()
    return cfg, workload, layout


def ours(name: str) -> dict[str, Any]:
    """Our figures for a case, from the costmodel API (the CLI's functions)."""
    import costmodel
    from costmodel.config import Workload
    from costmodel.hardware import load_hardware
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.timing import step_time
    from costmodel.presets import load_preset

    case = CASES[name]
    if case["kind"] == "train":
        estimate = costmodel.estimate(case["preset"], seq_len=case["seq_len"], batch=case["batch"], dtype="bf16",
                                      attention=case["attention"]).to_dict()
        step = costmodel.simulate(case["preset"], HARDWARE, train=True, seq_len=case["seq_len"], batch=case["batch"],
                                  attention=case["attention"]).to_dict()["step"]
        memory = estimate["memory"]
        single = ParallelEstimate(load_preset(case["preset"]), Workload(seq_len=case["seq_len"], batch=1, dtype="bf16",
                                                                      attention=case["attention"]), Layout())
        return {"params": estimate["params"]["total"], "flops_sequence": single.numbers["model_flops"] * case["batch"],
                **{k: memory[k] for k in ("weights", "gradients", "optimizer", "activations")},
                "model_states": memory["weights"] + memory["gradients"] + memory["optimizer"],
                "seconds": step["seconds"]}
    if case["kind"] == "infer":
        run = costmodel.simulate(case["preset"], HARDWARE, prompt=case["prompt"], gen=2, batch=case["batch"],
                                 attention="sdpa").to_dict()
        estimate = costmodel.estimate(case["preset"], seq_len=case["prompt"], batch=case["batch"], dtype="bf16")
        return {"params": estimate.to_dict()["params"]["total"], "prefill_flops": run["prefill"]["flops"],
                "decode_flops": run["decode"]["first_token"]["flops"], "weights": run["memory"]["weights"],
                "kv_cache": estimate.to_dict()["memory"]["kv_cache"], "prefill_seconds": run["prefill"]["seconds"],
                "decode_seconds": run["decode"]["first_token"]["seconds"]}
    if case["kind"] == "decode":
        from reports.published_decode import decode_run
        from reports.published_runs import other_runs_data

        data = other_runs_data()
        run = next(r for r in data["runs"] if r["id"] == case["run"])
        return {"tokens_per_second": decode_run(run, data["sources"]["gpt-fast"], "kernels")}
    cfg, workload, layout = case_layout(name)
    parallel = ParallelEstimate(cfg, workload, layout)
    stage = parallel.per_stage[0]
    kernels = step_time(parallel, load_hardware(HARDWARE), time_model="kernels").step()
    single = ParallelEstimate(cfg, Workload(seq_len=workload.seq_len, batch=1, dtype=workload.dtype,
                                            impl=workload.impl, attention=workload.attention), Layout())
    return {"params": costmodel.estimate(cfg, seq_len=8).to_dict()["params"]["total"],
            "flops_sequence": single.numbers["model_flops"],
            **{k: stage[k] for k in ("weights", "gradients", "optimizer", "activations")},
            "model_states": stage["weights"] + stage["gradients"] + stage["optimizer"],
            "seconds": kernels["seconds"]}


def run_tools(name: str, where: argparse.Namespace, skipped: set[str]) -> dict[str, dict[str, Any]]:
    """{tool: figures} for the tools found; a missing tool is named once in `skipped`."""
    from validate import other_tools_peers as peers

    case = dict(CASES[name])
    if "model_config" in case.get("llm_analysis", {}):
        spec = dict(case["llm_analysis"])
        case["llm_analysis"] = {**spec, "model_config": llm_analysis_model(spec["model_config"])}
    if "llm_viewer" in case:
        case["llm_viewer"] = {**case["llm_viewer"], "hf_config": llama_hf_config(case["llm_viewer"]["preset"])}
    if "calculon" in case:
        spec = case["calculon"]
        checkout = Path(where.calculon)
        execution = checkout / spec["execution"]
        case["calculon"] = {"application": spec["application"], "system": str(checkout / spec["system"]),
                            "execution": json.loads(execution.read_text()) if execution.exists() else {}}
    runners = {"llm-analysis": lambda: peers.llm_analysis(case, where.tools_python),
               "LLM-Viewer": lambda: peers.llm_viewer(case, where.tools_python, Path(where.llm_viewer)),
               "Calculon": lambda: peers.calculon(case, where.tools_python, Path(where.calculon)),
               "Megatron-LM": lambda: peers.megatron(case, Path(where.megatron))}
    out = {}
    for tool, runner in runners.items():
        if tool in skipped:
            continue
        try:
            figures = runner()
        except peers.Missing as missing:
            print(f"skipped {tool}: not installed ({missing})")
            skipped.add(tool)
            continue
        if figures:
            out[tool] = figures
    return out


def _fmt(value: Any, quantity: str) -> str:
    if value is None:
        return "-"
    if "seconds" in quantity:
        return f"{value:.4g} s"
    if quantity == "tokens_per_second":
        return f"{value:.1f} tok/s"
    if "flops" in quantity:
        return f"{value / 1e12:,.2f} T" if value >= 1e12 else f"{value / 1e9:,.2f} G"
    if quantity == "params":
        return f"{value:,.0f}"
    return f"{value / 2**30:,.4f} GiB"


def verdict(quantity: str, value: float, columns: dict[str, float | None],
            reference: tuple[float, str] | None) -> str:
    """Which columns equal the measurement (exactly for counts and bytes, within 10% for times)."""
    if reference is None:
        return "no measurement"
    target, _ = reference
    if "second" in quantity:
        return ", ".join(f"{tool} {v / target:.2f}x" for tool, v in columns.items() if v is not None)
    equal = [tool for tool, v in columns.items() if v is not None and v == target]
    return "= " + ", ".join(equal) if equal else "none equal"


def table(name: str, our: dict[str, Any], tools: dict[str, dict[str, Any]]) -> list[str]:
    case = CASES[name]
    rows = {"infer": INFER_ROWS, "decode": DECODE_ROWS}.get(case["kind"], TRAIN_ROWS)
    refs = measured(case)
    names = ["ours", *tools]
    lines = [f"### {name}", case["says"], "",
             "| quantity | measured | " + " | ".join(names) + " | equals the measurement |",
             "|---" * (len(names) + 3) + "|"]
    for quantity in rows:
        columns = {"ours": our.get(quantity), **{tool: figures.get(quantity) for tool, figures in tools.items()}}
        if all(v is None for v in columns.values()):
            continue
        ref = refs.get(quantity)
        cells = [_fmt(columns[n], quantity) for n in names]
        lines.append(f"| {quantity} | {_fmt(ref[0], quantity) if ref else '-'} | " + " | ".join(cells)
                     + f" | {verdict(quantity, our.get(quantity), columns, ref)} |")
    for quantity, (value, source) in refs.items():
        lines.append(f"- measured {quantity}: {value:,} ({source})")
    return lines + [f"- {note}" for note in NOTES[name]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools-python", default=str(TOOLS / "venv" / "bin" / "python"),
                        help="the python of the venv holding llm-analysis (and pandas for Calculon)")
    parser.add_argument("--llm-viewer", default=str(TOOLS / "LLM-Viewer"), help="an LLM-Viewer checkout")
    parser.add_argument("--calculon", default=str(TOOLS / "calculon"), help="a Calculon checkout")
    parser.add_argument("--megatron", default=str(TOOLS / "Megatron-LM"), help="a Megatron-LM checkout")
    parser.add_argument("--case", choices=list(CASES), action="append", help="one case (default: all)")
    parser.add_argument("--write", action="store_true", help=f"record the tools' figures in {RECORD.name}")
    where = parser.parse_args(argv)
    from validate import other_tools_peers as peers

    skipped: set[str] = set()
    record: dict[str, Any] = {"versions": peers.versions(where.tools_python, Path(where.llm_viewer),
                                                         Path(where.calculon), Path(where.megatron)),
                              "cases": {}}
    for name in where.case or list(CASES):
        our = ours(name)
        tools = run_tools(name, where, skipped)
        print("\n".join(table(name, our, tools)) + "\n")
        record["cases"][name] = {"ours": our, "tools": tools}
    print("versions: " + ", ".join(f"{tool} {v}" for tool, v in record["versions"].items() if tool not in skipped))
    if where.write:
        RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"wrote {RECORD.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
