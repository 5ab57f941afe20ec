"""Runs the other tools (llm-analysis, LLM-Viewer, Calculon, Megatron-LM's formulas) on one case
of validate/other_tools.py and returns their figures under our names; never a dependency.

Each tool lives outside the project and outside its venv, by default under .other_tools/ at the
repository's root (ignored by git; validate/FINDINGS.md gives the commits):
- llm-analysis (PyPI) in its own venv, `python3 -m venv .other_tools/venv &&
  .other_tools/venv/bin/pip install llm-analysis==0.2.2 pandas psutil` (pandas and psutil for Calculon);
- LLM-Viewer (github hahnyuan/LLM-Viewer) and Calculon (github calculon-ai/calculon): checkouts in
  .other_tools/LLM-Viewer and .other_tools/calculon, run with that venv's python from their own
  folder (LLM-Viewer needs transformers' AutoConfig, which llm-analysis installs; it reads a
  config.json we write, nothing is downloaded);
- Megatron-LM (github NVIDIA/Megatron-LM): a checkout in .other_tools/Megatron-LM;
  compute_weight_and_optimizer_memory,
  compute_activation_memory(_without_sp) and num_floating_point_operations are cut out of
  megatron/training/*.py with `ast` and called here with an argparse.Namespace (only `math` is
  needed; the few helpers they call are stubbed to refuse anything but a plain dense model).
Where each is found: --tools-python, --llm-viewer, --calculon, --megatron (validate/other_tools.py).
A runner returns {quantity: value} (None where the tool has no such figure) and "raw" (the
tool's own output, kept in validate/other_tools.json).
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import subprocess
import tempfile
from operator import itemgetter
from pathlib import Path
from typing import Any


class Missing(Exception):
    """A tool is not installed where we look; one line says where."""


def run_script(python: str, code: str, spec: dict[str, Any], cwd: str | None = None) -> dict[str, Any]:
    if not Path(python).exists():
        raise Missing(f"no python at {python}")
    done = subprocess.run([python, "-c", code], input=json.dumps(spec), capture_output=True, text=True,
                          cwd=cwd, timeout=300)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        if "ModuleNotFoundError" in last or "No module named" in last:
            raise Missing(last)
        raise RuntimeError(f"{python} -c ... failed: {last}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _version(python: str, package: str) -> str:
    if not Path(python).exists():
        return "not installed"
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or "unknown"


def checkout_commit(checkout: Path) -> str:
    """The commit a checkout was made from: its COMMIT file (git archive has no .git) or git."""
    stamp = checkout / "COMMIT"
    if stamp.exists():
        return stamp.read_text().strip()
    done = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


# ---------------------------------------------------------------------------------------------
# llm-analysis 0.2.2: llm_analysis.analysis.train / infer, which return a flat dict

LLM_ANALYSIS = """
import json, sys, logging
spec = json.load(sys.stdin)
from llm_analysis.analysis import train, infer
fn = train if spec.pop("mode") == "train" else infer
if "model_config" in spec:  # a ModelConfig of our sizes, read from a JSON file as get_model_config_by_name does
    import os, tempfile
    path = os.path.join(tempfile.mkdtemp(), "model.json")
    with open(path, "w") as f:
        json.dump(spec.pop("model_config"), f)
    spec["model_name"] = path
out = fn(log_level="ERROR", **spec)
print(json.dumps({k: (v if isinstance(v, (int, float, str, type(None))) else str(v)) for k, v in out.items()}))
"""


def llm_analysis(case: dict[str, Any], python: str) -> dict[str, Any]:
    spec = case.get("llm_analysis")
    if spec is None:
        return {}
    raw = run_script(python, LLM_ANALYSIS, dict(spec))
    if spec["mode"] == "train":
        # num_flops_total_per_micro_batch: the whole model's 3 x forward (+ its recomputation) of a micro-batch
        figures = {"params": raw["num_params_total"], "flops_sequence": raw["num_flops_total_per_micro_batch"]
                   / spec["batch_size_per_gpu"],
                   "weights": raw["weight_memory_per_gpu"], "gradients": raw["gradient_memory_per_gpu"],
                   "optimizer": raw["optimizer_state_memory_per_gpu"],
                   "activations": raw["activation_memory_per_gpu"], "seconds": raw["latency_per_iter"]}
    else:
        figures = {"prefill_flops": raw["prefill_num_flops_fwd_total"],
                   "decode_flops": raw["decode_num_flops_fwd_total"], "weights": raw["weight_memory_per_gpu"],
                   "kv_cache": raw["kv_cache_memory_per_gpu"], "prefill_seconds": raw["prefill_latency"],
                   "decode_seconds": raw["decode_latency"], "tokens_per_second": raw["decode_tokens_per_sec"]}
    return {**figures, "raw": raw}


# ---------------------------------------------------------------------------------------------
# LLM-Viewer (model_analyzer.ModelAnalyzer.analyze): OPs, weights, KV cache and time of a prefill
# of n tokens and of one decode step at context n

#: The start of every script run in an LLM-Viewer checkout: the spec from stdin, its analyzer and
#: `result`, its analysis of the spec's sequence at 16-bit weights and activations
#: (validate/other_tools_time.py's per-layer script starts the same way).
LLM_VIEWER_ANALYSIS = """
import json, sys
sys.path.insert(0, ".")
spec = json.load(sys.stdin)
from model_analyzer import ModelAnalyzer
analyzer = ModelAnalyzer(spec["config_dir"], spec["hardware"])
result = analyzer.analyze(seqlen=spec["seq_len"], batchsize=spec["batch"], w_bit=16, a_bit=16,
                          use_flashattention=spec["flash"])
"""

LLM_VIEWER = LLM_VIEWER_ANALYSIS + """layers = {stage: {name: row["OPs"] for name, row in result[stage].items()} for stage in ("prefill", "decode")}
decode = None
if spec.get("gen"):  # analyze_generate_task's decode loop, without its prefill
    steps = range(spec["seq_len"], spec["seq_len"] + spec["gen"])
    decode = sum(analyzer.analyze(seqlen=i, batchsize=spec["batch"], w_bit=16, a_bit=16,
                                  use_flashattention=spec["flash"])["total_results"]["decode"]["inference_time"]
                 for i in steps)
print(json.dumps({"total": result["total_results"], "layer_ops": layers, "decode_seconds": decode}))
"""


def llm_viewer(case: dict[str, Any], python: str, checkout: Path) -> dict[str, Any]:
    spec = case.get("llm_viewer")
    if spec is None:
        return {}
    if not (checkout / "model_analyzer.py").exists():
        raise Missing(f"no LLM-Viewer checkout at {checkout}")
    with tempfile.TemporaryDirectory() as folder:
        config_dir = Path(folder) / spec["config_name"]  # its config search wants "Llama" in the id
        config_dir.mkdir()
        (config_dir / "config.json").write_text(json.dumps(spec["hf_config"]))
        raw = run_script(python, LLM_VIEWER, {**spec, "config_dir": str(config_dir)}, cwd=str(checkout))
    prefill, decode = raw["total"]["prefill"], raw["total"]["decode"]
    if spec.get("gen"):
        return {"tokens_per_second": spec["gen"] / raw["decode_seconds"], "raw": raw}
    return {"prefill_flops": prefill["OPs"], "decode_flops": decode["OPs"],
            "weights": prefill["memory_consumption_weight"], "kv_cache": prefill["memory_consumption_kv_cache"],
            "prefill_seconds": prefill["inference_time"], "decode_seconds": decode["inference_time"], "raw": raw}


# ---------------------------------------------------------------------------------------------
# Calculon: `calculon llm application execution system stats.json` from its own folder

CALCULON = """
import json, sys, logging
sys.path.insert(0, ".")
spec = json.load(sys.stdin)
import calculon
from calculon.llm import Llm
from calculon.system import System
app = Llm.Application(spec["application"])
exe = Llm.Execution.from_json(spec["execution"])
system = System(calculon.io.read_json_file(spec["system"]))
model = Llm(app, logging.getLogger("calculon"))
model.compile(system, exe)
model.run(system)
print(json.dumps(model.get_stats_json(False)))
"""


def calculon(case: dict[str, Any], python: str, checkout: Path) -> dict[str, Any]:
    spec = case.get("calculon")
    if spec is None:
        return {}
    if not (checkout / "calculon" / "llm").exists():
        raise Missing(f"no Calculon checkout at {checkout}")
    raw = run_script(python, CALCULON, spec, cwd=str(checkout))
    blocks, tp = spec["application"]["num_blocks"], spec["execution"]["tensor_par"]
    per_block = raw["block_fw_flops"] + raw["block_agrad_flops"] + raw["block_wgrad_flops"]  # one TP rank's
    return {"flops_sequence": per_block * blocks * tp / spec["execution"]["microbatch_size"],
            "weights": raw["weight_space"], "gradients": raw["weight_grad_space"],
            "optimizer": raw["optimizer_space"], "activations": raw["act_space"], "seconds": raw["total_time"],
            "raw": raw}


# ---------------------------------------------------------------------------------------------
# Megatron-LM: theoretical_memory_usage.py and training.py's num_floating_point_operations

MEGATRON_FUNCTIONS = {
    "megatron/training/theoretical_memory_usage.py": ("compute_weight_and_optimizer_memory",
                                                      "compute_activation_memory",
                                                      "compute_activation_memory_without_sp"),
    "megatron/training/training.py": ("num_floating_point_operations",),
}


def _dense_only(variant: Any) -> bool:
    if variant is not None:
        raise NotImplementedError(f"attention variant {variant!r}")
    return False


def megatron_functions(checkout: Path) -> dict[str, Any]:
    """The four functions from the checkout's source, imported as a module of their own: their
    definitions cut out with ast (the files import the rest of Megatron and torch) into a
    temporary module beside the names they use, which the import system then loads (the checkout
    is code the user chose to run, as any library; no config text reaches it)."""
    import importlib.util
    import tempfile

    pieces = []
    for relative, names in MEGATRON_FUNCTIONS.items():
        path = checkout / relative
        if not path.exists():
            raise Missing(f"no Megatron-LM checkout at {checkout} ({relative})")
        source = path.read_text()
        found = {node.name: ast.get_source_segment(source, node) for node in ast.parse(source).body
                 if isinstance(node, ast.FunctionDef) and node.name in names}
        for name in names:
            if name not in found:
                raise Missing(f"{relative} has no {name} at this commit")
            pieces.append(found[name])
    with tempfile.TemporaryDirectory() as folder:
        module_path = Path(folder) / "megatron_formulas.py"
        module_path.write_text("\n\n".join(pieces) + "\n")
        spec = importlib.util.spec_from_file_location("megatron_formulas", module_path)
        module = importlib.util.module_from_spec(spec)
        module.__dict__.update({"math": math, "itemgetter": itemgetter, "NUM_BYTES_IN_MEGABYTE": 1024 * 1024,
                                "print_rank_0": lambda *args, **kwargs: None,
                                "is_hybrid_model": lambda args: bool(getattr(args, "is_hybrid_model", False)),
                                "is_linear_attention_variant": _dense_only, "is_gated_delta_net_variant": _dense_only})
        spec.loader.exec_module(module)
    return vars(module)


def megatron(case: dict[str, Any], checkout: Path) -> dict[str, Any]:
    spec = case.get("megatron")
    if spec is None:
        return {}
    functions = megatron_functions(checkout)
    args = spec["args"]
    state = functions["compute_weight_and_optimizer_memory"](argparse.Namespace(**args))
    # report_theoretical_memory's own choice: Table 2's SP formula only with SP and selective recomputation
    sp_selective = args["sequence_parallel"] and args["recompute_granularity"] == "selective"
    which = "compute_activation_memory" if sp_selective else "compute_activation_memory_without_sp"
    activations = functions[which](argparse.Namespace(**args), spec["num_microbatches"])
    flops = functions["num_floating_point_operations"](argparse.Namespace(**args), 1)
    raw = {"weight_and_optimizer_bytes": state, "activation_bytes": activations, "activation_function": which,
           "flops_per_sequence": flops}
    return {"flops_sequence": flops, "model_states": state, "activations": activations, "raw": raw}


def versions(python: str, viewer: Path, calc: Path, mega: Path) -> dict[str, str]:
    return {"llm-analysis": _version(python, "llm-analysis"), "LLM-Viewer": checkout_commit(viewer),
            "Calculon": checkout_commit(calc), "Megatron-LM": checkout_commit(mega)}
