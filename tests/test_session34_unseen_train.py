"""Session 34's unseen training rows (costmodel/published_runs.json sources "dgxc-24.11", "dgxc-24.11-nemotron",
"dgxc-24.11-gpt3", "dgxc-25.04", "dgxc-25.05-gb200" (typed before any was computed, 7b12efd1), "mlperf-v3.1-nvidia",
"mlperf-v3.1-azure", "mlperf-v4.0-nvidia", "mlperf-v4.0-smc" and "flagperf-aquila2-7b-a800" (typed before computed,
7432d54c)): each row's figure and layout as its source prints them, and the kernel model's ratios as first computed
(our speed over the published one), the estimate validate/FINDINGS.md quotes ("Unseen training rows, session 34")."""

from __future__ import annotations

import pytest

from reports.published_runs import run_kind, train_tokens
from tests.unseen_rows import assert_summaries, decode_groups, ratios, runs_of, source_of, train_setup_of

SOURCES = ("dgxc-24.11", "dgxc-24.11-nemotron", "dgxc-24.11-gpt3", "dgxc-25.04", "dgxc-25.05-gb200",
           "mlperf-v3.1-nvidia", "mlperf-v3.1-azure", "mlperf-v4.0-nvidia", "mlperf-v4.0-smc", "flagperf-aquila2-7b-a800")


def _runs() -> dict[str, dict]:
    return {r["id"]: r for s in SOURCES for r in runs_of(s)}


def test_the_dgxc_rows_are_the_readme_tables():
    """Tokens/s per GPU = the table's 'Throughput in tokens per second' over its GPUs; each table's smallest and
    largest full-model scale; the layouts of the tables' headers (v24.11.1) and configuration tables (v25.04.01, v25.05)."""
    runs = _runs()
    dgxc = {k: r for k, r in runs.items() if k.startswith("dgxc")}
    assert len(dgxc) == 44
    table = {"dgxc-24.11 llama3.1-8b bf16 8xh100": (81222, 12.91), "dgxc-24.11 llama3.1-70b fp8 2048xh100": (2945955, 11.39),
             "dgxc-24.11 llama3.1-405b bf16 2304xh100": (468646, 17.62),
             "dgxc-24.11-nemotron nemotron4-340b bf16 128xh100": (28432, 4.61),
             "dgxc-24.11-gpt3 gpt3-175b fp8 2048xh100": (1344328, 6.24),
             "dgxc-25.04 llama3.1-70b fp8 64xh100": (106346, 9.86), "dgxc-25.04 llama3.1-405b fp8 2048xh100": (667883, 12.56),
             "dgxc-25.05-gb200 llama3.1-405b bf16 128xgb200": (56092, 9.347),
             "dgxc-25.05-gb200 nemotron4-340b bf16 strong 512xgb200": (247656, 8.468)}
    for run_id, (throughput, seconds) in table.items():
        run = dgxc[run_id]
        assert run["published_tokens_per_s_per_gpu"] == round(throughput / run["gpus"], 3)
        assert run["published_seconds_per_step"] == seconds
    for run in dgxc.values():
        assert run["tp"] * run["pp"] * run.get("cp", 1) * run["dp"] == run["gpus"]
    # the 340B FP8 table of v24.11.1 is dgxc-25.02-nemotron's (the same figures): not typed twice
    assert not any("nemotron4-340b fp8" in k for k in dgxc if k.startswith("dgxc-24.11"))
    estimate, hardware, options = train_setup_of(dgxc["dgxc-25.04 llama3.1-70b fp8 64xh100"])  # FP8: PP 8, CP 1
    assert (estimate.layout.tp, estimate.layout.pp, estimate.layout.cp, estimate.layout.dp,
            estimate.layout.virtual_stages, estimate.layout.microbatches) == (4, 8, 1, 2, 5, 64)
    estimate, hardware, options = train_setup_of(dgxc["dgxc-25.05-gb200 nemotron4-340b fp8 128xgb200"])
    assert (hardware.name, estimate.cfg.d_model, estimate.cfg.activation, estimate.layout.fp8) == \
        ("gb200", 18432, "relu2", "delayed")
    estimate, _, options = train_setup_of(dgxc["dgxc-24.11-gpt3 gpt3-175b bf16 128xh100"])
    assert (estimate.cfg.vocab_size, estimate.cfg.dropout, estimate.layout.virtual_stages) == (50688, 0.1, 12)
    assert "attention_kernel" not in options  # NVTE_FUSED_ATTN=0: flash-attn, not cuDNN


def test_the_mlperf_rows_are_their_logs():
    """The median evaluation-free block of each submission's result_0.txt: tokens a block / its seconds; the step
    = the block's seconds / its steps; GBS and gradient accumulation as the log states them."""
    runs = _runs()
    mlperf = {k: r for k, r in runs.items() if k.startswith("mlperf")}
    assert len(mlperf) == 11
    for run in mlperf.values():
        assert run["published_tokens_per_s_per_gpu"] == round(
            run["global_batch"] * 2048 / run["published_seconds_per_step"] / run["gpus"], 3)
    blocks = {"mlperf-v3.1-nvidia gpt3-175b 10752xh100": (9.524, 10, 2688, 8),
              "mlperf-v3.1-nvidia gpt3-175b 512xh100": (132.793, 12, 2048, 128),
              "mlperf-v3.1-azure gpt3-175b 10752xh100": (9.775, 10, 2688, 8),
              "mlperf-v4.0-nvidia gpt3-175b 512xh100": (119.933, 11, 2304, 72),
              "mlperf-v4.0-nvidia gpt3-175b 11616xh100": (8.302, 9, 2904, 6),
              "mlperf-v4.0-smc gpt3-175b 512xh100": (129.189, 12, 2048, 64)}
    for run_id, (block, steps, gbs, accumulation) in blocks.items():
        run = mlperf[run_id]
        assert run["published_seconds_per_step"] == round(block / steps, 4) and run["global_batch"] == gbs
        assert gbs // (run["dp"] * run["micro_batch"]) == accumulation
    estimate, hardware, options = train_setup_of(mlperf["mlperf-v4.0-nvidia gpt3-175b 10752xh100"])
    layout, cfg = estimate.layout, estimate.cfg
    assert (layout.tp, layout.pp, layout.virtual_stages, layout.dp, layout.microbatches) == (4, 6, 8, 448, 6)
    assert (layout.fp8, layout.fp8_param_gather, layout.tp_only_amax_red, layout.sp) == ("delayed", True, True, True)
    assert (cfg.n_layers, cfg.d_model, cfg.vocab_size, cfg.dropout, cfg.position) == (96, 12288, 50688, 0.0, "learned")
    assert (hardware.name, options["attention_kernel"]) == ("h100-sxm", "cudnn")
    estimate, _, _ = train_setup_of(mlperf["mlperf-v3.1-nvidia gpt3-175b 512xh100"])
    assert (estimate.layout.virtual_stages, estimate.layout.fp8_param_gather) == (12, False)  # no fp8_params in v3.1


def test_the_aquila2_rows_are_flagperfs_table():
    """GBS = LBS x 9 accumulation steps x DP; Aquila2-7B: 32 x 4,096, SwiGLU 11,008 (--multiple-of 256), 100,008
    tokens padded to 128 x TP; the distributed optimizer's collectives exposed (no overlap in that FlagScale)."""
    runs = {k: r for k, r in _runs().items() if k.startswith("flagperf-aquila2")}
    figures = {r["id"].split()[2]: (r["published_tokens_per_s_per_gpu"], r["global_batch"], r["micro_batch"]) for r in runs.values()}
    assert figures == {"tp1pp1dp8": (3936.8, 72, 1), "tp8pp1dp1": (2866.3, 72, 8), "tp1pp8dp1": (2093.5, 36, 4),
                       "tp2pp2dp2": (3468.3, 72, 4)}
    estimate, hardware, options = train_setup_of(runs["flagperf-aquila2-7b-a800 aquila2-7b tp8pp1dp1 8xa800"])
    cfg, layout = estimate.cfg, estimate.layout
    assert (cfg.n_layers, cfg.d_model, cfg.d_ff, cfg.vocab_size, cfg.activation, cfg.norm) == \
        (32, 4096, 11008, 100352, "swiglu", "rmsnorm")
    assert (layout.sp, layout.zero, options["overlap"].dp, options["overlap"].params) == (False, 1, 0.0, 0.0)
    assert hardware.intra_node_bandwidth_bytes_per_s == 2e11  # the A800's NVLink


def test_all_dense_and_a_few_rows_as_first_computed():
    runs = _runs()
    assert {run_kind(r, source_of(k.split()[0])) for k, r in runs.items()} == {"dense training"}
    # (as first computed, now): session 35's TE userbuffers op by op (wt35_ubsms, costmodel/layout/ub_overlap.py)
    # moved the rows whose recipe runs the TP communication overlap
    # session 43's one QKV GEMM for Megatron's linear_qkv (wt43_review): 0.9794, 1.2126, 1.0122, 1.3130 before
    for run_id, (_, ratio) in (("dgxc-25.04 llama3.1-8b bf16 8xh100", (0.9794, 0.9827)),
                               ("mlperf-v3.1-nvidia gpt3-175b 10752xh100", (1.2731, 1.2181)),
                               ("mlperf-v4.0-nvidia gpt3-175b 512xh100", (1.0719, 1.0160)),
                               ("dgxc-25.05-gb200 nemotron4-340b fp8 512xgb200", (1.3829, 1.3134))):
        run = runs[run_id]
        ours = train_tokens(run, source_of(run_id.split()[0]), "kernels")
        assert ours / run["published_tokens_per_s_per_gpu"] == pytest.approx(ratio, abs=5e-4), run_id


# (rows, median error %, within 0.75-1.33x, within 10%, within 5%) and the lowest and highest ratio, as first
# computed (7432d54c, before any change to the model)
FIRST_COMPUTED = {"all": ((59, 14.7, 58, 20, 11), (0.979, 1.383)),
                  "dgxc": ((44, 12.4, 43, 17, 10), (0.979, 1.383)),
                  "dgxc-24.11": ((12, 9.9, 12, 6, 4), (1.03, 1.196)),
                  "dgxc-24.11-nemotron": ((6, 13.4, 6, 1, 0), (1.099, 1.16)),
                  "dgxc-24.11-gpt3": ((4, 19.7, 4, 0, 0), (1.179, 1.265)),
                  "dgxc-25.04": ((12, 4.4, 12, 10, 6), (0.979, 1.13)),
                  "dgxc-25.05-gb200": ((10, 22.6, 9, 0, 0), (1.123, 1.383)),
                  "mlperf": ((11, 23.5, 11, 1, 0), (1.072, 1.307)),
                  "flagperf-aquila2-7b-a800": ((4, 14.0, 4, 2, 1), (1.032, 1.246))}
# now: session 35's TE userbuffers op by op (wt35_ubsms) moved every group but FlagPerf's (no TP overlap)
NOW = {**FIRST_COMPUTED,
       "all": ((59, 9.6, 59, 32, 20), (0.979, 1.313)),
       "dgxc": ((44, 7.4, 44, 28, 18), (0.979, 1.313)),
       "dgxc-24.11": ((12, 4.4, 12, 10, 8), (1.006, 1.121)),
       "dgxc-24.11-nemotron": ((6, 6.9, 6, 6, 2), (1.046, 1.097)),
       "dgxc-24.11-gpt3": ((4, 11.9, 4, 0, 0), (1.101, 1.183)),
       "dgxc-25.04": ((12, 1.8, 12, 12, 8), (0.979, 1.088)),
       "dgxc-25.05-gb200": ((10, 19.8, 10, 0, 0), (1.107, 1.313)),
       "mlperf": ((11, 16.0, 11, 2, 1), (1.012, 1.245))}


@pytest.mark.slow
def test_the_rows_as_first_computed(published_tables):
    every = ratios(SOURCES, tables=published_tables)
    # "all" and each source but the four MLPerf ones (decode_groups: no GPU-hours row here), then the two families
    groups = {**decode_groups(every, SOURCES[:5] + SOURCES[9:]), "dgxc": [k for k in every if k.startswith("dgxc")],
              "mlperf": [k for k in every if k.startswith("mlperf")]}
    assert_summaries(every, groups, NOW)
    # the pattern: the interleaved MLPerf GPT-3 rows further out at more virtual stages a GPU (v4.0, 512 H100s,
    # MBS 2: NVIDIA's VP 4 1.07x against SMC's VP 12 1.19x as first computed, 1.01x and 1.13x now) and as the
    # accumulation shrinks (v3.1: GA 128 1.17x, GA 16 1.24x, GA 8 1.27x first; 1.09x, 1.16x, 1.21x now)
    assert every["mlperf-v4.0-nvidia gpt3-175b 512xh100"] < 1.02 < 1.12 < every["mlperf-v4.0-smc gpt3-175b 512xh100"]
    v31 = [every[f"mlperf-v3.1-nvidia gpt3-175b {g}xh100"] for g in (512, 4096, 10752)]
    assert v31 == sorted(v31) and v31[0] > 1.09


# Session 43 (wt43_review): Megatron's linear_qkv as one GEMM and its dense attention's scale, mask and
# dropout passes (facts.json fused_qkv, fused_scale_mask_softmax) moved these rows' ratios and summaries.
NOW.update({'all': ((59, 10.0, 59, 30, 18), (0.983, 1.313)),
              'dgxc-24.11': ((12, 4.9, 12, 10, 7), (1.008, 1.129)),
              'dgxc-24.11-nemotron': ((6, 8.1, 6, 4, 1), (1.05, 1.107)),
              'dgxc-24.11-gpt3': ((4, 12.4, 4, 0, 0), (1.106, 1.189)),
              'dgxc-25.04': ((12, 1.6, 12, 12, 8), (0.983, 1.086)),
              'dgxc-25.05-gb200': ((10, 19.3, 10, 0, 0), (1.108, 1.313)),
              'flagperf-aquila2-7b-a800': ((4, 14.1, 4, 2, 1), (1.033, 1.247)),
              'dgxc': ((44, 7.7, 44, 26, 16), (0.983, 1.313)),
              'mlperf': ((11, 16.6, 11, 2, 1), (1.016, 1.25))})

# Session 45 (wt45_megatron): the FP8 GEMMs' operands at the recipe's element moved the GB200 row furthest out.
NOW.update({'all': ((59, 10.0, 59, 30, 18), (0.983, 1.314)),  # 1.313
            'dgxc-25.05-gb200': ((10, 19.3, 10, 0, 0), (1.108, 1.314)),  # 1.313
            'dgxc': ((44, 7.7, 44, 26, 16), (0.983, 1.314))})  # 1.313
