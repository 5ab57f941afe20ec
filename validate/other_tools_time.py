"""Other tools' TIME and serving figures beside ours: step-time splits, roofline layer times,
DeepSpeed's model-state estimators and vLLM's KV-cache blocks.

    python -m validate.other_tools_time            # runs the tools it finds, prints the tables
    python -m validate.other_tools_time --write    # and records them in validate/other_tools_time.json
    python -m validate.other_tools_time --ours-only  # rewrites our side of the record only

`--ours-only` runs no tool: it recomputes every figure of ours in validate/other_tools_time.json
(each case's and Table 5 row's "ours", the layer cases', DeepSpeed cases' and vLLM's, and the
block counts' "ours") with the functions `--write` uses, and leaves everything else as recorded:
the tools' figures, the published steps, the logs and the versions (with_our_side). It is the
rewrite a change to the cost model owes the record when the tools have not moved; "llm-analysis
at our HFU" is a tool's run, so it keeps the HFU it was run at until a `--write` with the tools.

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
from validate import other_tools_cases as cases
from validate import other_tools_peers as peers

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
        "measured": {"seconds": cases.MEASURED["gpt3 present s"]},
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

#: LLM-Viewer's layers (one decoder layer's, times the layer count; lm_head once) grouped as our
#: prefill blocks are (simulate's prefill_blocks: each path summed over the layers).
LAYER_GROUPS = {
    "qkv": (("q_proj", "k_proj", "v_proj"), ("decoder.layer.self_attention.qkv",)),
    "rope": ((), ("decoder.layer.self_attention.rope", "decoder.rope_tables")),
    "attention": (("fused_attention", "qk_matmul", "softmax", "sv_matmul"),
                  ("decoder.layer.self_attention.scores", "decoder.layer.self_attention.softmax",
                   "decoder.layer.self_attention.weighted_sum")),
    "out": (("out_proj",), ("decoder.layer.self_attention.out",)),
    "mlp": (("gate_proj", "up_proj", "down_proj", "mlp_act"), ("decoder.layer.ffn.mlp",)),
    "norms": (("attn_norm", "mlp_norm"), ("decoder.layer.self_attention.norm", "decoder.layer.ffn.norm",
                                          "decoder.final_norm")),
    "residual": (("attn_add", "mlp_add"), ("decoder.layer.self_attention.residual", "decoder.layer.ffn.residual")),
    "embedding": ((), ("embedding.tokens",)),
    "lm_head": (("lm_head",), ("head.lm_head",)),
}

LAYER_CASES: dict[str, dict[str, Any]] = {
    "llama2-7b prefill 2048 + decode by layer": {
        "says": "Llama-2-7B bf16, batch 1: a 2,048-token prefill and one decode step at that context on an A100 "
                "80GB, the time of each layer (LLM-Viewer: roofline at 100% of 312 TFLOP/s and 2,039 GB/s, flash "
                "attention; ours: the kernel model, sdpa, Hugging Face's generate)",
        "other_case": "llama2-7b prefill 2048 + decode", "preset": "llama2-7b", "prompt": 2048, "batch": 1,
        # Vidur's measured A100 80GB kernel times of one Llama-2-7B layer at 2,048 tokens, tp 1
        # (validate/vidur_profiles.json): QKV, output, MLP (fused gate/up, down, SiluAndMul)
        "measured": {"model": "meta-llama/Llama-2-7b-hf", "num_tokens": 2048, "tp": 1,
                     "groups": {"qkv": ("attn_pre_proj",), "out": ("attn_post_proj",),
                                "mlp": ("mlp_up_proj", "mlp_down_proj", "mlp_act")}},
    },
    "llama3-8b batch 64 at 4096 by layer": {
        "says": "Llama-3-8B bf16, batch 64: a 4,096-token prefill of each sequence and one decode step at that "
                "context on an A100 80GB, the time of each layer",
        "other_case": "llama3-8b decode batch 64 at 4096", "preset": "llama3-8b", "prompt": 4096, "batch": 64,
    },
}

#: DeepSpeed's model-state estimators beside ours: Llama-3-8B over 8 GPUs of one node, no offload.
DEEPSPEED_CASES: dict[str, dict[str, Any]] = {
    "llama3-8b ZeRO-2 dp8": {"preset": "llama3-8b", "zero": 2, "dp": 8},
    "llama3-8b ZeRO-3 dp8": {"preset": "llama3-8b", "zero": 3, "dp": 8},
}
DEEPSPEED_FILES = {2: ("deepspeed/runtime/zero/stage_1_and_2.py", "estimate_zero2_model_states_mem_needs"),
                   3: ("deepspeed/runtime/zero/stage3.py", "estimate_zero3_model_states_mem_needs")}

#: vLLM's memory profile as its log printed it (GiB = 2^30 bytes, two decimals): PR #10511 ("[core]
#: overhaul memory profiling and fix backward compatibility", youkaichao's comment of 2024-12-14,
#: `vllm serve meta-llama/Meta-Llama-3-8B` on one H100-80G, defaults: gpu_memory_utilization 0.90,
#: max_model_len 8,192, so max_num_batched_tokens 8,192 and block_size 16).
VLLM_LOG = {
    "source": "vllm-project/vllm PR #10511, comment of 2024-12-14 (worker.py:243 'Memory profiling results')",
    "model": "llama3-8b", "hardware": "h100-sxm", "tp": 1, "max_batched_tokens": 8192, "block_size": 16,
    "gib": {"total_gpu_memory": 79.22, "gpu_memory_utilization": 0.90, "instance_can_use": 71.29,
            "model_weights": 14.96, "non_torch_memory": 1.79, "activation_peak": 1.26,
            "available_kv_cache_memory": 53.29},
}

#: Block counts vLLM logged, with no terms: PR #2031 ("Fix peak memory profiling", WoosukKwon,
#: 2023-12-12; vLLM 0.2.x: the budget is total x 0.9 less the peak the device reports after the
#: profile run, weights, context, activations and NCCL's buffers together), "This PR" rows.
VLLM_BLOCK_LOGS = [
    {"source": "vllm-project/vllm PR #2031, comment of 2023-12-12 ('Llama2-7B with TP=1 and 1xA100-80GB')",
     "model": "llama2-7b", "hardware": "a100-80gb", "tp": 1, "max_batched_tokens": 4096, "blocks": 7351},
    {"source": "vllm-project/vllm PR #2031, comment of 2023-12-12 ('Llama2-70B with TP=4 and 4xA100-80GB')",
     "model": "llama2-70b", "hardware": "a100-80gb", "tp": 4, "max_batched_tokens": 4096, "blocks": 20865},
]

SPLIT_ROWS = ("seconds", "compute", "recompute", "tp_comm", "pp_comm", "dp_comm", "bubble", "optimizer", "other")


# ---------------------------------------------------------------------------------------------
# ours


def ours_split(name: str) -> dict[str, float]:
    """Our kernel model's step split for a case of other_tools.py (the layout it builds there)."""
    return split_of(*ot.case_layout(CASES[name]["other_case"]))


def split_of(cfg: Any, workload: Any, layout: Any) -> dict[str, float]:
    """Our kernel model's step split (the parts step() adds) on the A100 80GB."""
    from costmodel.hardware import load_hardware
    from costmodel.layout import ParallelEstimate
    from costmodel.layout.timing import step_time

    step = step_time(ParallelEstimate(cfg, workload, layout), load_hardware(cases.HARDWARE),
                     time_model="kernels").step()
    exposed = step["exposed_communication_seconds"]
    return {"seconds": step["seconds"], "compute": step["compute_seconds"], "recompute": None,
            "tp_comm": exposed["tp"], "pp_comm": exposed["pp"], "dp_comm": exposed["dp"],
            "bubble": step["bubble_seconds"], "optimizer": step["optimizer_seconds"],
            "other": step["gradient_accumulation_seconds"] + step["autocast_seconds"]
            + step["overlap_contention_seconds"], "hidden_communication": step["hidden_communication_seconds"],
            "mfu": step["mfu"], "hfu": step["hfu"], "model_flops": step["model_flops"]}


def ours_layers(name: str) -> dict[str, Any]:
    """Our prefill seconds by LAYER_GROUPS (simulate's prefill_blocks, the kernel model) and the
    decode step's seconds, with and without the eager host's time per op."""
    import costmodel

    case = LAYER_CASES[name]
    run = costmodel.simulate(case["preset"], cases.HARDWARE, prompt=case["prompt"], gen=2, batch=case["batch"],
                             attention="sdpa").to_dict()
    seconds = {block["path"]: block["seconds"] for block in run["prefill_blocks"]}
    groups = {group: sum(seconds.get(path, 0.0) for path in paths) for group, (_, paths) in LAYER_GROUPS.items()}
    decode = run["decode"]["first_token"]
    return {"prefill": groups, "prefill_seconds": run["prefill"]["seconds"], "decode_seconds": decode["seconds"],
            "decode_memory_seconds": decode["memory_seconds"], "decode_bytes": decode["bytes"],
            "decode_host_bound": run["decode"]["host"]["bound"]}


def ours_deepspeed(name: str) -> dict[str, Any]:
    """A rank's model states under our deepspeed framework at the case's ZeRO stage, and the
    largest module and parameter count DeepSpeed's estimator is given."""
    import costmodel
    from costmodel.config import Workload
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.presets import load_preset

    case = DEEPSPEED_CASES[name]
    cfg = load_preset(case["preset"])
    layout = Layout(dp=case["dp"], zero=case["zero"], framework="deepspeed")
    stage = ParallelEstimate(cfg, Workload(seq_len=8192, batch=1, dtype="bf16", impl="hf"), layout).per_stage[0]
    estimate = costmodel.estimate(cfg, seq_len=8)
    return {"weights": stage["weights"], "gradients": stage["gradients"], "optimizer": stage["optimizer"],
            "model_states": stage["weights"] + stage["gradients"] + stage["optimizer"],
            "total_params": estimate.total("params"), "largest_layer_params": estimate.largest_module_params()}


def ours_vllm(log: dict[str, Any] = VLLM_LOG) -> dict[str, Any]:
    """serve's KV sizing (vllm-v0, the log's engine) on a log's model, GPU, tp and token budget."""
    import costmodel

    run = costmodel.serve(log["model"], log["hardware"], rate=1.0, requests=2, prompt="16", output="4",
                          scheduler="vllm-v0", max_batched_tokens=log["max_batched_tokens"], tp=log["tp"])
    return dict(run.setup["kv_cache"])


# ---------------------------------------------------------------------------------------------
# the tools


def calculon_split(spec: dict[str, Any], python: str, checkout: Path) -> dict[str, Any]:
    """Calculon's get_total_time parts (llm.py: fw + bw + optim + offload + recompute + recomm
    exposed + bubble + tp, pp, dp exposed)."""
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
            "bubble": raw["bubble_time"], "optimizer": raw["optim_step_time"],
            "other": raw["fw_offload_exposed_time"] + raw["bw_offload_exposed_time"], "raw": raw}


def llm_analysis_split(name: str, python: str, efficiency: float | None = None) -> dict[str, Any]:
    """llm-analysis's train() on the case of other_tools.py (its bundled or written config), at
    its default flops_efficiency (1) or the one given; its time has one part."""
    spec = dict(cases.CASES[CASES[name]["other_case"]]["llm_analysis"])
    if "model_config" in spec:
        spec["model_config"] = cases.llm_analysis_model(spec["model_config"])
    if efficiency is not None:
        spec["flops_efficiency"] = efficiency
    raw = peers.llm_analysis({"llm_analysis": spec}, python)["raw"]
    return {"seconds": raw["latency_per_iter"], "compute": raw["latency_per_iter"], "recompute": None,
            "tp_comm": None, "pp_comm": None, "dp_comm": None, "bubble": None, "optimizer": None, "other": None,
            "raw": raw}


LLM_VIEWER_LAYERS = peers.LLM_VIEWER_ANALYSIS + """keep = ("OPs", "memory_access", "inference_time", "bound")
layers = {stage: {name: {k: row[k] for k in keep} for name, row in result[stage].items()}
          for stage in ("prefill", "decode")}
totals = {stage: {k: result["total_results"][stage][k] for k in ("OPs", "memory_access", "inference_time")}
          for stage in ("prefill", "decode")}
print(json.dumps({"layers": layers, "total": totals, "num_layers": analyzer.config.get_num_hidden_layers(
    analyzer.model_params)}))
"""


def llm_viewer_layers(name: str, python: str, checkout: Path) -> dict[str, Any]:
    """LLM-Viewer's per-layer OPs, bytes and roofline seconds for the case, grouped as ours."""
    import tempfile

    spec = dict(cases.CASES[LAYER_CASES[name]["other_case"]]["llm_viewer"])
    if not (checkout / "model_analyzer.py").exists():
        raise peers.Missing(f"no LLM-Viewer checkout at {checkout}")
    with tempfile.TemporaryDirectory() as folder:
        config_dir = Path(folder) / spec["config_name"]
        config_dir.mkdir()
        (config_dir / "config.json").write_text(json.dumps(cases.llama_hf_config(spec["preset"])))
        raw = peers.run_script(python, LLM_VIEWER_LAYERS, {**spec, "config_dir": str(config_dir)}, cwd=str(checkout))
    prefill = raw["layers"]["prefill"]
    groups = {group: sum(prefill[layer]["inference_time"] * (1 if layer == "lm_head" else raw["num_layers"])
                         for layer in layers if layer in prefill)
              for group, (layers, _) in LAYER_GROUPS.items()}
    return {"prefill": groups, "prefill_seconds": raw["total"]["prefill"]["inference_time"],
            "decode_seconds": raw["total"]["decode"]["inference_time"], "raw": raw}


#: llm-analysis's infer() prefill breakdown (analysis.py get_latency_fwd) under our groups; its
#: "attn" is the whole attention block: the QKV and output projections and the core.
LLM_ANALYSIS_PREFILL = {"attention block": "prefill_latency_fwd_attn", "mlp": "prefill_latency_fwd_mlp",
                        "norms": "prefill_latency_fwd_layernorm", "embedding": "prefill_latency_fwd_input_embedding",
                        "lm_head": "prefill_latency_fwd_output_embedding_loss"}


def llm_analysis_layers(name: str, python: str) -> dict[str, Any]:
    """llm-analysis's infer() on the case of other_tools.py: its prefill latency by part."""
    spec = dict(cases.CASES[LAYER_CASES[name]["other_case"]]["llm_analysis"])
    if "model_config" in spec:
        spec["model_config"] = cases.llm_analysis_model(spec["model_config"])
    raw = peers.llm_analysis({"llm_analysis": spec}, python)["raw"]
    return {"prefill": {group: raw[key] for group, key in LLM_ANALYSIS_PREFILL.items()},
            "prefill_seconds": raw["prefill_latency"], "decode_seconds": raw["decode_latency"], "raw": raw}


def deepspeed_estimate(checkout: Path, zero: int, total_params: int, largest: int, gpus: int) -> int:
    """Bytes per GPU of DeepSpeed's estimator for the stage (no offload, one node of `gpus`), its
    function cut out of the checkout with ast (the file imports torch and the rest of DeepSpeed)."""
    relative, function = DEEPSPEED_FILES[zero]
    path = checkout / relative
    if not path.exists():
        raise peers.Missing(f"no DeepSpeed checkout at {checkout} ({relative})")
    source = path.read_text()
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == function)
    args = [total_params, largest] if zero == 3 else [total_params]
    # run in a child interpreter, as the other tools are (other_tools_peers.run_script): this process
    # compiles no third-party code
    code = (ast.get_source_segment(source, node) + "\nimport json, sys\nspec = json.load(sys.stdin)\n"
            f"print(json.dumps({function}(*spec['args'], num_gpus_per_node=spec['gpus'], num_nodes=1, "
            "cpu_offload=False)[1]))\n")
    return int(peers.run_script(sys.executable, code, {"args": args, "gpus": gpus}))


#: Calculon's own files for Korthikanti et al.'s Table 5 models (models/, validation/seqsel/tab5/)
CALCULON_TABLE_5 = {"22B": "megatron-22B", "175B": "gpt3-175B", "530B": "turing-530B", "1T": "megatron-1T"}


def korthikanti_rows(where: argparse.Namespace, skipped: set[str]) -> list[dict[str, Any]]:
    """Every row of Table 5 (full recomputation, and SP + selective): the published step, ours
    split, Calculon's split on its own model and execution files for the row."""
    from reports.published_runs import korthikanti_runs

    rows = []
    for row, key, cfg, workload, layout in korthikanti_runs():
        model = CALCULON_TABLE_5[row[0]]
        out = {"model": row[0], "recompute": key, "published": row[9] if key == "full" else row[10],
               "ours": split_of(cfg, workload, layout), "tools": {}}
        if "Calculon" not in skipped:
            checkout = Path(where.calculon)
            spec = {"application": json.loads((checkout / "models" / f"{model}.json").read_text())
                    if (checkout / "models").exists() else {},
                    "execution": f"validation/seqsel/tab5/{model}_{'full' if key == 'full' else 'seqsel'}.json",
                    "system": "systems/a100_80g.json"}
            try:
                out["tools"]["Calculon"] = calculon_split(spec, where.tools_python, checkout)
            except peers.Missing as missing:
                print(f"skipped Calculon: not installed ({missing})")
                skipped.add("Calculon")
        rows.append(out)
    return rows


def korthikanti_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["### Korthikanti et al. 2022, Table 5: every row's step, ours and Calculon's",
             "64 to 512 A100s, tp 8; full recomputation, or SP + selective (\"present\"); seconds", "",
             "| model | recompute | published | ours | Calculon | ours: compute / TP / bubble | "
             "Calculon: compute + recompute / TP + recomm / bubble |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        o, c = r["ours"], r["tools"].get("Calculon")
        theirs = (f"{c['seconds']:.2f} ({c['seconds'] / r['published']:.2f}x)", f"{c['compute'] + c['recompute']:.2f} / "
                  f"{c['tp_comm']:.2f} / {c['bubble']:.2f}") if c else ("-", "-")
        lines.append(f"| {r['model']} | {r['recompute']} | {r['published']} | {o['seconds']:.2f} "
                     f"({o['seconds'] / r['published']:.2f}x) | {theirs[0]} | {o['compute']:.2f} / {o['tp_comm']:.2f} / "
                     f"{o['bubble']:.2f} | {theirs[1]} |")
    return lines


def run_split(name: str, where: argparse.Namespace, skipped: set[str]) -> dict[str, dict[str, Any]]:
    case = CASES[name]
    runners = {"Calculon": lambda: calculon_split(case["calculon"], where.tools_python, Path(where.calculon)),
               "llm-analysis": lambda: llm_analysis_split(name, where.tools_python),
               "llm-analysis at our HFU": lambda: llm_analysis_split(name, where.tools_python,
                                                                     round(ours_split(name)["hfu"], 4))}
    return run_each(runners, skipped)


def run_each(runners: dict[str, Any], skipped: set[str]) -> dict[str, Any]:
    """Each tool's runner's result; a tool not installed is said once and skipped from then on (a
    variant "X at ..." with X)."""
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


def measured_layers(name: str) -> dict[str, float]:
    """Vidur's measured kernel seconds of the case's groups, one layer's times the layer count."""
    spec = LAYER_CASES[name].get("measured")
    if spec is None:
        return {}
    from costmodel.presets import load_preset

    profiles = json.loads((ot.ROOT / "validate" / "vidur_profiles.json").read_text())
    point = next(p for p in profiles["compute"]["a100"][spec["model"]]["points"]
                 if p["num_tokens"] == spec["num_tokens"] and p["tp"] == spec["tp"])
    layers = load_preset(LAYER_CASES[name]["preset"]).n_decoder_layers
    return {group: sum(point[op] for op in ops) * 1e-3 * layers for group, ops in spec["groups"].items()}


def with_attention_block(prefill: dict[str, float]) -> dict[str, float]:
    """The groups and their attention block (QKV, core and output), llm-analysis's one part."""
    return {**prefill, "attention block": sum(prefill[g] for g in ("qkv", "rope", "attention", "out"))}


def layer_table(name: str, our: dict[str, Any], tools: dict[str, dict[str, Any]]) -> list[str]:
    measured = measured_layers(name)
    columns = {"ours": our, **tools}
    parts = {label: with_attention_block(figures["prefill"]) if label != "llm-analysis" else figures["prefill"]
             for label, figures in columns.items()}
    lines = [f"### {name}", LAYER_CASES[name]["says"], "",
             "| prefill part | measured (Vidur) | " + " | ".join(columns) + " |", "|---" * (len(columns) + 2) + "|"]
    for group in (*LAYER_GROUPS, "attention block"):
        cells = []
        for label in columns:
            value = parts[label].get(group)
            ratio = f" ({value / measured[group]:.2f}x)" if value is not None and group in measured else ""
            cells.append(_fmt(value) + ratio)
        lines.append(f"| {group} | {_fmt(measured.get(group))} | " + " | ".join(cells) + " |")
    for key in ("prefill_seconds", "decode_seconds"):
        lines.append(f"| **{key}** | - | " + " | ".join(_fmt(figures[key]) for figures in columns.values()) + " |")
    return lines


def deepspeed_table(record: dict[str, Any]) -> list[str]:
    lines = ["### DeepSpeed's model-state estimators beside ours",
             "Llama-3-8B over 8 GPUs of one node, no offload; bytes a GPU (GiB = 2^30 bytes)", "",
             "| case | ours: weights + gradients + optimizer | DeepSpeed's estimator |", "|---|---|---|"]
    for name, row in record.items():
        ours, tool = row["ours"], row["tools"].get("DeepSpeed")
        lines.append(f"| {name} | {ours['weights'] / 2**30:.3f} + {ours['gradients'] / 2**30:.3f} + "
                     f"{ours['optimizer'] / 2**30:.3f} = {ours['model_states'] / 2**30:.3f} GiB | "
                     + (f"{tool / 2**30:.3f} GiB |" if tool is not None else "- |"))
    return lines


def vllm_table(ours: dict[str, Any]) -> list[str]:
    gib = VLLM_LOG["gib"]
    rows = [("total_gpu_memory", gib["total_gpu_memory"], ours["memory_bytes"] / 2**30),
            ("x gpu_memory_utilization", gib["instance_can_use"], ours["memory_bytes"] * ours["gpu_memory_utilization"]
             / 2**30),
            ("model weights", gib["model_weights"], ours["weight_bytes"] / 2**30),
            ("non-torch memory (ours: the reserve)", gib["non_torch_memory"], ours["memory_reserve_bytes"] / 2**30),
            ("activation peak", gib["activation_peak"], ours["activation_bytes"] / 2**30),
            ("KV cache memory", gib["available_kv_cache_memory"], ours["kv_budget_bytes"] / 2**30)]
    block_gib = ours["kv_bytes_per_token"] * VLLM_LOG["block_size"] / 2**30
    lines = ["### vLLM's KV-cache blocks: Llama-3-8B on one H100 at gpu_memory_utilization 0.9",
             f"measured: {VLLM_LOG['source']}", "", "| term | vLLM's log (GiB) | ours (GiB) |", "|---|---|---|"]
    lines += [f"| {term} | {logged:.2f} | {mine:.3f} |" for term, logged, mine in rows]
    lines.append(f"| blocks of 16 tokens | {gib['available_kv_cache_memory'] / block_gib:,.0f} "
                 f"(its KV memory / {block_gib:.6f} GiB) | {ours['num_blocks']:,} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools-python", default=str(TOOLS / "venv" / "bin" / "python"),
                        help="the python of the venv holding llm-analysis (and pandas for Calculon)")
    parser.add_argument("--llm-viewer", default=str(TOOLS / "LLM-Viewer"), help="an LLM-Viewer checkout")
    parser.add_argument("--calculon", default=str(TOOLS / "calculon"), help="a Calculon checkout")
    parser.add_argument("--deepspeed", default=str(TOOLS / "DeepSpeed"), help="a DeepSpeed checkout")
    parser.add_argument("--write", action="store_true", help=f"record the figures in {RECORD.name}")
    parser.add_argument("--ours-only", action="store_true",
                        help=f"run no tool: recompute our side of {RECORD.name}, every tool's figure as recorded")
    where = parser.parse_args(argv)
    if where.ours_only:
        try:
            record = with_our_side(json.loads(RECORD.read_text()))
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        write_record(record)
        return 0
    skipped: set[str] = set()
    record: dict[str, Any] = {"cases": {}}
    for name in CASES:
        our = ours_split(name)
        tools = run_split(name, where, skipped)
        print("\n".join(split_table(name, our, tools)) + "\n")
        record["cases"][name] = {"ours": our, "tools": tools}
    record["korthikanti"] = korthikanti_rows(where, skipped)
    print("\n".join(korthikanti_table(record["korthikanti"])) + "\n")
    record["layers"] = {}
    for name in LAYER_CASES:
        runners = {"LLM-Viewer": lambda: llm_viewer_layers(name, where.tools_python, Path(where.llm_viewer)),
                   "llm-analysis": lambda: llm_analysis_layers(name, where.tools_python)}
        tools = run_each(runners, skipped)
        our = ours_layers(name)
        print("\n".join(layer_table(name, our, tools)) + "\n")
        record["layers"][name] = {"ours": our, "tools": tools}
    record["deepspeed"] = {}
    for name, case in DEEPSPEED_CASES.items():
        our, tool = ours_deepspeed(name), None
        try:
            if "DeepSpeed" not in skipped:
                tool = deepspeed_estimate(Path(where.deepspeed), case["zero"], our["total_params"],
                                          our["largest_layer_params"], case["dp"])
        except peers.Missing as missing:
            print(f"skipped DeepSpeed: not installed ({missing})")
            skipped.add("DeepSpeed")
        record["deepspeed"][name] = {"ours": our, "tools": {} if tool is None else {"DeepSpeed": tool}}
    print("\n".join(deepspeed_table(record["deepspeed"])) + "\n")
    record["vllm"] = {"log": VLLM_LOG, "ours": ours_vllm(),
                      "blocks": [{**log, "ours": ours_vllm(log)["num_blocks"]} for log in VLLM_BLOCK_LOGS]}
    print("\n".join(vllm_table(record["vllm"]["ours"])))
    for row in record["vllm"]["blocks"]:
        print(f"- {row['model']} tp {row['tp']} on {row['hardware']}: vLLM {row['blocks']:,} blocks, ours "
              f"{row['ours']:,} ({row['ours'] / row['blocks']:.3f}x; {row['source']})")
    print()
    record["versions"] = {**peers.versions(where.tools_python, Path(where.llm_viewer), Path(where.calculon),
                                           Path(where.calculon)),
                          "DeepSpeed": peers.checkout_commit(Path(where.deepspeed))}
    record["versions"].pop("Megatron-LM")
    if where.write:
        write_record(record)
    return 0


def with_our_side(record: dict[str, Any]) -> dict[str, Any]:
    """A copy of a record with every "ours" recomputed as main() computes it; the tools' figures,
    the published steps, the logs and the versions as they stand. ValueError for a record whose
    cases, Table 5 rows or vLLM logs are not this module's: those need a `--write` with the tools."""
    from reports.published_runs import korthikanti_runs

    out, table_5 = json.loads(json.dumps(record)), list(korthikanti_runs())
    logs = [{key: value for key, value in row.items() if key != "ours"} for row in out["vllm"]["blocks"]]
    if ((set(out["cases"]), set(out["layers"]), set(out["deepspeed"])) != (set(CASES), set(LAYER_CASES), set(DEEPSPEED_CASES))
            or [(row["model"], row["recompute"]) for row in out["korthikanti"]] != [(r[0], key) for r, key, *_ in table_5]
            or out["vllm"]["log"] != VLLM_LOG or logs != VLLM_BLOCK_LOGS):
        raise ValueError(f"{RECORD.name} holds other cases than {Path(__file__).name}: run --write with the tools")
    for name in CASES:
        out["cases"][name]["ours"] = ours_split(name)
    for row, (_, _, cfg, workload, layout) in zip(out["korthikanti"], table_5):
        row["ours"] = split_of(cfg, workload, layout)
    for name in LAYER_CASES:
        out["layers"][name]["ours"] = ours_layers(name)
    for name in DEEPSPEED_CASES:
        out["deepspeed"][name]["ours"] = ours_deepspeed(name)
    out["vllm"]["ours"] = ours_vllm()
    for row, log in zip(out["vllm"]["blocks"], VLLM_BLOCK_LOGS):
        row["ours"] = ours_vllm(log)["num_blocks"]
    return out


def write_record(record: dict[str, Any]) -> None:
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"wrote {RECORD}")


if __name__ == "__main__":
    sys.exit(main())
