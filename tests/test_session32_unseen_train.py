"""Session 32's unseen training rows (costmodel/published_runs.json sources "bloom-prequel", "megatron-llama",
"megatron-llama-hf", "gpu-hours-llama3-card", "gpu-hours-llama3.2" and "gpu-hours-llama4", typed before any was
computed (2422d603); then "bigscience-tr8-104b", typed before it was computed (dd267b1c)): each row's figure and
layout as its source prints them, and the kernel model's ratios as first computed (our speed over the published
one; a GPU-hours row's published hours over ours), the estimate validate/FINDINGS.md quotes ("Unseen training
rows, session 32")."""

from __future__ import annotations

import pytest

from reports.published_runs import run_kind
from tests.unseen_rows import assert_summaries, ratios, runs_of, source_of, train_groups, train_setup_of

FIRST = ("bloom-prequel", "megatron-llama", "megatron-llama-hf", "gpu-hours-llama3-card", "gpu-hours-llama3.2",
         "gpu-hours-llama4")
SECOND = ("bigscience-tr8-104b",)


# bigscience chronicles-prequel.md (59a90eec): (NHIDDEN, NLAYERS, DP, PP, MBS) -> (Sec/it, TFLOPs); TP 8, 48 nodes
PREQUEL = {(14336, 72, 4, 12, 1): (143.31, 112.49), (14336, 72, 4, 12, 2): (134.02, 120.29),
           (14336, 72, 4, 12, 8): (129.26, 124.72), (14336, 72, 8, 6, 1): (139.82, 115.31),
           (14336, 72, 8, 6, 2): (131.02, 123.05), (13824, 84, 4, 12, 2): (143.89, 121.45),
           (13824, 84, 4, 12, 4): (133.12, 131.27), (13824, 84, 8, 6, 2): (141.41, 123.58),
           (13824, 84, 8, 6, 4): (130.31, 134.11), (12288, 96, 8, 6, 2): (136.73, 115.73),
           (12288, 96, 8, 6, 4): (122.96, 128.69), (13312, 84, 4, 12, 4): (125.52, 129.29),
           (13312, 84, 8, 6, 2): (135.55, 119.72), (13312, 84, 8, 6, 4): (122.93, 132.00),
           (13824, 78, 8, 6, 4): (121.28, 133.93)}
# the two 14336/72 MBS 4 layouts appear in both tables (02-21 and 02-23), with their own seconds
TWICE = {(14336, 72, 4, 12, 4): ((123.69, 130.34), (123.79, 130.24)), (14336, 72, 8, 6, 4): ((121.48, 132.71), (120.85, 133.40))}


def test_the_bloom_prequel_rows_are_its_tables():
    """Tokens/s a GPU = 2,048 x 2,048 / (Sec/it x 384); TP 8 x DP x PP = 384; 64 heads, d_ff 4h, the
    bloom-176b family (ALiBi, 250,880 vocabulary) at each table's width and depth, ZeRO-1 under DeepSpeed's
    pipeline engine, full recomputation, bf16."""
    rows = runs_of("bloom-prequel")
    assert len(rows) == 19
    seen = {}
    for run in rows:
        cc = run["config_changes"]
        key = (cc["d_model"], cc["n_decoder_layers"], run["dp"], run["pp"], run["micro_batch"])
        seen.setdefault(key, []).append((run["published_seconds_per_step"], run["published_hardware_tflops_per_gpu"]))
        assert run["published_tokens_per_s_per_gpu"] == round(2048 * 2048 / (run["published_seconds_per_step"] * 384), 3)
        assert (run["tp"] * run["dp"] * run["pp"], run["gpus"], run["global_batch"]) == (384, 384, 2048)
        assert (cc["n_heads"], cc["n_kv_heads"], cc["d_ff"]) == (64, 64, 4 * cc["d_model"])
    assert {k: v[0] for k, v in seen.items() if len(v) == 1} == PREQUEL
    assert {k: tuple(v) for k, v in seen.items() if len(v) == 2} == TWICE
    estimate, hardware, _ = train_setup_of(rows[0])
    layout, workload, cfg = estimate.layout, estimate.workload, estimate.cfg
    assert (layout.framework, layout.zero, layout.sp, workload.recompute, workload.dtype) == ("deepspeed", 1, False, "full", "bf16")
    assert (cfg.vocab_size, cfg.position, hardware.name) == (250880, "alibi", "a100-80gb")


def test_the_megatron_llama_rows_are_its_readme():
    """LLaMA-13B; the efficiency table's 180 and 146 TFLOPS on 32 A100s (2,048 sequences a step), the
    scalability table's tokens/s a GPU at 256 and 512, OverlappedDistributedOptimizer as the overlapped
    reduce-scatter; every Megatron row at the stored Baichuan-13B script's TP 2, MBS 2, selective recompute."""
    rows = {r["id"]: r for r in runs_of("megatron-llama")}
    figures = {k: v.get("published_tflops_per_gpu", v.get("published_tokens_per_s_per_gpu")) for k, v in rows.items()}
    assert figures == {"megatron-llama llama-13b distopt 32xa100-80gb": 180,
                       "megatron-llama llama-13b overlapped-distopt 256xa100-80gb": 1890,
                       "megatron-llama llama-13b distopt 256xa100-80gb": 1630,
                       "megatron-llama llama-13b overlapped-distopt 512xa100-80gb": 1845,
                       "megatron-llama llama-13b distopt 512xa100-80gb": 1430}
    assert round(1e12 / (1890 * 256 * 86400), 1) == 23.9 and round(1e12 / (1430 * 512 * 86400), 1) == 15.8  # its days
    for run in rows.values():
        estimate, hardware, options = train_setup_of(run)
        layout, workload = estimate.layout, estimate.workload
        assert (layout.tp, layout.sp, layout.zero, workload.batch, workload.recompute) == (2, True, 1, 2, "selective")
        assert layout.dp * 2 == run["gpus"] and layout.microbatches == 2048 // (layout.dp * 2)
        # DistributedOptimizer of mid-2023: the reduce-scatter after the backward (Overlap dp 0); the
        # overlapped one: Megatron's default share under the backward (no Overlap stated)
        overlap = options.get("overlap")
        assert (overlap.dp if overlap else None) == (0.0 if " distopt " in run["id"] else None)
        assert hardware.inter_node_bandwidth_bytes_per_s == 12.5e9
    hf = runs_of("megatron-llama-hf")[0]
    assert (hf["published_tflops_per_gpu"], hf["published_gpu_hours_10b_tokens"]) == (146, 49.7 * 32)
    estimate = train_setup_of(hf)[0]
    assert (estimate.layout.framework, estimate.layout.zero, estimate.workload.impl) == ("deepspeed", 2, "hf")


def test_the_model_cards_gpu_hours():
    """The Llama 3 (April 2024), 3.2 and 4 cards' 'Training Time (GPU hours)' and their token counts; the
    Llama 4 rows are mixtures of experts (the presets' 16 and 128 experts)."""
    hours = {r["id"]: (r["published_gpu_hours"], r["tokens"]) for p in FIRST[3:] for r in runs_of(p)}
    assert hours == {"gpu-hours-llama3-card 8b 15T tokens": (1.3e6, 15e12), "gpu-hours-llama3-card 70b 15T tokens": (6.4e6, 15e12),
                     "gpu-hours-llama3.2 1b 9T tokens": (370e3, 9e12), "gpu-hours-llama3.2 3b 9T tokens": (460e3, 9e12),
                     "gpu-hours-llama4 scout 40T tokens": (5.0e6, 40e12), "gpu-hours-llama4 maverick 22T tokens": (2.38e6, 22e12)}
    assert [run_kind(r, source_of("gpu-hours-llama4")) for r in runs_of("gpu-hours-llama4")] == ["MoE training"] * 2


# experiments/tr8-104B.md (4544791): (name, TP, PP, DP) -> 'Speed' (seconds an iteration), GBS 2048, MBS 1
TR8 = {("main", 4, 32, 1): 696, ("big-science-branch", 4, 32, 1): 706, ("bnb", 4, 16, 2): 681, ("bnb", 2, 32, 2): 633,
       ("bnb", 4, 32, 1): 688}


def test_the_tr8_104b_rows_are_its_page():
    rows = runs_of("bigscience-tr8-104b")
    got = {(r["id"].split()[1], r["tp"], r["pp"], r["dp"]): r["published_seconds_per_step"] for r in rows}
    assert got == TR8
    for run in rows:
        assert run["published_tokens_per_s_per_gpu"] == round(2048 * 2048 / (run["published_seconds_per_step"] * 128), 3)
        # the page's own TFLOPs: 104 x 4 x 2 x 2,048 x 2,048 / (speed x 128 x 1e3), e.g. 39.17 at 696 s
    assert round(104 * 8 * 2048 * 2048 / (696 * 128 * 1e3), 2) == 39.17
    estimate, hardware, _ = train_setup_of(rows[0])
    cfg = estimate.cfg
    assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.vocab_size) == (32, 16384, 32, 65536, 50688)
    assert (hardware.name, hardware.gpus_per_node, estimate.workload.dtype) == ("v100-sxm2-32gb", 4, "fp16")


# (rows, median error %, within 0.75-1.33x, within 10%, within 5%) and the lowest and highest ratio, as first
# computed (before any change to the model: 2422d603 and dd267b1c)
FIRST_COMPUTED = {"training rates": ((30, 24.9, 23, 0, 0), (1.106, 1.77)),
                  "bloom-prequel": ((19, 22.6, 18, 0, 0), (1.171, 1.349)),
                  "megatron-llama": ((5, 23.5, 4, 0, 0), (1.137, 1.354)),
                  "bigscience-tr8-104b": ((5, 65.5, 0, 0, 0), (1.535, 1.77)),
                  "GPU-hours": ((6, 105.9, 2, 1, 0), (0.286, 4.798))}
# now (session 32): wt32_v100's measured V100 SXM2 GEMMs (DeepBench's 0.898 of the peak, not the default 0.7, and
# Volta's rate by K: tests/test_deepbench_gemm.py) moved tr8-104B to 1.903-2.181x, the gap not the GEMM rate;
# wt32_oldmeg put the BLOOM prequel rows on Jean Zay's network (4 x 100 Gb/s Omni-Path a node, the tr11 README's)
# and tr8-104B's fp16 gradients accumulated in place each micro-batch (DeepSpeed ZeRO-1): 1.807-2.076x; the
# Llama 3 70B GPU-hours row (fsdp2, TP 8) with wt32_tpsmall's DTensor copies (validate/FINDINGS.md, each branch's section)
NOW = dict(FIRST_COMPUTED, **{"training rates": ((30, 23.3, 24, 0, 0), (1.106, 2.076)),
                              "bloom-prequel": ((19, 17.9, 19, 0, 0), (1.143, 1.298)),
                              "bigscience-tr8-104b": ((5, 93.5, 0, 0, 0), (1.807, 2.076)),
                              # wt34_gpuhours (session 34): the Llama 3 70B row on torchtitan's llama3_70b.toml (8 sequences
                              # a TP-8 replica, full AC, 2,048 GPUs; its source's "amended"): 0.284 -> 1.012 as a speed
                              "GPU-hours": ((6, 75.1, 3, 3, 1), (1.012, 4.794)),
                              # wt33_small (session 33): the embedding's dense gradient each micro-batch
                              # (costmodel/embedding_grad.py; megatron-llama was 23.5% and 1.137-1.354, GPU-hours 106.0%,
                              # 1 within 10%, 4.798)
                              "megatron-llama": ((5, 23.4, 4, 0, 0), (1.136, 1.353))})


@pytest.mark.slow
def test_the_rows_as_first_computed(published_tables):
    every = ratios(FIRST + SECOND, tables=published_tables)
    groups = train_groups(every, ("bloom-prequel", "megatron-llama", "bigscience-tr8-104b"))
    assert_summaries(every, groups, NOW)
    # every training rate too fast; at the same width, depth and pipeline the smaller micro-batch the faster
    assert all(every[k] > 1.1 for k in groups["training rates"])
    prequel = {k: v for k, v in every.items() if k.startswith("bloom-prequel h14336 l72 dp8")}
    assert prequel["bloom-prequel h14336 l72 dp8 tp8 pp6 mbs1 384xa100-80gb 02-21"] > \
        prequel["bloom-prequel h14336 l72 dp8 tp8 pp6 mbs4 384xa100-80gb 02-21"] + 0.05
    # Megatron's 2023 distributed optimizer without the overlap further off than Megatron-LLaMA's overlapped one
    assert every["megatron-llama llama-13b distopt 512xa100-80gb"] > every["megatron-llama llama-13b overlapped-distopt 512xa100-80gb"] + 0.15


# Session 43 (wt43_review): Megatron's linear_qkv as one GEMM and its dense attention's scale, mask and
# dropout passes (facts.json fused_qkv, fused_scale_mask_softmax) moved these rows' ratios and summaries.
NOW.update({'training rates': ((30, 24.9, 23, 0, 0), (1.106, 2.09)),
              'bloom-prequel': ((19, 21.1, 18, 0, 0), (1.172, 1.341)),
              'megatron-llama': ((5, 23.6, 4, 0, 0), (1.137, 1.354)),
              'bigscience-tr8-104b': ((5, 94.6, 0, 0, 0), (1.819, 2.09)),
              'GPU-hours': ((6, 75.9, 3, 2, 1), (1.022, 4.898))})


# Session 44 (wt44_review): Megatron's dense path's Q/K/V bias pass, its split's cat and the context's copy
# (facts.json megatron_dense_passes) moved these, each from the session-43 figure above.
NOW.update({'training rates': ((30, 24.6, 23, 0, 0), (1.106, 2.083)),  # 24.9, 2.09
            'bloom-prequel': ((19, 20.7, 18, 0, 0), (1.168, 1.336)),  # 21.1, 1.172-1.341
            'bigscience-tr8-104b': ((5, 94.0, 0, 0, 0), (1.812, 2.083))})  # 94.6, 1.819-2.09

# wt46_mgsoftmax: Megatron's causal softmax loads its rows to the diagonal and a recomputed forward pays its
# leaves' launches again (StepTime.compute); each group it moved, its summary before beside it
NOW = {**NOW,
    "training rates": ((30, 24.7, 23, 0, 0), (1.105, 2.083)),  # was ((30, 24.6, 23, 0, 0), (1.106, 2.083))
    "bloom-prequel": ((19, 20.9, 18, 0, 0), (1.17, 1.337)),  # was ((19, 20.7, 18, 0, 0), (1.168, 1.336))
    "megatron-llama": ((5, 23.5, 4, 0, 0), (1.137, 1.354)),  # was ((5, 23.6, 4, 0, 0), (1.137, 1.354))
    "bigscience-tr8-104b": ((5, 94.1, 0, 0, 0), (1.814, 2.083)),  # was ((5, 94.0, 0, 0, 0), (1.812, 2.083))
    "GPU-hours": ((6, 75.9, 3, 2, 1), (1.021, 4.898))}  # was ((6, 75.9, 3, 2, 1), (1.022, 4.898))
