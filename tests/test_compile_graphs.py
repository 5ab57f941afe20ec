"""torch.compile with CUDA graphs in decoding (session 39, wt39_compilegraphs): mode "reduce-overhead" (gpt-fast,
torchao, torchchat, PyTorch's CI benchmark) replays torch.compile's fused kernels from a graph, so a decode step is the
compiled kernel list's GPU time (kernel_facts.json "compile": a layer's norm inside the residual add's kernel, the gated
activation with its product) plus the hardware file's graph_kernel_s for each kernel the list launches; gpt-fast's
prefill runs eager beside it unless --compile_prefill (simulate --eager-prefill)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cli
from costmodel.hardware import load_hardware
from costmodel.kernel_facts_file import fuses_qkv
from costmodel.kernel_time import KernelTimer, inference_subs, kernels_seconds, launches_of, leaf_kernels
from costmodel.presets import load_preset
from costmodel.roofline import Roofline, simulate_inference

HARDWARE_DIR = Path(__file__).resolve().parents[1] / "costmodel" / "hardware"
PROMPT = 37  # an odd length: the first decode step attends 38 keys


def _step(cfg, hardware, compiled: bool, graphs: bool, **options) -> dict:
    """simulate_inference's first decode step and prefill, gpt-fast's code (static cache, sdpa)."""
    result = simulate_inference(cfg, hardware, prompt=PROMPT, gen=2, batch=1, attention="sdpa", kv_cache="static",
                                cuda_graphs=graphs, compiled=compiled, time_model="kernels",
                                implementation="gpt-fast", **options)
    return {"step": result["decode"]["first_token"]["seconds"], "prefill": result["prefill"]["seconds"]}


def _from_the_files(cfg, hardware, compiled: bool) -> tuple[float, int]:
    """The step's kernels (leaf_kernels, compiled or not) at their GPU seconds with no launch term (a timer neither
    eager nor graphed prices none: KernelTimer.launch_seconds with launch_s 0), and how many kernels launch."""
    timer = KernelTimer(hardware, "bf16", "sdpa", compiled=compiled, fused_qkv=fuses_qkv("gpt-fast"))
    timer.launch_s = 0.0
    roof = Roofline(cfg, hardware, "bf16", None, "sdpa", "static", True, None, decode_code="gpt-fast")
    leaves, _ = roof.step_leaves()
    subs = inference_subs(cfg, "bf16", 1, 1, context=PROMPT + 1, source_len=1)
    gpu = 0.0
    launched = 0
    for leaf in leaves:
        count = int(float(leaf.count.xreplace(subs))) if hasattr(leaf.count, "xreplace") else int(leaf.count)
        kernels = leaf_kernels(leaf, subs, timer.fused_attention, compiled=compiled, fused_qkv=timer.fused_qkv)
        gpu += count * kernels_seconds(kernels, timer)
        launched += count * launches_of(leaf, len(kernels), compiled)
    return gpu, launched


@pytest.mark.parametrize("model, hardware_name", [("llama2-7b", "h100-sxm"), ("mistral-7b", "a100-80gb")])
def test_a_compiled_graphed_step_is_the_compiled_kernels_and_their_replay(model, hardware_name):
    """Exact from the files: the compiled list's GPU seconds + graph_kernel_s (the hardware file's) a launched kernel."""
    cfg, hardware = load_preset(model), load_hardware(hardware_name)
    graph_kernel_s = json.loads((HARDWARE_DIR / f"{hardware_name}.json").read_text())["graph_kernel_s"]
    assert graph_kernel_s == hardware.graph_kernel_s > 0
    compiled_gpu, compiled_kernels = _from_the_files(cfg, hardware, compiled=True)
    eager_gpu, eager_kernels = _from_the_files(cfg, hardware, compiled=False)
    both = _step(cfg, hardware, compiled=True, graphs=True)["step"]
    assert both == pytest.approx(compiled_gpu + graph_kernel_s * compiled_kernels, rel=1e-12)
    # graphs alone replay the eager list: 2 norms a layer more (each layer's two RMSNorms launch nothing compiled)
    assert eager_kernels - compiled_kernels == 2 * cfg.n_layers == 64
    graphs = _step(cfg, hardware, compiled=False, graphs=True)["step"]
    assert graphs == pytest.approx(eager_gpu + graph_kernel_s * eager_kernels, rel=1e-12)
    assert graphs - both == pytest.approx(eager_gpu - compiled_gpu + 64 * graph_kernel_s, rel=1e-9)
    assert both < graphs  # never slower than graphs alone: fewer bytes, fewer kernels
    assert both < _step(cfg, hardware, compiled=True, graphs=False)["step"]  # nor than compiled kernels launched one by one


@pytest.mark.parametrize("model, hardware_name, batch", [("llama2-7b", "h100-sxm", 1), ("llama3-8b", "a100-80gb", 8),
                                                         ("mixtral-8x7b", "h100-sxm", 4), ("gpt2", "a10", 1),
                                                         ("llama2-70b", "mi300x", 16)])
def test_compile_with_graphs_is_never_slower_than_graphs_alone(model, hardware_name, batch):
    cfg, hardware = load_preset(model), load_hardware(hardware_name)
    run = {graphs: simulate_inference(cfg, hardware, prompt=PROMPT, gen=64, batch=batch, attention="sdpa",
                                      kv_cache="static", cuda_graphs=True, compiled=graphs, time_model="kernels")
           for graphs in (False, True)}
    assert run[True]["decode"]["decode_seconds"] < run[False]["decode"]["decode_seconds"]


def test_an_eager_prefill_beside_compiled_graphed_steps():
    """--eager-prefill: the prefill is the uncompiled run's (host-bound at 37 tokens), the steps the compiled ones."""
    cfg, hardware = load_preset("llama2-7b"), load_hardware("a100-80gb")
    both = _step(cfg, hardware, compiled=True, graphs=True)
    eager_prefill = _step(cfg, hardware, compiled=True, graphs=True, eager_prefill=True)
    graphs = _step(cfg, hardware, compiled=False, graphs=True)
    assert eager_prefill["step"] == both["step"] and eager_prefill["prefill"] == graphs["prefill"]
    assert eager_prefill["prefill"] > both["prefill"]


def _cli_json(capsys, *extra: str) -> dict:
    assert cli.main(["simulate", "--model", "llama2-7b", "--hardware", "h100-sxm", "--prompt", str(PROMPT), "--gen", "2",
                     "--attention", "sdpa", "--kv-cache", "static", "--decode-code", "gpt-fast", "--time-model",
                     "kernels", *extra, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_cli_reaches_it(capsys):
    cfg, hardware = load_preset("llama2-7b"), load_hardware("h100-sxm")
    out = _cli_json(capsys, "--compile", "--cuda-graphs")
    assert out["inputs"]["compiled"] is True and out["inputs"]["cuda_graphs"] is True
    assert out["decode"]["first_token"]["seconds"] == _step(cfg, hardware, compiled=True, graphs=True)["step"]
    out = _cli_json(capsys, "--compile", "--cuda-graphs", "--eager-prefill")
    assert out["inputs"]["eager_prefill"] is True
    assert out["prefill"]["seconds"] == _step(cfg, hardware, compiled=False, graphs=True)["prefill"]
    # a layout at tp 1 times the same compiled, graphed step and eager prefill (layout/timing.simulate_decode)
    layout = _cli_json(capsys, "--compile", "--cuda-graphs", "--eager-prefill", "--tp", "1")
    assert layout["inputs"]["compiled"] is True and layout["inputs"]["eager_prefill"] is True
    assert layout["prefill"]["seconds"] == pytest.approx(out["prefill"]["seconds"], rel=1e-9)


@pytest.mark.parametrize("extra, message", [
    (["--eager-prefill"], "--eager-prefill runs the prefill eager beside compiled decode steps; add --compile"),
    (["--eager-prefill", "--tp", "2"], "--eager-prefill runs the prefill eager beside compiled decode steps; add --compile"),
    (["--compile", "--cuda-graphs", "--time-model", "roofline"], "--compile is modelled by the kernel-level time model only"),
    (["--train", "--eager-prefill", "--dp", "1"], "--eager-prefill: inference options, which --train ignores"),
])
def test_a_bad_combination_is_one_line_and_status_2(extra, message, capsys):
    assert cli.main(["simulate", "--model", "llama2-7b", "--hardware", "h100-sxm", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
