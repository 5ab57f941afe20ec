"""Session 43's unseen training rows (wt43_unseent; costmodel/published_runs.json sources "litgpt-thunder",
"litgpt-thunder-2024-03", "amd-pytorch-training-v25.2" and "amd-pytorch-training-v25.2-fp8", typed before any of each
was computed: a0974c45, 1ebc374f, de97a04a). Lightning Thunder's
pretraining benchmark in litgpt's extensions/thunder/README.md: TinyLlama 1.1B on A100-SXM4-40GB, 4 x 2,048 tokens a
GPU, Fabric's 'bf16-true', fully sharded (ZeRO 3) on 8 GPUs, replicated (DDP) on 8 and on one GPU, eager, Thunder
(two executor lists) and, in the table's first version, torch.compile (Inductor): the first rows from Lightning
Fabric / Thunder. AMD's ROCm PyTorch training container v25.2 page (pytorch-training-benchmark's Docker_Instructions.md):
Llama 3.1 8B and Mistral 7B under FSDP on 8 MI300X and 8 MI325X, BF16 (torch.compile) and Transformer Engine FP8, its
TFLOPS/s/GPU over its own script's FLOPs a token; the FP8 rows not expressible until wt43_fp8scope added
the script's FP8 scope (--fp8-autocast te-transformer-layer). Each row's figure as its source prints it, the kernel
model's ratios as first computed (our speed
over the published one), the figures validate/FINDINGS.md quotes ("Unseen training rows, session 43"). Nothing in
the model was changed for them."""

from __future__ import annotations

import pytest

from tests.unseen_rows import assert_first_computed, assert_summaries, ratios, runs_of, train_groups, train_setup_of

SOURCES = ("litgpt-thunder", "litgpt-thunder-2024-03", "amd-pytorch-training-v25.2", "amd-pytorch-training-v25.2-fp8")

# 101e31d2's table: (id tag, devices, 'ms/iter @ step 10'); the 'Not supported' rows and Unsloth's left out
THUNDER_TABLE = [("fsdp eager", 8, 456.57), ("fsdp thunder-nvfuser", 8, 333.56), ("ddp eager", 8, 569.46),
                 ("ddp thunder-torchcompile", 8, 426.44), ("ddp thunder-nvfuser", 8, 356.01),
                 ("single eager", 1, 447.65), ("single thunder-torchcompile", 1, 373.37),
                 ("single thunder-nvfuser", 1, 322.25)]
# fc600439's table, its Inductor rows (--compiler torch)
INDUCTOR_TABLE = [("fsdp inductor", 8, 318.71), ("ddp inductor", 8, 348.19), ("single inductor", 1, 320.22)]


@pytest.mark.parametrize("source, table", [("litgpt-thunder", THUNDER_TABLE), ("litgpt-thunder-2024-03", INDUCTOR_TABLE)])
def test_the_rows_are_the_readmes_tables(source, table):
    """Each row one step-ending iteration: one micro-batch of 4 x 2,048 tokens a GPU (global batch 4 x GPUs), its
    'ms/iter' as the step and 8,192 tokens / that as the rate; Thunder and Inductor rows compiled, eager ones not;
    FSDP as --zero 3, the replicated rows as --zero 2, one GPU as --zero 3 with dp 1."""
    rows = runs_of(source)
    assert len(rows) == len(table)
    for run, (tag, gpus, ms) in zip(rows, table):
        assert run["id"] == f"{source} tinyllama-1.1b {tag} {gpus}xa100-40gb"
        assert run["published_seconds_per_step"] == round(ms / 1000, 5)
        assert run["published_tokens_per_s_per_gpu"] == round(8192 / (ms / 1000), 1)
        estimate, hardware, options = train_setup_of(run)
        layout, workload = estimate.layout, estimate.workload
        assert (hardware.name, layout.dp, layout.microbatches, workload.batch, workload.seq_len) == \
            ("a100-40gb", gpus, 1, 4, 2048)
        assert (layout.framework, layout.zero, layout.pure_precision) == ("fsdp2", 2 if "ddp" in tag else 3, True)
        assert options.get("compiled", False) == ("eager" not in tag)
    assert round(8192 / 0.45657, 1) == 17942.5  # the FSDP eager row


def test_the_model_is_litgpts_tiny_llama():
    """litgpt/config.py 'tiny-llama-1.1b' at 101e31d2: 22 layers, 2,048 wide, 32 heads, 4 query groups, LLaMAMLP
    5,632, vocabulary 32,000, untied (TrainArgs tie_embeddings False)."""
    estimate, _, _ = train_setup_of(runs_of("litgpt-thunder")[0])
    cfg = estimate.cfg
    assert (cfg.n_decoder_layers, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_ff, cfg.vocab_size,
            cfg.tie_embeddings) == (22, 2048, 32, 4, 5632, 32000, False)


# Docker_Instructions.md at c295aaee: (GPU, model, precision, batch, sequence, TFLOPS/s/GPU)
AMD_TABLE = [("mi300x", "llama3.1-8b", "bf16", 3, 8192, 542.94), ("mi300x", "llama3.1-8b", "fp8", 3, 8192, 737.40),
             ("mi300x", "llama3.1-8b", "bf16", 6, 4096, 523.79), ("mi300x", "llama3.1-8b", "fp8", 6, 4096, 735.44),
             ("mi300x", "mistral-7b", "bf16", 3, 8192, 483.17), ("mi300x", "mistral-7b", "fp8", 4, 8192, 723.30),
             ("mi325x", "llama3.1-8b", "bf16", 3, 8192, 643.01), ("mi325x", "llama3.1-8b", "fp8", 5, 8192, 893.68),
             ("mi325x", "llama3.1-8b", "bf16", 8, 4096, 625.96), ("mi325x", "llama3.1-8b", "fp8", 10, 4096, 894.98),
             ("mi325x", "mistral-7b", "bf16", 5, 8192, 590.23), ("mi325x", "mistral-7b", "fp8", 6, 8192, 860.39)]


def script_flops_per_token(seq_len: int, window: int | None = None) -> int:
    """pytorch-training-benchmark's estimate_flops_per_token (llama.py; mistral.py's attention over min(window, s)) for
    its configs (32 layers, 4,096 wide, 32 heads, 8 KV heads, SwiGLU 14,336, vocabulary 128,256), training = 3 x forward,
    attention dense ('megatron tflops calculation does not account for causality')."""
    d, hidden, heads, kv_heads, layers, vocab = 4096, 14336, 32, 8, 32, 128256
    head_dim = d // heads
    weights = 3 * 2 * d * hidden + 2 * d * (heads + 2 * kv_heads) * head_dim + 2 * d * heads * head_dim
    attention = 4 * (window or seq_len) * heads * head_dim
    return 3 * (weights * layers + 2 * d * vocab) + 3 * attention * layers


def test_the_amd_rows_are_the_pages_tables():
    """Each row the page's TFLOPS/s/GPU over the script's FLOPs a token (compared as tokens/s a GPU), 8 micro-batches of
    the table's batch a step on dp 8 (FSDP, bf16 gathers and reduce-scatters), Mistral at the config's vocabulary
    128,256 and window 1,024; the FP8 rows on Transformer Engine's layer with num_gqa_groups = 32 // 8 = 4 KV heads."""
    rows = runs_of("amd-pytorch-training-v25.2") + runs_of("amd-pytorch-training-v25.2-fp8")
    by_id = {r["id"]: r for r in rows}
    assert len(rows) == len(AMD_TABLE) == 12
    assert script_flops_per_token(8192) == 57_912_852_480
    for gpu, model, precision, batch, seq, tflops in AMD_TABLE:
        source = "amd-pytorch-training-v25.2" + ("-fp8" if precision == "fp8" else "")
        run = by_id[f"{source} {model} {precision} bs{batch} {seq} 8x{gpu}"]
        flops = script_flops_per_token(seq, 1024 if model == "mistral-7b" else None)
        assert run["published_tokens_per_s_per_gpu"] == round(tflops * 1e12 / flops, 1)
        assert (run["hardware"], run["dp"], run["micro_batch"], run["global_batch"]) == (gpu, 8, batch, batch * 64)
        if precision == "bf16":
            estimate, hardware, options = train_setup_of(run)
            cfg, layout = estimate.cfg, estimate.layout
            assert (hardware.name, layout.framework, layout.zero, layout.microbatches, layout.grad_reduce_dtype,
                    options.get("compiled")) == (gpu, "fsdp2", 3, 8, "bf16", True)
            assert (cfg.vocab_size, cfg.n_kv_heads) == (128256, 8)
            assert cfg.sliding_window == (1024 if model == "mistral-7b" else None)
        else:
            assert run["config_changes"]["n_kv_heads"] == 4
            estimate, _, _ = train_setup_of(run)  # the script's scope (wt43_fp8scope): layout/fp8_options.py
            assert (estimate.layout.fp8, estimate.layout.fp8_autocast) == ("delayed", "te-transformer-layer")


FIRST = {"litgpt-thunder tinyllama-1.1b fsdp eager 8xa100-40gb": 1.146,
         "litgpt-thunder tinyllama-1.1b ddp eager 8xa100-40gb": 1.446,
         "litgpt-thunder tinyllama-1.1b single eager 1xa100-40gb": 1.144,
         "litgpt-thunder tinyllama-1.1b single thunder-nvfuser 1xa100-40gb": 1.106,
         "litgpt-thunder-2024-03 tinyllama-1.1b fsdp inductor 8xa100-40gb": 1.067,
         "amd-pytorch-training-v25.2 llama3.1-8b bf16 bs3 8192 8xmi300x": 1.244,
         "amd-pytorch-training-v25.2 llama3.1-8b bf16 bs8 4096 8xmi325x": 1.211,
         "amd-pytorch-training-v25.2 mistral-7b bf16 bs3 8192 8xmi300x": 1.248,
         # the FP8 rows, first computed by wt43_fp8scope (session 43) once the script's scope was added
         # (--fp8-autocast te-transformer-layer: one autocast, TE's fused norms and SwiGLU cast, the layers' weights
         # cast once a step, the head's te.LayerNormLinear in FP8); refused before, as wt43_unseent left them
         "amd-pytorch-training-v25.2-fp8 llama3.1-8b fp8 bs3 8192 8xmi300x": 1.386,
         "amd-pytorch-training-v25.2-fp8 llama3.1-8b fp8 bs6 4096 8xmi300x": 1.37,
         "amd-pytorch-training-v25.2-fp8 mistral-7b fp8 bs4 8192 8xmi300x": 1.354,
         "amd-pytorch-training-v25.2-fp8 llama3.1-8b fp8 bs5 8192 8xmi325x": 1.373,
         "amd-pytorch-training-v25.2-fp8 llama3.1-8b fp8 bs10 4096 8xmi325x": 1.355,
         "amd-pytorch-training-v25.2-fp8 mistral-7b fp8 bs6 8192 8xmi325x": 1.362}
MOVED: dict[str, float] = {}
REFUSED: tuple[str, ...] = ()  # the six FP8 rows were refused until wt43_fp8scope added their scope


def test_first_computed_ratios_of_a_few_rows(published_tables):
    assert_first_computed(SOURCES, FIRST, MOVED, REFUSED, tables=published_tables)


# "training rates" restated by wt43_fp8scope: 17 rows (21.1%) -> 23 with the six FP8 rows (23.0%)
FIRST_STATS = {"training rates": ((23, 23.0, 15, 2, 0), (1.067, 1.45)),
               "litgpt-thunder": ((8, 17.8, 6, 0, 0), (1.106, 1.45)),
               "litgpt-thunder-2024-03": ((3, 9.9, 3, 2, 0), (1.067, 1.184)),
               "amd-pytorch-training-v25.2": ((6, 22.8, 6, 0, 0), (1.211, 1.248)),
               "amd-pytorch-training-v25.2-fp8": ((6, 36.6, 0, 0, 0), (1.354, 1.386))}
NOW_STATS = {**FIRST_STATS}


@pytest.mark.slow  # every row of the sources computed
def test_the_rows_as_first_computed(published_tables):
    """Every row too fast; the replicated (DDP) rows furthest: published DDP eager is 122 ms a step slower than one
    GPU, ours 3 ms (the bucketed bf16 all-reduce under the backward); the two Thunder executor lists are one row to
    the model (compiled), so their published gap (373 vs 322 ms on one GPU) shows as two ratios."""
    every = ratios(SOURCES, refused={}, tables=published_tables)
    groups = {name: keys for name, keys in train_groups(every, SOURCES).items() if keys}
    assert_summaries(every, groups, NOW_STATS)
    assert all(value > 1 for value in every.values())
    row = "litgpt-thunder tinyllama-1.1b {} 8xa100-40gb".format
    assert every[row("ddp eager")] > every[row("fsdp eager")] + 0.25
    single = "litgpt-thunder tinyllama-1.1b single {} 1xa100-40gb".format
    # ours eager -> nvFuser 1.343x on one GPU, published 447.65 / 322.25 = 1.389x
    assert round(every[single("thunder-nvfuser")] / every[single("eager")] * 447.65 / 322.25, 3) == 1.343
    # AMD's BF16 rows 1.21-1.25x on both GPUs, both lengths and both models: one factor, not a shape's
    amd = [value for key, value in every.items() if key.startswith("amd-pytorch-training-v25.2 ")]
    assert max(amd) - min(amd) < 0.04


# Session 43's one QKV GEMM for Megatron's linear_qkv (facts.json fused_qkv; merged in session 44) moved these
# Transformer Engine FP8 rows (typed impl megatron), each from its figure before.
MOVED.update({"amd-pytorch-training-v25.2-fp8 llama3.1-8b fp8 bs3 8192 8xmi300x": 1.389,  # 1.386
              "amd-pytorch-training-v25.2-fp8 llama3.1-8b fp8 bs6 4096 8xmi300x": 1.374,  # 1.37
              "amd-pytorch-training-v25.2-fp8 mistral-7b fp8 bs4 8192 8xmi300x": 1.358,  # 1.354
              "amd-pytorch-training-v25.2-fp8 llama3.1-8b fp8 bs5 8192 8xmi325x": 1.376,  # 1.373
              "amd-pytorch-training-v25.2-fp8 llama3.1-8b fp8 bs10 4096 8xmi325x": 1.359,  # 1.355
              "amd-pytorch-training-v25.2-fp8 mistral-7b fp8 bs6 8192 8xmi325x": 1.366})  # 1.362
NOW_STATS.update({"amd-pytorch-training-v25.2-fp8": ((6, 37.0, 0, 0, 0), (1.358, 1.389))})  # 36.6, 1.354-1.386
