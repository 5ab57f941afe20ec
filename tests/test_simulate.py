"""The roofline simulator: the decode crossover batch, what fits in memory, training time."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.config import ConfigError, Workload
from costmodel.presets import load_preset
from costmodel.hardware import Efficiency, Hardware, load_hardware
from costmodel.roofline import Roofline, simulate_inference
from costmodel.roofline_training import simulate_training


def test_decode_crossover_batch_on_a100_is_153():
    # Roofline: 312 TFLOP/s / 2.039 TB/s, 2 FLOPs and 2 bytes per parameter per token -> 153.
    roof = Roofline(load_preset("llama2-7b"), load_hardware("a100-80gb"), "bf16", Efficiency(1.0, 1.0))
    crossover = roof.decode_crossover_batch()
    assert 152.5 < crossover < 153.5
    # In fp32 the weights cost 4 bytes and the peak is 19.5 TFLOP/s: 19.5e12/2.039e12 * 4/2 = 19.1.
    fp32 = Roofline(load_preset("llama2-7b"), load_hardware("a100-80gb"), "fp32", Efficiency(1.0, 1.0))
    assert 18.9 < fp32.decode_crossover_batch() < 19.3


def test_mha_decode_with_a_long_context_never_turns_compute_bound():
    # Llama-2-7B (h_kv = h): per sequence the KV cache read at 2048 tokens (1 GiB) outweighs the
    # FLOPs it adds, so no batch makes the step compute-bound on an A100.
    roof = Roofline(load_preset("llama2-7b"), load_hardware("a100-80gb"), "bf16", Efficiency(1.0, 1.0))
    assert roof.decode_crossover_batch(2048) == float("inf")


def test_what_fits_in_memory():
    roof = Roofline(load_preset("llama2-7b"), load_hardware("a100-80gb"), "bf16")
    fits = roof.fits(batch=8, context=4096)
    weights = 6_738_415_616 * 2
    per_token = 32 * 2 * 4096 * 2  # layers * (K, V) * d * bf16 bytes = 524,288
    assert fits["weights"] == weights and fits["kv_bytes_per_token"] == per_token
    # Serving plans with 90% of the 80 GiB (vLLM's default gpu_memory_utilization) less the
    # stated 512 MiB reserve for the CUDA context and workspaces (costmodel/hardware/a100-80gb.json).
    usable = 80 * 2**30 * 9 // 10 - 512 * 2**20
    assert fits["max_batch"] == (usable - weights) // (per_token * 4096) == 29
    # each token of context adds its cache and, in the last eager decode step, 32 heads' scores at
    # 10 B each (bf16, fp32 softmax: memory.forward_transient) for every sequence
    assert fits["max_context"] == (usable - weights) // (8 * (per_token + 32 * 10)) == 15_081


@pytest.mark.slow
def test_what_fits_with_sliding_windows(capsys):
    # A cache that stops at a window is not linear in the context: Phi-3-mini and Mistral-7B v0.1
    # window every layer, so no context outgrows memory (inf, JSON null); Gemma-2-9B windows half
    # its layers, so its longest context is where the global layers' cache (21 layers x 2 x 8
    # heads x 256 x 2 bytes = 172,032 B a key) fills what the rest leaves. Below the windows
    # every layer grows: 32 x 2 x 3072 x 2 = 393,216 B a key for Phi-3-mini.
    h100 = load_hardware("h100-sxm")
    for name, per_token in (("phi3-mini", 393_216), ("mistral-7b", 131_072)):
        fits = Roofline(load_preset(name), h100, "bf16").fits(batch=1, context=8192)
        assert fits["max_context"] == float("inf") and fits["kv_bytes_per_token"] == per_token
    gemma = Roofline(load_preset("gemma2-9b"), h100, "bf16")
    longest = gemma.fits(batch=1, context=4096)["max_context"]
    assert gemma.fits(batch=1, context=4096)["kv_bytes_per_token"] == 2 * 172_032
    assert gemma.fits(batch=1, context=longest)["fits"]
    over = gemma.fits(batch=1, context=longest + 1)
    # and the last eager decode step's scores, 16 heads x 10 B (fp32 softmax) a key
    assert not over["fits"] and over["bytes"] - gemma.fits(batch=1, context=longest)["bytes"] == 172_032 + 160
    assert cli.main(["simulate", "--model", "phi3-mini", "--hardware", "h100-sxm", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["memory"]["max_context"] is None


def test_prefill_is_compute_bound_and_decode_memory_bound():
    result = simulate_inference(load_preset("llama2-7b"), load_hardware("h100-sxm"),
                                prompt=2048, gen=16, batch=1)
    assert result["prefill"]["bound"] == "compute"
    assert result["decode"]["first_token"]["bound"] == "memory"
    # With a cache each step is far cheaper than rerunning the prefix: eager, the cached step is the
    # host's 3,023 generate ops at the borrowed 6.545 us an op (the H100's file states none), the
    # 2,063-token rerun over 3x that.
    row = result["generation_table"][-1]
    assert row["with_cache_seconds"] == 3023 * 6.545241752576789e-06
    assert row["with_cache_seconds"] * 3 < row["without_cache_seconds"]
    # A decode step reads every weight once: at least weights / bandwidth.
    assert result["decode"]["first_token"]["seconds"] >= 6_738_415_616 * 2 / (3.35e12 * 0.8)


def test_training_time_and_mfu():
    hardware = load_hardware("a100-80gb")
    workload = Workload(seq_len=4096, batch=1, attention="sdpa")
    result = simulate_training(load_preset("llama2-70b"), workload, hardware, tokens=2e12,
                               step_seconds=20.0, efficiency=Efficiency(0.5, 0.8))
    # The matrix products at 0.5 x 312 TFLOP/s: 6 x 68,976,648,192 params x 4096 tokens plus the
    # attention core, 3 x 4 x n^2 x d per layer (80 layers, d = 8192); then AdamW's memory-bound
    # step, reading 16 bytes per parameter (bf16 weights and gradients, fp32 master weights and
    # two moments) and writing 14 (weights and states), at 0.8 x 2.039 TB/s, as a pass of its own.
    # The other ops (norms, activations, residual adds: each block's at the larger of 3x its
    # traffic at 1.63 TB/s and 3x its FLOPs at the 9.75 TFLOP/s vector roof, about 0.5 s) and the
    # flash backward's recomputed Q K^T (0.1 s) add the last ~5%.
    params = 68_976_648_192
    matmul_s = (6 * params * 4096 + 12 * 80 * 8192 * 4096**2) / (0.5 * 312e12)
    optimizer_s = 30 * params / (0.8 * 2.039e12)
    assert result["step"]["bound"] == "compute"
    assert result["step"]["seconds"] == pytest.approx(matmul_s + optimizer_s, rel=0.06)
    assert result["step"]["seconds"] > matmul_s + optimizer_s
    assert result["mfu_predicted"] == pytest.approx(0.5 * matmul_s / result["step"]["seconds"], rel=0.03)
    assert result["train_seconds"] == pytest.approx(2e12 / result["tokens_per_second"])
    assert not result["fits"]  # 70B with AdamW needs > 1 TB
    assert result["mfu_measured"] < result["mfu_predicted"]


def test_simulate_cli(capsys):
    code = cli.main(["simulate", "--model", "llama2-7b", "--hardware", "a100-80gb",
                     "--compute-efficiency", "1", "--memory-efficiency", "1", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and 152.5 < data["decode"]["crossover_batch_weights_only"] < 153.5
    assert data["decode"]["crossover_batch_at_context"] is None  # never: null, not Infinity
    for args in (["simulate", "--model", "gpt2", "--hardware", "tpu"],
                 ["simulate", "--model", "gpt2", "--compute-efficiency", "1.5"],
                 ["simulate", "--model", "gpt2", "--gen", "-1"],
                 ["simulate", "--model", "bert-base-uncased"],
                 ["simulate", "--model", "gpt2", "--train", "--tokens", "-5"]):
        assert cli.main(args) == 2, args
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and err.startswith("error: ")


def _machine(**overrides) -> Hardware:
    data = {"name": "toy", "flops_per_s": {"fp32": 1e12}, "vector_flops_per_s": 1e10,
            "bandwidth_bytes_per_s": 1e11, "memory_bytes": 2**34}
    return Hardware.from_dict({**data, **overrides}, source="test")


def test_a_block_runs_its_matmuls_then_its_other_ops_each_at_its_own_roof():
    # GPT-2 small's MLP at b = 1, n = 1024, fp32, 12 layers, on a toy machine (1 TFLOP/s matmul,
    # 10 GFLOP/s vector, 100 GB/s).
    # Matmuls: 2 x (2 n d 4d) = 9,663,676,416 FLOPs -> 9.66 ms; their traffic, 4 bytes x 2 x
    # (d 4d weights + n (d + 4d) in and out) = 50,331,648 B -> 0.50 ms: compute-bound.
    # gelu (tanh): n 4d = 3,145,728 elements x 8 FLOPs -> 2.52 ms at the vector peak; read and
    # written, 25,165,824 B -> 0.25 ms. The block: 12 x (9.66 + 2.52) ms.
    roof = Roofline(load_preset("gpt2"), _machine(), "fp32", Efficiency(1.0, 1.0))
    _, _, blocks = roof.prefill(1, 1024)
    mlp = next(b for b in blocks if b.path == "decoder.layer.ffn.mlp")
    matmul_s = max(9_663_676_416 / 1e12, 50_331_648 / 1e11)
    other_s = max(3_145_728 * 8 / 1e10, 25_165_824 / 1e11)
    assert mlp.seconds == pytest.approx(12 * (matmul_s + other_s), rel=1e-12)
    assert mlp.timing.bound == "compute"
    # The old single roof, max(all FLOPs / matmul peak, all bytes / bandwidth), said 9.69 ms a layer.
    assert mlp.seconds > 12 * (9_663_676_416 + 3_145_728 * 8) / 1e12 * 1.25


def test_eager_scores_count_the_scale_and_mask_traffic_a_fused_kernel_does_not():
    from costmodel import symbols as S
    from costmodel.tree import CostModel, profile_for

    cfg = load_preset("llama2-7b")
    subs = {S.b: 1, S.n: 100, S.e: 2, S.h: 32, S.h_kv: 32, S.d_h: 128, S.L_dec: 32}
    for attention, per_pair in (("eager", 2 * 2 * 2), ("sdpa", 0)):
        model = CostModel(cfg, profile_for(cfg, Workload(seq_len=100, attention=attention)))
        other = model.total("bytes_other", model.select(name="scores")).xreplace(subs)
        # Llama scales (a mul) and masks (an add) the 32 x 100 x 100 scores; each reads and
        # writes them in bf16.
        assert other == per_pair * 32 * 100 * 100 * 32  # x 32 layers


def test_hardware_without_a_vector_peak_uses_its_fp32_peak():
    hardware = Hardware.from_dict({"name": "x", "flops_per_s": {"fp32": 5e12, "bf16": 8e13},
                                   "bandwidth_bytes_per_s": 1e12, "memory_bytes": 2**30}, "test")
    assert hardware.vector_flops_per_s == 5e12
    assert load_hardware("a100-80gb").vector_flops_per_s == 19.5e12  # FP32 non-tensor, datasheet


def test_a_stale_or_broken_local_calibration_asks_for_a_new_one(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cache = tmp_path / "transformer-costmodel" / "local.json"
    cache.parent.mkdir()
    old = {"name": "local", "flops_per_s": {"fp32": 1.4e11}, "bandwidth_bytes_per_s": 2e10,
           "memory_bytes": 2**34}  # written before the vector peak existed
    for text in (json.dumps(old), "{not json"):
        cache.write_text(text)
        assert cli.main(["simulate", "--model", "gpt2", "--hardware", "local"]) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "hardware --measure" in err


@pytest.mark.slow
def test_hardware_measure_caches_local_and_simulate_reads_it(tmp_path, monkeypatch, capsys):
    # The calibration itself (about 15 s): what it writes is a preset that simulate accepts.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cli.main(["simulate", "--model", "gpt2", "--hardware", "local"]) == 2
    assert "hardware --measure" in capsys.readouterr().err
    assert cli.main(["hardware", "--measure", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    local = rows["local"]
    assert local["flops_per_s"]["fp32"] > local["vector_flops_per_s"] > 0
    assert local["bandwidth_bytes_per_s"] > 0
    assert (tmp_path / "transformer-costmodel" / "local.json").is_file()
    assert cli.main(["simulate", "--model", "gpt2", "--hardware", "local", "--dtype", "fp32",
                     "--prompt", "64", "--gen", "4", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["hardware"]["vector_flops_per_s"] == local["vector_flops_per_s"]
    assert result["decode"]["first_token"]["bound"] == "memory"


def test_a_dynamic_cache_copies_itself_every_decode_step():
    # Llama-2-7B, bf16, b = 1, context 4096: the cache holds 32 layers x 2 x 4096 x 4096 x 2 B
    # = 2 GiB. Attention reads it once a step; torch.cat (DynamicCache) also reads and writes it
    # all, so a dynamic cache moves 4 GiB more than a static one.
    hardware = load_hardware("h100-sxm")
    cfg = load_preset("llama2-7b")
    dynamic = Roofline(cfg, hardware, "bf16", kv_cache="dynamic").decode(1, 4096)[0]
    static = Roofline(cfg, hardware, "bf16", kv_cache="static").decode(1, 4096)[0]
    assert dynamic.bytes - static.bytes == 2 * 32 * 2 * 4096 * 4096 * 2
    with pytest.raises(ConfigError, match="kv_cache"):
        Roofline(cfg, hardware, kv_cache="paged")


def test_recomputation_reruns_the_forward_of_what_it_recomputes():
    from costmodel.evaluate import exact, values
    from costmodel.tree import CostModel, profile_for

    cfg, hardware = load_preset("llama2-7b"), load_hardware("a100-80gb")
    steps = {r: simulate_training(cfg, Workload(seq_len=4096, recompute=r), hardware)["step"]
             for r in ("none", "selective", "full")}
    assert steps["none"]["seconds"] < steps["selective"]["seconds"] < steps["full"]["seconds"]
    workload = Workload(seq_len=4096)
    model = CostModel(cfg, profile_for(cfg, workload))
    subs = values(cfg, workload)
    layers = [leaf for leaf in model.leaves if leaf.in_layer]
    forward = exact(model.total("flops_matmul", layers) + model.total("flops_other", layers), subs)
    outside = [leaf for leaf in model.leaves if not leaf.in_layer and leaf.part != "optimizer"]
    head = exact(model.total("flops_matmul", outside) + model.total("flops_other", outside), subs)
    core = exact(sum(model.total(q, model.select(name=("scores", "softmax", "weighted_sum")))
                     for q in ("flops_matmul", "flops_other")), subs)
    # Full: one more forward of every block of a layer (what it checkpoints: Megatron-LM's
    # _checkpointed_forward; not the embedding, final norm, head or loss); selective: of the
    # attention core only.
    assert head > 0.01 * forward  # the head's 2 n d V is not rerun
    assert steps["full"]["flops"] - steps["none"]["flops"] == pytest.approx(forward, rel=1e-12)
    assert steps["selective"]["flops"] - steps["none"]["flops"] == pytest.approx(core, rel=1e-12)


def test_launch_options_set_the_hardware_files_launch_figures(capsys):
    """--graph-kernel-gap charges each kernel of a graphed decode step; --launch-overhead replaces
    the per-block overhead of an eager step; a negative one is one line and exit 2. Llama-2-7B under
    simulate's default eager attention, per layer: norm 1, q/k/v 3, rotary 1, scores 2 (the product
    and a memory-bound pass), softmax 1, weighted sum 1, output 1, residual 1, norm 1, the gated
    MLP's 3 products and its activation 4, residual 1: 17 kernels in 11 active blocks; with the
    embedding, final norm and head, 32 x 17 + 3 = 547 kernels and 32 x 11 + 3 = 355 blocks."""
    from tests.cli_run import run_main

    base = ["simulate", "--model", "llama2-7b", "--hardware", "a100-80gb", "--prompt", "5", "--gen", "200",
            "--kv-cache", "static", "--json"]

    def first_step(*extra: str) -> float:
        code, out, _ = run_main([*base, *extra], capsys)
        assert code == 0
        return json.loads(out)["decode"]["first_token"]["seconds"]

    graphed = first_step("--cuda-graphs")  # the a100-80gb file's 1.34 us a kernel (gpu-benches)
    floor = 547 * 1.34e-6
    assert first_step("--cuda-graphs", "--graph-kernel-gap", "2e-6") - graphed == pytest.approx(547 * 2e-6 - floor,
                                                                                                rel=1e-9)
    eager = first_step()  # the a100-80gb file's 10 us per block
    assert eager - graphed == pytest.approx(355 * 1e-5 - floor, rel=1e-9)
    assert first_step("--launch-overhead", "3e-5") - graphed == pytest.approx(355 * 3e-5 - floor, rel=1e-9)
    code, out, err = run_main([*base, "--launch-overhead", "-1"], capsys)
    assert code == 2 and err.count("\n") == 1 and "--launch-overhead" in err


@pytest.mark.parametrize("args, named", [
    (["--all-reduce", "intra-node"], "--all-reduce"),  # says how a layout's collectives run, not which layout
    (["--graph-kernel-gap", "1e-6"], "--graph-kernel-gap"),  # without --cuda-graphs
    (["--graph-kernel-gap", "1e-6", "--cuda-graphs", "--time-model", "roofline"], "--graph-kernel-gap"),
    (["--train", "--price", "2"], "add --tokens"),  # a price without tokens was dropped unread
    (["--train", "--tp", "2", "--price", "2"], "add --tokens"),
])
def test_options_that_would_be_ignored_are_refused(capsys, args, named):
    from tests.cli_run import run_main

    code, out, err = run_main(["simulate", "--model", "llama2-7b", *args], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and named in err


def test_a_layout_decode_says_what_it_ran_and_the_api_keeps_its_kv_cache(capsys):
    """With --tp the report's second line names the attention, the KV cache, the weights and the
    CUDA graphs (it said only bf16, whatever --weight-dtype); costmodel.simulate with a layout
    once dropped kv_cache: a static cache's step is the command's, and faster than a dynamic
    cache's, which copies the whole cache each step."""
    import costmodel
    from tests.cli_run import run_main

    args = ["simulate", "--model", "llama2-7b", "--hardware", "a100-80gb", "--tp", "2", "--prompt", "512",
            "--gen", "256", "--attention", "eager", "--kv-cache", "static"]
    code, out, _ = run_main([*args, "--weight-dtype", "int4", "--cuda-graphs"], capsys)
    assert code == 0 and out.splitlines()[1] == ("prompt 512, generate 256, attention eager, static KV cache, "
                                                 "weights int4 g128, CUDA graphs")  # int4's default group
    code, out, _ = run_main([*args, "--json"], capsys)
    command = json.loads(out)["token"]["seconds_per_token"]
    run = {cache: costmodel.simulate("llama2-7b", "a100-80gb", layout={"tp": 2}, prompt=512, gen=256,
                                     attention="eager", kv_cache=cache).to_dict()["token"]["seconds_per_token"]
           for cache in ("static", "dynamic")}
    assert run["static"] == command and run["static"] < run["dynamic"]
