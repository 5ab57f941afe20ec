"""The published runs beyond Narayanan's and Korthikanti's tables (issue 18): each with its source
and stated layout, computed under both time models and kept whatever the error."""

from __future__ import annotations

import json
import re

import pytest

import cli
from costmodel.config import Workload
from reports.published_runs import other_runs_data


def test_every_run_has_a_source_and_its_stated_layout():
    data = other_runs_data()
    assert len(data["runs"]) >= 8
    for run in data["runs"]:
        source = data["sources"][run["id"].split()[0]]
        assert source["source"] and source["hardware"] and "assumed" in source
        assert run["kind"] in ("decode", "train") and run["tp"] >= 1
        if run["kind"] == "train":
            assert run["tp"] * run["pp"] * run["dp"] * run.get("cp", 1) == run["gpus"]


@pytest.mark.slow
def test_the_runs_are_computed_under_both_models(capsys, published_tables):
    rows = {r["run"]: r for r in published_tables["other_runs"]}  # other_runs(), once a test process (conftest.py)
    expressible = [r for r in rows.values() if r["not_expressible"] is None]
    assert len(expressible) >= 8
    assert all(r["roofline"] > 0 and r["kernels"] > 0 for r in expressible)
    # Batch-1 bf16 decoding reads every weight once a token: the two models differ in the rate
    # the weights move at (the roofline: 0.8 of the A100's 2,039 GB/s; the kernel model: its
    # measured read-and-reduce rate, BabelStream's Dot, 1,586.9 GB/s, a100-80gb.json) and in the
    # kernel model's fixed terms (gpu-benches, a100_80_graph.txt): the 1.34 us floor of each of a
    # token's 32 x 10 + 3 graphed kernels (compiled since session 39: each layer's two RMSNorms inside the residual
    # adds' kernels; 32 x 12 + 3 before) and the 1.96 us DRAM start of its 32 x 6 + 1 GEMMs and
    # attention calls (gpt-fast's model.py: wqkv, wo, w1, w3, w2 and the attention a layer, the head;
    # kernel_facts.json fused_projections). The row's rate is end to end: its decode steps alone
    # (rate "decode") are weighed; the roofline, which has no torch.compile, reads the row uncompiled.
    from reports.published_decode import decode_run
    from reports.published_runs import other_runs_data
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == "gpt-fast llama2-7b bf16")
    steps = dict(data["sources"]["gpt-fast"], rate="decode")
    uncompiled = dict(steps, compiled=False, eager_prefill=False)
    roofline, kernels = decode_run(run, uncompiled, "roofline"), decode_run(run, steps, "kernels")
    per_token = 1 / roofline * (0.8 * 2039) / 1586.9 + 323 * 1.34e-6 + 193 * 1.96e-6
    assert 1 / kernels == pytest.approx(per_token, rel=0.002)
    # Quantized weights in a parallel layout: each rank reads its int4 shards, a quarter of the
    # bf16 ones' bytes, so the int4 tp 8 run is faster than the bf16 tp 8 one (the kernel model's alone since both are
    # compiled, session 39: the roofline has no torch.compile, and says so)
    quantized, bf16 = rows["gpt-fast llama2-70b int4 g32 tp8"], rows["gpt-fast llama2-70b tp8"]
    assert "--compile" in quantized["not_expressible"] and quantized["roofline"] is None
    assert quantized["kernels"] > bf16["kernels"]
    assert cli.main(["published", "--json"]) == 0  # it prints the same computation (the fixture): its JSON is checked
    tables = json.loads(capsys.readouterr().out)
    assert len(tables["other_runs"]) == len(rows)
    assert all("tflops_kernels" in r for r in tables["narayanan_2021_table_1"])
    hours = [r for r in tables["other_runs"] if r["unit"] == "GPU-hours"]
    assert len(hours) == 40 and all(r["not_modelled"] for r in hours)  # session 41: OLMoE-1B-7B's (wt41_unseent); session 38: Olmo 3's two (wt38_unseent2); session 28: 5 more; session 30: fms-fsdp, Falcon-180B;
    # session 31: StarCoderBase (one KV head under TP 4: expressible since wt31_express, layout/replicated_kv.py),
    # Falcon-7B and -40B, MPT-7B, 5 Phi cards; session 32: the Llama 3, 3.2 and 4 cards' 2 rows each; session 33:
    # GLM-130B's, LLaMA-1's four and OPT-175B's (LLaMA's Table 15), Granite 3.0 8B's; session 36: StableLM-3B-4E1T's
    # session 38: Olmo 3's two rows ran OLMo-core compiled: the roofline has no torch.compile (the kernel model
    # expresses them; their not_expressible names --compile, as a compiled speed row's does)
    assert [r["run"] for r in hours if r["not_expressible"]] == ["gpu-hours-olmo3 7b 5.93T tokens",
                                                                 "gpu-hours-olmo3 32b 5.5T tokens"]
    assert all(r["kernels"] and "--compile" in r["not_expressible"] for r in hours if r["not_expressible"])


def test_flash_attention_2s_long_runs_are_faster_under_the_kernel_model_as_published():
    """FlashAttention-2, Table 1: at 8k tokens the dense-convention TFLOP/s rise (causal blocks
    skipped, the kernel at its long-sequence efficiency); the kernel model follows, the roofline
    (causal attention costed as dense, one efficiency) predicts a drop."""
    from reports.published_runs import train_run

    data = other_runs_data()
    source = data["sources"]["flash-attention-2"]
    runs = {r["id"]: r for r in data["runs"] if r["id"].startswith("flash-attention-2 gpt3-1.3b")}
    short, long = runs["flash-attention-2 gpt3-1.3b 2k"], runs["flash-attention-2 gpt3-1.3b 8k"]
    assert long["published_tflops_per_gpu"] > short["published_tflops_per_gpu"]
    assert train_run(long, source, "kernels") > train_run(short, source, "kernels")
    assert train_run(long, source, "roofline") < train_run(short, source, "roofline")


def test_the_summary_counts_every_comparison_as_a_speed_ratio():
    """Narayanan's TFLOP/s as they are, Korthikanti's seconds inverted (published / ours is our
    speed over theirs), the other runs' expressible rows; the frontier left out."""
    from reports.published_runs import speed_ratios, summary

    tables = {
        "narayanan_2021_table_1": [{"tflops_published": 100, "tflops_ours": 90, "tflops_kernels": 104}],
        "korthikanti_2022_table_5": [{"full_published": 10.0, "full_ours": 12.5, "full_kernels": 10.0,
                                      "present_published": 8.0, "present_ours": 10.0, "present_kernels": 5.0}],
        "other_runs": [{"published": 50, "roofline": 100, "kernels": 56, "not_expressible": None},
                       {"published": 50, "roofline": None, "kernels": None, "not_expressible": "quantized tp"}],
        "frontier": [{"ratio": 9.0}],
    }
    assert speed_ratios(tables, "roofline") == [0.9, 0.8, 0.8, 2.0]
    assert speed_ratios(tables, "kernels") == [1.04, 1.0, 1.6, 1.12]
    kernels = summary(tables)["kernels"]
    assert kernels["comparisons"] == 4
    assert kernels["median_error"] == pytest.approx((0.04 + 0.12) / 2)
    assert (kernels["lowest"], kernels["highest"]) == (1.0, 1.6)
    assert (kernels["within_0.75_1.33"], kernels["within_5%"], kernels["within_10%"]) == (3, 2, 2)
    assert summary(tables)["roofline"]["within_0.75_1.33"] == 3


# The training runs added from torchtitan, llm-foundry and BLOOM, typed here from their sources
# (published_runs.json "sources" cite each): the published figure, the layout (tp, pp, dp), the
# micro-batch, the global batch, the sequence and the recomputation as each source states them.
STATED = {
    # torchtitan docs/performance.md, Tables 1, 3, 4, 5 (TPS/GPU); sequences 8,192 (train_configs);
    # the 8B's train_configs/llama3_8b.toml (9dec370) lines 53-55: mode 'selective', selective_ac_option
    # 'op', torchtitan's op policy (costmodel/op_checkpoint.py)
    "torchtitan llama3.1-8b fsdp 8 GPUs": (5762, 1, 1, 8, 2, 16, 8192, "torchtitan-op"),
    "torchtitan llama3.1-8b fsdp compile 8 GPUs": (6667, 1, 1, 8, 2, 16, 8192, "torchtitan-op"),
    "torchtitan llama3.1-8b fsdp compile float8 8 GPUs": (8532, 1, 1, 8, 2, 16, 8192, "torchtitan-op"),
    "torchtitan llama3.1-8b fsdp 128 GPUs": (5605, 1, 1, 128, 2, 256, 8192, "torchtitan-op"),
    "torchtitan llama3.1-70b fsdp32 tp8 compile float8 256 GPUs": (829, 8, 1, 32, 16, 512, 8192, "full"),
    # local batch 32 in 8 micro-batches (1F1B: 8 stages) or 16 (interleaved: 16 stages)
    "torchtitan llama3.1-405b fsdp8 tp8 pp8 1f1b compile float8 512 GPUs": (100, 8, 8, 8, 4, 256, 8192, "full"),
    "torchtitan llama3.1-405b fsdp8 tp8 pp8 interleaved compile float8 512 GPUs": (128, 8, 8, 8, 2, 256, 8192, "full"),
    # llm-foundry scripts/train/benchmarking/README.md: Throughput (T/s/GPU); the global batch is
    # MicroBatchSize x GradAccum x # GPUs; Activation Checkpointing True -> full
    "llm-foundry mpt-1b 2048 8xh100-sxm": (45455, 1, 1, 8, 14, 112, 2048, "none"),
    "llm-foundry mpt-7b 2048 8xh100-sxm": (10643, 1, 1, 8, 6, 48, 2048, "none"),
    "llm-foundry mpt-7b 32768 8xh100-sxm": (3318, 1, 1, 8, 2, 32, 32768, "full"),
    "llm-foundry mpt-13b 2048 64xh100-sxm": (4800, 1, 1, 64, 2, 128, 2048, "none"),
    "llm-foundry mpt-30b 2048 32xh100-sxm": (2308, 1, 1, 32, 14, 1344, 2048, "full"),
    "llm-foundry mpt-70b 2048 64xh100-sxm": (1039, 1, 1, 64, 8, 2048, 2048, "full"),
    "llm-foundry mpt-7b 2048 8xa100-80gb": (4641, 1, 1, 8, 6, 96, 2048, "none"),
    "llm-foundry mpt-30b 2048 8xa100-80gb": (916, 1, 1, 8, 3, 504, 2048, "full"),
    # the same README's H100 80GB BF16 table, rows added in session 24 (sweep.sh lines 45, 78, 100 at 061f2c7)
    "llm-foundry mpt-3b 2048 64xh100-sxm": (22525, 1, 1, 64, 6, 1152, 2048, "none"),
    "llm-foundry mpt-13b 4096 8xh100-sxm": (4717, 1, 1, 8, 10, 240, 4096, "full"),
    "llm-foundry mpt-760m 32768 8xh100-sxm": (16291, 1, 1, 8, 1, 16, 32768, "none"),
    # torchtitan benchmarks/llama3_8b_h200_2025-06_torchtitan.md: TPS/GPU at NUM_NODES 4 and 8, local
    # batch 2, llama3_8b.toml at e7c0cae (seq_len 8192, FSDP over all GPUs, selective 'op')
    "torchtitan-h200 llama3.1-8b fsdp compile float8 32 GPUs": (10938, 1, 1, 32, 2, 64, 8192, "torchtitan-op"),
    "torchtitan-h200 llama3.1-8b fsdp compile float8 64 GPUs": (10753, 1, 1, 64, 2, 128, 8192, "torchtitan-op"),
    # BLOOM tr11 README: 104.70 s an iteration of 2,048 x 2,048 tokens on 384 GPUs; TP 4 PP 12 DP 8 MBS 2
    "bloom 176b 384 GPUs": (2048 * 2048 / (104.70 * 384), 4, 12, 8, 2, 2048, 2048, "full"),
}


def _runs() -> tuple[dict, dict]:
    data = other_runs_data()
    return {r["id"]: r for r in data["runs"]}, data["sources"]


@pytest.mark.parametrize("run_id", sorted(STATED))
def test_each_added_run_is_expressed_as_its_source_states_it(run_id):
    check_stated(run_id, STATED[run_id])


def check_stated(run_id: str, stated: tuple) -> None:
    """The row as its source states it: (published, tp, pp, dp, micro-batch, global batch,
    sequence, recomputation); compile, FP8 recipe and CP degree as its id names them."""
    from reports.published_runs import train_setup

    runs, sources = _runs()
    run = runs[run_id]
    published, tp, pp, dp, micro, global_batch, seq_len, recompute = stated
    assert run["published_tokens_per_s_per_gpu"] == pytest.approx(published, abs=0.005)
    estimate, hardware, options = train_setup(run, sources[run_id.split()[0]])
    layout, workload = estimate.layout, estimate.workload
    assert (layout.tp, layout.pp, layout.dp, layout.gpus) == (tp, pp, dp, run["gpus"])
    assert workload.batch == micro and workload.batch * layout.microbatches * layout.dp == global_batch
    assert (workload.seq_len, workload.recompute) == (seq_len, recompute)
    assert hardware.name == run.get("hardware", sources[run_id.split()[0]]["hardware"])
    assert options.get("compiled", False) == ("compile" in run_id)
    assert layout.fp8 == (("rowwise" if "rowwise" in run_id else "tensorwise") if "float8" in run_id else None)
    cp = re.search(r" cp(\d+) ", run_id)
    assert layout.cp == (int(cp.group(1)) if cp else 1)
    # llm-foundry's table ran MPT's Triton FlashAttention (sweep.sh passes no --attn_impl;
    # submit_benchmarks.py's default is 'triton'), timed as FlashAttention (v1); the rest FlashAttention-2.
    assert options.get("attention_kernel", "flash2") == ("flash1" if run_id.startswith("llm-foundry") else "flash2")


def test_llm_foundrys_mpt_runs_time_their_attention_as_flash_attention_v1():
    """The kernel model's step of MPT-7B at 2k on 8 H100s with the attention kernel its source
    states (flash1: 108 TFLOP/s forward plus backward at 2k, the FlashAttention-2 paper's H100
    figure) is slower than with FlashAttention-2 (265) by the attention's extra time alone."""
    from costmodel.layout.kernel_step import KernelStepTime
    from reports.published_runs import train_setup

    runs, sources = _runs()
    estimate, hardware, options = train_setup(runs["llm-foundry mpt-7b 2048 8xh100-sxm"], sources["llm-foundry"])
    assert options["attention_kernel"] == "flash1"
    from costmodel.kernel_time import AttentionCall, KernelTimer

    v1 = KernelStepTime(estimate, hardware, **options)
    v2 = KernelStepTime(estimate, hardware, **dict(options, attention_kernel="flash2"))
    # 32 layers, one micro-batch of 6 sequences, 32 causal heads of 128: each layer's call forward
    # and backward under each kernel; nothing else in the step moves.
    call = AttentionCall(6, 32, 2048, 2048, 128, causal=True)
    def layer(kernel: str) -> float:
        timer = KernelTimer(hardware, "bf16", "flash", attention_kernel=kernel, sustained=True)  # a training step's clock
        return timer.attention_seconds(call) + timer.attention_seconds(call, backward=True)
    extra = v1.step()["seconds"] - v2.step()["seconds"]
    assert extra == pytest.approx(32 * (layer("flash1") - layer("flash2")), rel=1e-6)
    # 12,983 -> 11,198 tokens/s a GPU since FSDP2's copies and edges (0.167, 13,630 -> 11,679, before
    # them; 0.151, 13,808 -> 11,994, before attention took the sustained clock)
    assert extra / v2.step()["seconds"] == pytest.approx(0.159, abs=0.005)


def test_the_added_models_have_their_sources_parameter_counts():
    """llm-foundry's NumParams column and BLOOM's 176,247M, exactly: a wrong width, depth,
    vocabulary, position table (MPT's is max_seq_len rows: the 32k row has 6,784,688,128) or bias
    would miss. Llama 3.1's 8B, 70B and 405B (Llama 3 paper, Table 3) within 1%."""
    from costmodel.estimation import Estimate
    from reports.published_runs import train_setup

    runs, sources = _runs()
    counted = 0
    for run_id, run in runs.items():
        if run_id not in STATED:
            continue
        estimate, _, _ = train_setup(run, sources[run_id.split()[0]])
        params = Estimate(estimate.cfg, Workload(seq_len=8)).total("params")
        if "params" in run:
            assert params == run["params"], run_id
            counted += 1
        else:
            stated = {"llama3-8b": 8e9, "llama3-70b": 70e9, "llama3.1-405b": 405e9}[run["model"]]
            assert params == pytest.approx(stated, rel=0.01), run_id
    assert counted == 12
    # the README's NumParams of the rows added in session 24: MPT-3B at 2k, 13B at 4k, 760M at 32k
    assert [runs[f"llm-foundry mpt-{m} 8xh100-sxm"]["params"] for m in ("13b 4096", "760m 32768")] == [
        12_864_440_320, 807_656_448]
    assert runs["llm-foundry mpt-3b 2048 64xh100-sxm"]["params"] == 2_651_837_440
    assert runs["llm-foundry mpt-7b 32768 8xh100-sxm"]["params"] == 6_784_688_128
    assert runs["bloom 176b 384 GPUs"]["params"] == 176_247_271_424


def _torchtitan_split_points(layers: int, stages: int) -> list[int]:
    """torchtitan's generate_split_points (parallelisms/pipelining_utils.py at 9dec370): the first
    stage layers // stages, the middle ones one more while the remainder lasts, the last the rest."""
    base, extra = divmod(layers, stages)
    sizes = [base]
    for _ in range(stages - 2):
        sizes.append(base + 1 if extra > 0 else base)
        extra -= 1 if extra > 0 else 0
    return sizes + [layers - sum(sizes)]


def test_the_pipelined_runs_split_their_layers_as_their_code_does():
    runs, _ = _runs()
    one_f_one_b = runs["torchtitan llama3.1-405b fsdp8 tp8 pp8 1f1b compile float8 512 GPUs"]
    interleaved = runs["torchtitan llama3.1-405b fsdp8 tp8 pp8 interleaved compile float8 512 GPUs"]
    assert one_f_one_b["stage_layers"] == _torchtitan_split_points(126, 8) == [15, *[16] * 6, 15]
    assert interleaved["stage_layers"] == _torchtitan_split_points(126, 16) == [7, *[8] * 14, 7]
    # the default micro-batches are the stages: 32 sequences a rank in 8 of 4 and 16 of 2
    assert 32 // len(one_f_one_b["stage_layers"]) == one_f_one_b["micro_batch"]
    assert 32 // len(interleaved["stage_layers"]) == interleaved["micro_batch"]
    # BLOOM: embeddings counted as layers ('type:transformer|embedding'), 72 over 12 stages
    assert runs["bloom 176b 384 GPUs"]["stage_layers"] == [5, *[6] * 10, 5]


def test_torchtitans_gpus_are_the_h100s_its_page_describes():
    """96 GB of HBM2e at 2.4 TB/s under a 500 W cap: the compute peak scaled by the cube root of
    500/700 (Hardware.power_limit_watts), the bandwidth and memory as stated."""
    from costmodel.hardware import load_hardware
    from reports.published_runs import run_hardware

    _, sources = _runs()
    hardware, sxm = run_hardware(sources["torchtitan"]), load_hardware("h100-sxm")
    assert hardware.bandwidth_bytes_per_s == 2.4e12 and hardware.memory_bytes == 96 * 2**30
    assert hardware.peak("bf16") == pytest.approx(sxm.peak("bf16") * (500 / 700) ** (1 / 3), rel=1e-9)
    # the async-TP benchmark of June 2025 ran on the same hosts: the same file
    assert run_hardware(sources["torchtitan-asynctp"]) == hardware


@pytest.mark.slow
def test_a_compiled_run_is_the_kernel_models_alone(published_tables):
    """The roofline has no torch.compile: the row says so and the summary leaves it out of the
    roofline's count, not the kernel model's."""
    from reports.published_runs import COST_UNITS, speed_ratios

    rows = {r["run"]: r for r in published_tables["other_runs"]}
    compiled = rows["torchtitan llama3.1-8b fsdp compile 8 GPUs"]
    assert compiled["roofline"] is None and compiled["kernels"] > 0
    assert "--compile" in compiled["not_expressible"]
    tables = {"narayanan_2021_table_1": [], "korthikanti_2022_table_5": [], "other_runs": list(rows.values())}
    assert len(speed_ratios(tables, "kernels")) - len(speed_ratios(tables, "roofline")) == \
        sum(r["roofline"] is None and r["kernels"] is not None and r["unit"] not in COST_UNITS  # the speed rows
            for r in rows.values())


# NVIDIA's tuned stack (issue 18): Megatron-Bridge's performance summary archive
# (docs/performance-summary-archive.md), typed here from its rows: (Tokens / sec / GPU, Model TFLOP /
# sec / GPU, #-GPUs, TP, PP, CP, VP, MBS, GBS, Sequence Length, FSDP, system). FSDP 0 is DDP with
# Megatron's distributed optimizer (ZeRO-1); the 8B H100 row's FSDP 8 is one sharding group of 8.
MEGATRON_BRIDGE = {
    # 25.09 NeMo Container, System: DGX-H100 (no precision printed; the recipes' FP8 layouts)
    "megatron-bridge 25.09 llama3-8b fp8 fsdp 8xh100": (14079, 725, 8, 1, 1, 1, 1, 1, 128, 8192, 8, "h100-sxm"),
    "megatron-bridge 25.09 llama3-70b fp8 64xh100": (1619, 727, 64, 4, 8, 1, 5, 1, 128, 8192, 0, "h100-sxm"),
    # 25.11 NeMo Container, System: DGX-H100 (FP8-CS)
    "megatron-bridge 25.11 llama3-8b fp8-cs fsdp 8xh100": (14451, 744, 8, 1, 1, 1, 1, 1, 128, 8192, 8, "h100-sxm"),
    "megatron-bridge 25.11 llama3-70b fp8-cs 64xh100": (1602, 719, 64, 4, 8, 1, 5, 1, 128, 8192, 0, "h100-sxm"),
    "megatron-bridge 25.11 llama3.1-405b fp8-cs 1024xh100": (292, 737, 1024, 8, 8, 2, 8, 1, 512, 8192, 0, "h100-sxm"),
    # 26.04.01 NeMo Container, Model: LLAMA3_70B and LLAMA3.1_405B, DGX-H100 (FP8)
    "megatron-bridge 26.04.01 llama3-70b fp8-cs 64xh100": (1664, 731, 64, 4, 8, 1, 5, 1, 256, 8192, 0, "h100-sxm"),
    "megatron-bridge 26.04.01 llama3.1-405b fp8-cs 1024xh100": (328, 827, 1024, 8, 8, 2, 8, 1, 1536, 8192, 0,
                                                                 "h100-sxm"),
    # 25.11 NeMo Container, System: DGX-B200 (the FP8-CS figures, not the parenthesised FP8-MX ones)
    "megatron-bridge 25.11 llama3-8b fp8-cs 8xb200": (30624, 1576, 8, 1, 1, 1, 1, 2, 128, 8192, 0, "b200"),
    "megatron-bridge 25.11 llama3.1-405b fp8-cs 128xb200": (661, 1667, 128, 4, 8, 2, 8, 1, 64, 8192, 0, "b200"),
    # 25.11 NeMo Container, System: DGX-GB300 and DGX-GB200 (FP8-CS; the 8B's parenthesised FP8-MX
    # figures left). Their LLAMA3_70B rows (FSDP 64) are not here: the recipes offload 20 and 40
    # layers' activations to the host (cpu_offloading_num_layers), which the model does not express.
    "megatron-bridge 25.11 llama3-8b fp8-cs 8xgb300": (37556, 1933, 8, 1, 1, 1, 1, 2, 128, 8192, 0, "gb300"),
    "megatron-bridge 25.11 llama3.1-405b fp8-cs 256xgb300": (999, 2522, 256, 2, 8, 2, 4, 1, 1536, 8192, 0, "gb300"),
    "megatron-bridge 25.11 llama3-8b fp8-cs 8xgb200": (31508, 1622, 8, 1, 1, 1, 1, 2, 128, 8192, 0, "gb200"),
    "megatron-bridge 25.11 llama3.1-405b fp8-cs 256xgb200": (813, 2053, 256, 4, 16, 1, 4, 1, 1536, 8192, 0, "gb200"),
    # 26.04.01 NeMo Container, Model: LLAMA3.1_405B, DGX-GB300 and DGX-GB200 (FP8)
    "megatron-bridge 26.04.01 llama3.1-405b fp8-cs 256xgb300": (1024, 2617, 256, 4, 8, 1, 4, 1, 1536, 8192, 0,
                                                                  "gb300"),
    "megatron-bridge 26.04.01 llama3.1-405b fp8-cs 256xgb200": (864, 2144, 256, 4, 16, 1, 4, 1, 1536, 8192, 0,
                                                                  "gb200"),
    # 25.09 NeMo Container, System: DGX-GB200, LLAMA3_8B (no precision printed; the first figure of
    # '31357 (29925)'); its 70B and 405B rows (FSDP 64) are left out as the 25.11 70B rows are
    "megatron-bridge 25.09 llama3-8b fp8 8xgb200": (31357, 1614, 8, 1, 1, 1, 1, 2, 128, 8192, 0, "gb200"),
    # 26.02, 26.02.01 and 26.06 NeMo Containers, Model: LLAMA3.1_405B, DGX-GB300 and DGX-GB200 (FP8)
    "megatron-bridge 26.02 llama3.1-405b fp8-cs 256xgb300": (988, 2495, 256, 4, 8, 1, 4, 1, 1536, 8192, 0, "gb300"),
    "megatron-bridge 26.02 llama3.1-405b fp8-cs 256xgb200": (793, 2004, 256, 4, 16, 1, 4, 1, 1536, 8192, 0, "gb200"),
    "megatron-bridge 26.02.01 llama3.1-405b fp8-cs 256xgb300": (1024, 2585, 256, 2, 8, 2, 4, 1, 1536, 8192, 0,
                                                                  "gb300"),
    "megatron-bridge 26.02.01 llama3.1-405b fp8-cs 256xgb200": (818, 2063, 256, 4, 16, 1, 4, 1, 1536, 8192, 0,
                                                                  "gb200"),
    "megatron-bridge 26.06 llama3.1-405b fp8-cs 256xgb300": (1048, 2646, 256, 4, 8, 1, 4, 1, 1536, 8192, 0, "gb300"),
    "megatron-bridge 26.06 llama3.1-405b fp8-cs 256xgb200": (843, 2129, 256, 4, 16, 1, 4, 1, 1536, 8192, 0, "gb200"),
}


@pytest.mark.parametrize("run_id", sorted(MEGATRON_BRIDGE))
def test_each_megatron_bridge_row_is_expressed_as_the_page_states_it(run_id):
    """The JSON holds the page's row, and the built setup is that layout: Megatron-Core with the
    distributed optimizer (or FSDP where the row says so), sequence parallelism where tp > 1, the
    interleaved schedule where VP is given, FP8 current scaling as tensorwise, the ring CP. The
    405B rows run CP 2 with TP > 1 and so with sequence parallelism, as Megatron-Core does (they
    were refused before CP with SP was modelled): each rank holds n / cp tokens, n / (cp tp) of
    them outside the tensor-parallel region."""
    from reports.published_runs import train_setup

    runs, sources = _runs()
    run, source = runs[run_id], sources["megatron-bridge"]
    tokens, tflops, gpus, tp, pp, cp, vp, micro, global_batch, seq_len, fsdp, system = MEGATRON_BRIDGE[run_id]
    assert (run["published_tokens_per_s_per_gpu"], run["published_model_tflops_per_gpu"]) == (tokens, tflops)
    assert "published_tflops_per_gpu" not in run  # compared in tokens/s: no FLOP convention in it
    assert (run["gpus"], run["tp"], run["pp"], run.get("cp", 1), run.get("virtual_stages", 1)) == (gpus, tp, pp, cp, vp)
    assert run["tp"] * run["pp"] * run.get("cp", 1) * run["dp"] == gpus
    assert (run["micro_batch"], run["global_batch"], run["seq_len"]) == (micro, global_batch, seq_len)
    assert run.get("hardware", source["hardware"]) == system
    estimate, hardware, options = train_setup(run, source)
    if cp > 1:
        assert estimate.layout.sp and estimate.values["n"] == seq_len // cp
    layout, workload = estimate.layout, estimate.workload
    assert (layout.tp, layout.pp, layout.cp, layout.dp, layout.virtual_stages) == (tp, pp, cp, run["dp"], vp)
    assert workload.batch == micro and workload.batch * layout.microbatches * layout.dp == global_batch
    # the 25.11 8B H100 recipe's recompute_num_layers 5 (llama3_workload_base_configs.py line 232 at
    # 97ad8cc6f): Megatron's block method, the first 5 layers recomputed; no other row recomputes
    partial = ("full", 5) if run_id == "megatron-bridge 25.11 llama3-8b fp8-cs fsdp 8xh100" else ("none", None)
    assert (workload.recompute, workload.recompute_layers) == partial
    assert (workload.seq_len, workload.attention) == (seq_len, "flash")
    assert layout.schedule == ("interleaved" if vp > 1 else "1f1b") and layout.sp == (tp > 1)
    assert (layout.framework, layout.zero) == (("megatron", 3) if fsdp else ("megatron", 1))  # 3: Megatron-FSDP
    assert layout.fp8 == "current" and layout.cp_rotate == "ring" and hardware.name == system
    # The recipes' communication overlap: tp_comm_overlap (userbuffers) on every tp > 1 Llama recipe,
    # and overlap_p2p_comm wherever pp > 1 and vp > 1 (Megatron-Bridge training/comm_overlap.py).
    if tp > 1 and pp > 1 and vp > 1:
        overlap = options.pop("overlap")
        assert (overlap.tp, overlap.pp, overlap.dp, overlap.prefetch) == (1.0, 1.0, 2 / 3, True)
        assert overlap.slowdown == 0.189
    # Transformer Engine's FusedAttention (cuDNN), preferred on Hopper+ (TE utils.py), in BF16.
    assert options == {"autocast": False, "attention_kernel": "cudnn"}


def test_megatron_bridges_405b_splits_count_the_embedding_and_the_loss_as_layers():
    """account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split (the 405B
    recipe, src/megatron/bridge/recipes/llama/llama3.py): 126 layers + 2 over PP x VP chunks,
    the same number each, so the first and last chunks hold one layer fewer: 64 chunks of 2 (PP 8 x
    VP 8, PP 16 x VP 4), 32 of 4 (the GB300's PP 8 x VP 4) or 128 of 1 (GB200 MXFP8/NVFP4, PP 16 x VP 8)."""
    runs, _ = _runs()
    splits = set()
    for run_id, run in runs.items():
        if run_id.startswith("megatron-bridge") and run["model"] == "llama3.1-405b":
            chunks = run["pp"] * run["virtual_stages"]
            each = (126 + 2) // chunks
            assert (126 + 2) % chunks == 0
            assert run["stage_layers"] == [each - 1, *[each] * (chunks - 2), each - 1]
            splits.add(tuple(run["stage_layers"]))
    assert splits == {(1, *[2] * 62, 1), (3, *[4] * 30, 3), (0, *[1] * 126, 0)}


# The classic runs (issue 18), typed from their papers (published_runs.json "sources" cite each):
# (published figure, its unit's key, GPUs, tp, pp, dp, micro-batch, global batch, sequence,
# recompute, the parameters the paper states in billions).
CLASSIC = {
    # OPT (arXiv 2205.01068) section 2.4: 992 A100s, up to 147 TFLOP/s; metaseq's launcher: model
    # parallel 8, (2M tokens // 124 replicas) // 2048 = 8 sequences a replica, --checkpoint-activations
    "opt 175b 992 GPUs": (147, "published_tflops_per_gpu", 992, 8, 1, 124, 8, 992, 2048, "full", 175),
    # LLaMA (arXiv 2302.13971) section 2.4: ~380 tokens/s/GPU on 2048 A100s; Table 2: 4M tokens a batch
    "llama 65b 2048 GPUs": (380, "published_tokens_per_s_per_gpu", 2048, 8, 1, 256, 8, 2048, 2048,
                            "none", 65.2),
    # MT-NLG (arXiv 2201.11990): batch 1,920 on 280, 350, 420 DGX A100s in 60.1, 50.2, 44.4 s; tp 8, pp 35
    "mt-nlg 530b 2240 GPUs": (1920 * 2048 / (60.1 * 2240), "published_tokens_per_s_per_gpu", 2240, 8, 35, 8, 1,
                              1920, 2048, "full", 530),
    "mt-nlg 530b 2800 GPUs": (1920 * 2048 / (50.2 * 2800), "published_tokens_per_s_per_gpu", 2800, 8, 35, 10, 1,
                              1920, 2048, "full", 530),
    "mt-nlg 530b 3360 GPUs": (1920 * 2048 / (44.4 * 3360), "published_tokens_per_s_per_gpu", 3360, 8, 35, 12, 1,
                              1920, 2048, "full", 530),
    # Nemotron-4 340B (arXiv 2406.11704) Table 2's last stage: DP 64, batch 2304, 8.0 s
    "nemotron-4 340b 6144 GPUs": (2304 * 4096 / (8.0 * 6144), "published_tokens_per_s_per_gpu", 6144, 8, 12, 64, 1,
                                  2304, 4096, "none", 340),
}


@pytest.mark.parametrize("run_id", sorted(CLASSIC))
def test_each_classic_run_is_expressed_as_its_paper_states_it(run_id):
    """The JSON holds the paper's figure and layout, the built setup is that layout, the model has
    the paper's parameter count (within 1%), and both time models express it."""
    from costmodel.estimation import Estimate
    from reports.published_runs import TRAIN_UNITS, train_setup

    runs, sources = _runs()
    run, source = runs[run_id], sources[run_id.split()[0]]
    published, key, gpus, tp, pp, dp, micro, global_batch, seq_len, recompute, billions = CLASSIC[run_id]
    assert run[key] == pytest.approx(published, abs=0.005)
    estimate, hardware, options = train_setup(run, source)
    layout, workload = estimate.layout, estimate.workload
    assert (layout.tp, layout.pp, layout.dp, layout.gpus) == (tp, pp, dp, gpus) and run["gpus"] == gpus
    assert workload.batch == micro and workload.batch * layout.microbatches * layout.dp == global_batch
    assert (workload.seq_len, workload.recompute) == (seq_len, recompute)
    params = Estimate(estimate.cfg, Workload(seq_len=8)).total("params")
    assert params == pytest.approx(billions * 1e9, rel=0.01)
    for model in ("roofline", "kernels"):
        assert TRAIN_UNITS[key][1](run, source, model) > 0


def test_the_classic_runs_hardware_and_precision_are_their_papers():
    """A100 80GB for OPT, LLaMA and MT-NLG (fp16 for OPT's memory-efficient fp16), H100 SXM for
    Nemotron-4; OPT's FSDP with its parameters kept from forward to backward (zero 2) without
    sequence parallelism; MT-NLG's DeepSpeed pipeline; Nemotron-4's interleaved 12-way pipeline,
    its squared ReLU and its 8 KV heads."""
    from reports.published_runs import train_setup

    runs, sources = _runs()
    built = {run_id: train_setup(runs[run_id], sources[run_id.split()[0]]) for run_id in CLASSIC}
    for run_id, (estimate, hardware, _) in built.items():
        assert hardware.name == ("h100-sxm" if run_id.startswith("nemotron") else "a100-80gb")
    opt, _, _ = built["opt 175b 992 GPUs"]
    assert (opt.layout.framework, opt.layout.zero, opt.layout.sp, opt.workload.dtype) == ("fsdp2", 2, False, "fp16")
    assert (opt.cfg.d_model, opt.cfg.n_heads, opt.cfg.n_layers, opt.cfg.activation) == (12288, 96, 96, "relu")
    mtnlg, _, _ = built["mt-nlg 530b 2240 GPUs"]
    assert (mtnlg.layout.framework, mtnlg.layout.schedule, mtnlg.cfg.d_model, mtnlg.cfg.n_layers) == (
        "deepspeed", "1f1b", 20480, 105)
    nemotron, _, _ = built["nemotron-4 340b 6144 GPUs"]
    assert (nemotron.layout.schedule, nemotron.layout.virtual_stages, nemotron.layout.sp) == ("interleaved", 8, True)
    assert (nemotron.cfg.activation, nemotron.cfg.n_kv_heads, nemotron.cfg.d_ff, nemotron.cfg.vocab_size) == (
        "relu2", 8, 73728, 256000)
    llama, _, options = built["llama 65b 2048 GPUs"]
    assert (llama.cfg.d_ff, llama.cfg.n_layers, options["attention_kernel"]) == (22016, 80, "flash1")
