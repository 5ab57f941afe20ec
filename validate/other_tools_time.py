"""Other tools' TIME and serving figures beside ours: step-time splits, roofline layer times,
DeepSpeed's model-state estimators and vLLM's KV-cache blocks.

    python -m validate.other_tools_time            # runs the tools it finds, prints the tables
    python -m validate.other_tools_time --write    # and records them in validate/other_tools_time.json

validate/other_tools.py compares parameters, FLOPs and memory; this module the figures users
quote for time and serving:
- Calculon's step split (forward, backward, recomputation, exposed TP / PP / DP communication,
  bubble, optimizer) on Korthikanti's GPT-3 175B layout and on Llama-2-70B in Megatron's
  tp 8, pp 4, dp 2 layout (GQA; Calculon has no GQA or gated FFN, so it is given the SwiGLU's
  weights as one 1.5 d_ff FFN and full-width K and V);
- llm-analysis's step time, which is its FLOPs over tp x pp GPUs at flops_efficiency x peak
  (an MFU-based time: no bubble, communication or memory term);
- LLM-Viewer's roofline time per layer, prefill and decode (max of OPs / peak and bytes /
  bandwidth, one layer times the layer count);
- DeepSpeed's estimate_zero2/3_model_states_mem_needs (cut out of a DeepSpeed checkout);
- vLLM's KV-cache blocks for a gpu_memory_utilization (vLLM does not run here: its formula,
  restated from vllm/v1 at the commit cited, on the budget a published log prints).
The tools live outside the project (validate/other_tools_peers.py says where and how);
tests/test_other_tools_time.py checks our side and restates each tool's formula on the record.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Any

from validate import other_tools as ot

RECORD = ot.ROOT / "validate" / "other_tools_time.json"
TOOLS = ot.TOOLS

#: Calculon's execution for Llama-2-70B in the Megatron layout of other_tools.py's Llama-2-70B case
#: (tp 8 with SP, pp 4, dp 2, selective recomputation, the distributed optimizer, 16 micro-batches
#: of one 4,096-token sequence), written after its validation/seqsel/tab5 files.
CALCULON_LLAMA2_70B = {
    "num_procs": 64, "tensor_par": 8, "pipeline_par": 4, "data_par": 2, "tensor_par_net": 0,
    "pipeline_par_net": 1, "data_par_net": 1, "batch_size": 32, "microbatch_size": 1, "datatype": "float16",
    "fused_activation": True, "attention_type": "multihead", "activation_recompute": "attn_only",
    "pipeline_interleaving": 1, "optimizer_sharding": True, "tensor_par_comm_type": "rs_ag",
    "tensor_par_overlap": "none", "seq_par_ag_redo": True, "data_par_overlap": False, "weight_offload": False,
    "activations_offload": False, "optimizer_offload": False, "training": True}

CASES: dict[str, dict[str, Any]] = {
    "gpt3-175b Korthikanti step split": {
        "says": "GPT-3 175B as Korthikanti et al. 2022 Table 5 ran it (tp 8, pp 8 interleaved by 3, SP + selective "
                "recomputation, 64 sequences of 2,048, 64 A100s): the step's seconds by part",
        "kind": "split", "other_case": "gpt3-175b Korthikanti tp8 pp8 v3 sp selective",
        "measured": {"seconds": ot.MEASURED["gpt3 present s"]},
        "calculon": {"application": {"hidden": 12288, "feedforward": 49152, "seq_size": 2048, "attn_heads": 96,
                                     "attn_size": 128, "num_blocks": 96},
                     "execution": "validation/seqsel/tab5/gpt3-175B_seqsel.json", "system": "systems/a100_80g.json"},
    },
    "llama2-70b tp8 pp4 dp2 sp selective step split": {
        "says": "Llama-2-70B (GQA 8 KV heads, SwiGLU 28,672), Megatron-LM tp 8 with SP, pp 4, dp 2, selective "
                "recomputation, 16 micro-batches of one 4,096-token sequence, distributed optimizer, 64 A100s: "
                "the step's seconds by part",
        "kind": "split", "other_case": "llama2-70b train tp8 pp4 dp2 sp selective",
        "measured": {},
        "calculon": {"application": {"hidden": 8192, "feedforward": 3 * 28672 // 2, "seq_size": 4096,
                                     "attn_heads": 64, "attn_size": 128, "num_blocks": 80},
                     "execution": CALCULON_LLAMA2_70B, "system": "systems/a100_80g.json"},
    },
}

SPLIT_ROWS = ("seconds", "compute", "recompute", "tp_comm", "pp_comm", "dp_comm", "bubble", "optimizer")


# ---------------------------------------------------------------------------------------------
# ours


def ours_split(name: str) -> dict[str, float]:
    """Our kernel model's step split for a case of other_tools.py (the layout it builds there)."""
    from costmodel.hardware import load_hardware
    from costmodel.layout import ParallelEstimate
    from costmodel.layout.timing import step_time

    cfg, workload, layout = ot.case_layout(CASES[name]["other_case"])
    step = step_time(ParallelEstimate(cfg, workload, layout), load_hardware(ot.HARDWARE),
                     time_model="kernels").step()
    exposed = step["exposed_communication_seconds"]
    return {"seconds": step["seconds"], "compute": step["compute_seconds"], "recompute": None,
            "tp_comm": exposed["tp"], "pp_comm": exposed["pp"], "dp_comm": exposed["dp"],
            "bubble": step["bubble_seconds"], "optimizer": step["optimizer_seconds"],
            "mfu": step["mfu"], "hfu": step["hfu"], "model_flops": step["model_flops"]}


# ---------------------------------------------------------------------------------------------
# the tools


def calculon_split(spec: dict[str, Any], python: str, checkout: Path) -> dict[str, Any]:
    """Calculon's get_total_time parts (llm.py: fw + bw + optim + offload + recompute + recomm
    exposed + bubble + tp, pp, dp exposed)."""
    from validate import other_tools_peers as peers

    execution = spec["execution"]
    if isinstance(execution, str):
        path = checkout / execution
        if not path.exists():
            raise peers.Missing(f"no Calculon checkout at {checkout}")
        execution = json.loads(path.read_text())
    raw = peers.calculon({"calculon": {"application": spec["application"], "execution": execution,
                                       "system": str(checkout / spec["system"])}}, python, checkout)["raw"]
    return {"seconds": raw["total_time"], "compute": raw["fw_time"] + raw["bw_time"],
            "recompute": raw["recompute_time"], "tp_comm": raw["tp_comm_exposed_time"] + raw["recomm_exposed_time"],
            "pp_comm": raw["pp_comm_exposed_time"], "dp_comm": raw["dp_comm_exposed_time"],
            "bubble": raw["bubble_time"], "optimizer": raw["optim_step_time"], "raw": raw}


def llm_analysis_split(name: str, python: str, efficiency: float | None = None) -> dict[str, Any]:
    """llm-analysis's train() on the case of other_tools.py (its bundled or written config), at
    its default flops_efficiency (1) or the one given; its time has one part."""
    from validate import other_tools_peers as peers

    spec = dict(ot.CASES[CASES[name]["other_case"]]["llm_analysis"])
    if "model_config" in spec:
        spec["model_config"] = ot.llm_analysis_model(spec["model_config"])
    if efficiency is not None:
        spec["flops_efficiency"] = efficiency
    raw = peers.llm_analysis({"llm_analysis": spec}, python)["raw"]
    return {"seconds": raw["latency_per_iter"], "compute": raw["latency_per_iter"], "recompute": None,
            "tp_comm": None, "pp_comm": None, "dp_comm": None, "bubble": None, "optimizer": None, "raw": raw}


def run_split(name: str, where: argparse.Namespace, skipped: set[str]) -> dict[str, dict[str, Any]]:
    from validate import other_tools_peers as peers

    case = CASES[name]
    runners = {"Calculon": lambda: calculon_split(case["calculon"], where.tools_python, Path(where.calculon)),
               "llm-analysis": lambda: llm_analysis_split(name, where.tools_python),
               "llm-analysis at our MFU": lambda: llm_analysis_split(name, where.tools_python,
                                                                     round(ours_split(name)["hfu"], 4))}
    out = {}
    for tool, runner in runners.items():
        if tool.split(" at ")[0] in skipped:
            continue
        try:
            out[tool] = runner()
        except peers.Missing as missing:
            print(f"skipped {tool}: not installed ({missing})")
            skipped.add(tool)
    return out


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.4g} s"


def split_table(name: str, our: dict[str, Any], tools: dict[str, dict[str, Any]]) -> list[str]:
    case = CASES[name]
    names = ["ours", *tools]
    lines = [f"### {name}", case["says"], "", "| part | measured | " + " | ".join(names) + " |",
             "|---" * (len(names) + 2) + "|"]
    for part in SPLIT_ROWS:
        columns = {"ours": our.get(part), **{tool: figures.get(part) for tool, figures in tools.items()}}
        if all(v is None for v in columns.values()):
            continue
        ref = case["measured"].get(part)
        lines.append(f"| {part} | {_fmt(ref[0]) if ref else '-'} | " + " | ".join(_fmt(columns[n]) for n in names)
                     + " |")
    for part, (value, source) in case["measured"].items():
        lines.append(f"- measured {part}: {value:,} ({source}); " + ", ".join(
            f"{tool} {figures[part] / value:.2f}x" for tool, figures in {"ours": our, **tools}.items()))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools-python", default=str(TOOLS / "venv" / "bin" / "python"),
                        help="the python of the venv holding llm-analysis (and pandas for Calculon)")
    parser.add_argument("--llm-viewer", default=str(TOOLS / "LLM-Viewer"), help="an LLM-Viewer checkout")
    parser.add_argument("--calculon", default=str(TOOLS / "calculon"), help="a Calculon checkout")
    parser.add_argument("--deepspeed", default=str(TOOLS / "DeepSpeed"), help="a DeepSpeed checkout")
    parser.add_argument("--write", action="store_true", help=f"record the figures in {RECORD.name}")
    where = parser.parse_args(argv)
    skipped: set[str] = set()
    record: dict[str, Any] = {"cases": {}}
    for name in CASES:
        our = ours_split(name)
        tools = run_split(name, where, skipped)
        print("\n".join(split_table(name, our, tools)) + "\n")
        record["cases"][name] = {"ours": our, "tools": tools}
    if where.write:
        RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"wrote {RECORD.relative_to(ot.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
