"""Megatron-Bridge's model verification cards (examples/model_verification_cards/*/card.yaml at
067f987df) and Megatron-LM's DeepSeek-V3 GB200 optimization guide (eb0783b6d3) among the published
runs: each row's JSON as its source prints it, the layout train_setup builds from it, and the model's
figure for it (kernel model and roofline), to the tenth."""

from __future__ import annotations

import pytest

from reports.published_runs import other_runs_data

CARDS, GUIDE = "megatron-bridge-cards", "megatron-lm-dsv3-gb200"


def _runs() -> tuple[dict, dict]:
    data = other_runs_data()
    return {r["id"]: r for r in data["runs"]}, data["sources"]


# Each card item as the card prints it: (--nodes, --gpus-per-node, last_10_steps_step_time_ms_avg,
# last_10_steps_model_tflops_per_gpu_avg, last_10_steps_tokens_per_second_per_gpu_avg,
# TP, PP, EP, GBS, MBS, sequence length) from its command and expected_result (VP, where printed or
# read in the recipe, in VIRTUAL below).
CARD_ITEMS = {
    "qwen3-30b-a3b pretrain bf16 16xh100": (2, 8, 30289.55, 199.12, 8654.602, 1, 1, 16, 1024, 1, 4096),
    "qwen3-30b-a3b perf bf16 16xh100": (2, 8, 20147.29, 299.352, 13011.378, 1, 1, 16, 1024, 1, 4096),
    "qwen3-30b-a3b pretrain mxfp8 8xgb200": (2, 4, 12362.34, 487.88, 21205.047, 1, 1, 8, 512, 4, 4096),
    "qwen3-30b-a3b perf mxfp8 8xgb200": (2, 4, 6501.12, 927.68, 40322.898, 1, 1, 8, 512, 4, 4096),
    "qwen3-30b-a3b perf mxfp8 8xgb300": (2, 4, 5854.91, 1030.07, 44773.361, 1, 1, 8, 512, 8, 4096),
    "qwen3-30b-a3b weak mxfp8 8xgb300": (2, 4, 5889.42, 1024.02, 44511.004, 1, 1, 8, 512, 8, 4096),
    "qwen3-30b-a3b weak mxfp8 32xgb300": (8, 4, 5814.29, 1037.27, 45086.158, 1, 1, 8, 2048, 8, 4096),
    "qwen3-30b-a3b weak mxfp8 128xgb300": (32, 4, 5831.72, 1034.18, 44951.404, 1, 1, 8, 8192, 8, 4096),
    "qwen3-30b-a3b weak mxfp8 256xgb300": (64, 4, 5818.62, 1036.49, 45052.607, 1, 1, 8, 16384, 8, 4096),
    "qwen3-235b-a22b perf mxfp8 256xgb200": (64, 4, 17905.34, 1083.66, 7320.274, 1, 8, 32, 8192, 1, 4096),
    "qwen3-235b-a22b perf mxfp8 256xgb300": (64, 4, 14920.84, 1300.44, 8784.492, 1, 4, 32, 8192, 2, 4096),
    "deepseek-v3 perf mxfp8 256xgb200": (64, 4, 13841.18, 1231.04, 4734.856, 1, 4, 64, 4096, 1, 4096),
    "deepseek-v3 perf mxfp8 256xgb300": (64, 4, 10667.30, 1597.31, 6143.635, 1, 2, 32, 4096, 1, 4096),
    "deepseek-v3 perf bf16 1024xh100": (128, 8, 61756.13, 276.03, 1061.206, 2, 8, 64, 16384, 1, 4096),
    "deepseek-v4-flash perf mxfp8 128xgb200": (32, 4, 8134.6, 731.4, 8056.45, 1, 1, 64, 2048, 1, 4096),
    "deepseek-v4-flash perf mxfp8 128xgb300": (32, 4, 7840.32, 759.28, 8358.842, 1, 1, 64, 2048, 1, 4096),
    "gpt-oss-120b pretrain bf16 64xh100": (8, 8, 16664.93, 58.42, 1966.285, 2, 4, 16, 512, 1, 4096),
    "gpt-oss-120b perf bf16 64xgb200": (16, 4, 4995.63, 535.23, 16398.332, 1, 1, 64, 1280, 4, 4096),
    "gpt-oss-120b perf mxfp8 64xgb300": (16, 4, 2481.14, 1077.35, 33017.081, 1, 1, 16, 1280, 4, 4096),
    "gpt-oss-20b pretrain bf16 16xh100": (2, 8, 22400.88, 117.01, 5851.199, 2, 4, 4, 512, 1, 4096),
    "nemotron-3-nano perf mxfp8 8xgb300": (2, 4, 12455.14, 937.77, 42094.107, 1, 1, 8, 512, 4, 8192),
    "nemotron-3-super pretrain bf16 64xh100": (8, 8, 29368.69, 236.33, 2789.365, 1, 2, 32, 1280, 1, 4096),
    "nemotron-3-super perf bf16 64xh100": (8, 8, 27588.58, 248.61, 2969.345, 1, 2, 32, 1280, 1, 4096),
    # the card prints 3,301.113 tokens/s, its author's 4,096; the recipe runs 8,192 (test_super_gb200_card_runs_8192, wt37_moe)
    "nemotron-3-super perf bf16 64xgb200": (16, 4, 9926.35, 559.39, 6602.225, 2, 1, 64, 512, 1, 8192),
    "nemotron-3-super perf nvfp4 64xgb300": (16, 4, 6357.94, 873.33, 10307.741, 1, 1, 64, 512, 1, 8192),
    "nemotron-3.5-lightning perf bf16 16xh100": (2, 8, 18467.28, 399.58, 14195.052, 1, 1, 8, 512, 1, 8192),
    "nemotron-3.5-lightning perf bf16 8xgb200": (2, 4, 18236.06, 809.22, 28750.07, 1, 1, 8, 512, 2, 8192),
    "qwen3-8b pretrain bf16 16xh100": (2, 8, 25070.32, 512.7, 10456.348, 1, 1, 1, 1024, 1, 4096),
    # added after the 28 above were computed (the pretrain and pretrain_fsdp items; CP 2 on the H100 one)
    "nemotron-3.5-lightning pretrain bf16 16xh100": (2, 8, 36869.27, 200.18, 7110.095, 1, 1, 8, 512, 1, 8192),
    "nemotron-3.5-lightning pretrain bf16 8xgb200": (2, 4, 21483.63, 686.92, 24404.07, 1, 1, 8, 512, 2, 8192),
    "nemotron-3.5-lightning fsdp bf16 8xgb200": (2, 4, 26665.83, 553.43, 19661.417, 1, 1, 8, 512, 2, 8192),
    "nemotron-3.5-lightning fsdp mxfp8 8xgb200": (2, 4, 13917.0, 795.39, 28254.365, 1, 1, 8, 384, 3, 8192),
}
VIRTUAL = {"qwen3-235b-a22b perf mxfp8 256xgb200": 3, "qwen3-235b-a22b perf mxfp8 256xgb300": 12,
           "deepseek-v3 perf mxfp8 256xgb200": 4, "deepseek-v3 perf mxfp8 256xgb300": 8,
           "deepseek-v3 perf bf16 1024xh100": 4}

# The model's tokens/s per GPU for each card row, (roofline, kernel model), None where it refuses
# (costmodel/published_runs.json "megatron-bridge-cards" 'assumed' says every choice behind them). Since
# wt31_small (session 31) with the loss's fused-kernel traffic (blocks/head.py fused_loss_bytes; Megatron-Core's
# cross_entropy_loss_fusion): 0.1-1.9% slower each (qwen3-30b-a3b pretrain bf16 was 10,039.6 / 10,279.4). Since
# wt33_small (session 33) with the embedding's dense gradient each micro-batch (costmodel/embedding_grad.py): 0-0.5%
# slower (that row was 10,010.3 / 10,244.6). Since wt41_moetrain (session 41) with HybridEP at the rates its README
# measured (layout/hybridep_rates.py, kernel_facts.json "hybridep_measured"): the hybridep rows on GB200 slower, across
# H100 nodes faster; each moved row says its figures before it.
# Session 43 (wt43_review): Megatron's linear_qkv as one GEMM (facts.json fused_qkv) moved every kernel figure up
# 0.0-0.4%; each row says its kernel figure before it.
CARD_MODEL = {
    "qwen3-30b-a3b pretrain bf16 16xh100": (10689.7, 10990.0),  # (9987.7, 10220.9) before session 41's HybridEP rates; 10957.3 before session 43
    "qwen3-30b-a3b perf bf16 16xh100": (13918.3, 14431.7),  # (13601.8, 14038.0) before session 41's HybridEP rates; 14375.4 before session 43
    "qwen3-30b-a3b pretrain mxfp8 8xgb200": (42164.8, 37757.6),  # (43029.0, 38421.1) before session 41's HybridEP rates; 37730.6 before session 43
    "qwen3-30b-a3b perf mxfp8 8xgb200": (42164.8, 37757.6),  # (43029.0, 38421.1) before session 41's HybridEP rates; 37730.6 before session 43
    "qwen3-30b-a3b perf mxfp8 8xgb300": (43603.3, 43154.3),  # kernels 43139.8 before MXFP8 operand bytes (session 45); 43043.4 before session 43
    "qwen3-30b-a3b weak mxfp8 8xgb300": (43603.3, 43154.3),  # kernels 43139.8 before MXFP8 operand bytes (session 45); 43043.4 before session 43
    "qwen3-30b-a3b weak mxfp8 32xgb300": (43659.7, 43209.6),  # kernels 43195.0 before MXFP8 operand bytes (session 45); 43098.3 before session 43
    "qwen3-30b-a3b weak mxfp8 128xgb300": (43678.2, 43227.7),  # kernels 43213.1 before MXFP8 operand bytes (session 45); 43116.4 before session 43
    "qwen3-30b-a3b weak mxfp8 256xgb300": (43614.8, 43165.6),  # kernels 43151.1 before MXFP8 operand bytes (session 45); 43054.6 before session 43
    "qwen3-235b-a22b perf mxfp8 256xgb200": (7869.0, 7032.2),  # (8064.2, 7182.5) before session 41's HybridEP rates; 7027.2 before session 43
    "qwen3-235b-a22b perf mxfp8 256xgb300": (8662.5, 8615.4),  # kernels 8602.8 before session 43
    "deepseek-v3 perf mxfp8 256xgb200": (5290.2, 4662.5),  # (5412.3, 4757.2) before session 41's HybridEP rates; (5297.9, 4668.6) before a recomputed leaf's launches (wt46_mgsoftmax)
    "deepseek-v3 perf mxfp8 256xgb300": (5695.6, 5717.3),
    "deepseek-v3 perf bf16 1024xh100": (1095.5, 1102.5),  # (1009.7, 1015.7) before session 41's HybridEP rates; (1096.2, 1103.2) before a recomputed leaf's launches (wt46_mgsoftmax)
    "deepseek-v4-flash perf mxfp8 128xgb200": (7693.3, 6414.6),  # (8015.3, 6636.9) before session 41's HybridEP rates
    "deepseek-v4-flash perf mxfp8 128xgb300": (8084.8, 7685.4),
    # router unfused, no aux loss (wt29_dsv3); the tokenizer's 32,000-token vocabulary (wt37_moe; 5938.4, 5385.0 at 201,088)
    "gpt-oss-120b pretrain bf16 64xh100": (6711.0, 6026.6),  # kernels 6005.6 before session 43
    "gpt-oss-120b perf bf16 64xgb200": (26320.2, 23624.9),  # kernels 23633.2 before session 43; (26350.6, 23649.5) before a recomputed leaf's launches (wt46_mgsoftmax)
    "gpt-oss-120b perf mxfp8 64xgb300": (33416.7, 36009.4),  # kernels 35944.0 before session 43
    "gpt-oss-20b pretrain bf16 16xh100": (14552.1, 12628.7),  # as 120B (11447.5, 10203.3 at 201,088); 12569.5 before session 43
    "nemotron-3-nano perf mxfp8 8xgb300": (62614.3, 56192.5),  # kernels 56130.4 before session 43
    "nemotron-3-super pretrain bf16 64xh100": (3561.5, 3322.3),  # (3570.5, 3329.6) before a recomputed leaf's launches (wt46_mgsoftmax); (3371.9, 3169.7) before the padding (wt35_moe); (3269.5, 3065.2) before session 41's HybridEP rates; 3328.2 before session 43
    "nemotron-3-super perf bf16 64xh100": (3561.5, 3322.3),  # (3570.5, 3329.6) before a recomputed leaf's launches (wt46_mgsoftmax); (3269.5, 3065.2) before session 41's HybridEP rates; 3328.2 before session 43
    "nemotron-3-super perf bf16 64xgb200": (10959.9, 9887.7),  # (11068.8, 9858.8) at 4,096 a sequence before wt37_moe; (11472.9, 10296.1) before session 41's HybridEP rates; 9881.1 before session 43
    "nemotron-3-super perf nvfp4 64xgb300": (18072.2, 15918.0),  # kernels 15366.5 before NVFP4 operand bytes (session 45); (20764.2, 16502.9) before its recipe's bf16 layers (wt44_moetrain); 15364.6 before the Megatron dense passes (wt44_review)
    "nemotron-3.5-lightning perf bf16 16xh100": (15832.4, 15168.4),  # kernels 15168.3 before session 43; (15847.1, 15181.9) before a recomputed leaf's launches (wt46_mgsoftmax)
    "nemotron-3.5-lightning perf bf16 8xgb200": (36987.1, 33420.8),  # (38448.9, 34601.2) before session 41's HybridEP rates; 33412.9 before session 43
    "qwen3-8b pretrain bf16 16xh100": (10622.4, 11238.5),  # kernels 11193.4 before session 43
    "nemotron-3.5-lightning pretrain bf16 16xh100": (12553.5, 11595.4),  # kernels 11618.5 before session 43; (12598.6, 11629.3) before a recomputed leaf's launches (wt46_mgsoftmax)
    "nemotron-3.5-lightning pretrain bf16 8xgb200": (36987.1, 33420.8),  # (38448.9, 34601.2) before session 41's HybridEP rates; 33412.9 before session 43
    "nemotron-3.5-lightning fsdp bf16 8xgb200": (36826.3, 33289.5),  # (38275.2, 34460.5) before session 41's HybridEP rates; 33281.6 before session 43
    "nemotron-3.5-lightning fsdp mxfp8 8xgb200": (46347.0, 39275.3),  # 41,363.7 before session 34's per-expert casts; (48665.9, 40888.9) before session 41's HybridEP rates; 39239.4 before session 43
}
#: Why the model refuses a row (a ConfigError matching this).
REFUSED: dict[str, str] = {}


@pytest.mark.parametrize("name", sorted(CARD_ITEMS))
def test_each_card_row_is_its_cards_item(name):
    """The JSON holds the card's three figures as printed, the tokens/s is the step's GBS x sequence
    over its time and GPUs (the cards derive it so: within 2e-4), and train_setup builds the stated
    layout (GPUs = nodes x GPUs a node = TP x PP x DP)."""
    from reports.published_runs import train_setup

    runs, sources = _runs()
    run = runs[f"{CARDS} {name}"]
    nodes, per_node, ms, tflops, tokens, tp, pp, ep, gbs, mbs, seq = CARD_ITEMS[name]
    assert run["published_seconds_per_step"] == pytest.approx(ms / 1000, rel=1e-12)  # the card's ms, in s
    assert (run["published_model_tflops_per_gpu"], run["published_tokens_per_s_per_gpu"]) == (tflops, tokens)
    gpus = nodes * per_node
    assert gbs * seq / (ms / 1000) / gpus == pytest.approx(tokens, rel=2e-4)
    cp = run.get("cp", 1)
    assert (run["gpus"], run["tp"], run["pp"], run.get("ep", 1), run["dp"]) == (gpus, tp, pp, ep, gpus // (tp * pp * cp))
    if CARD_MODEL[name] == (None, None):  # refused as it is built (test_each_card_rows_model_figure)
        from costmodel.config import ConfigError

        try:  # refused as it is built, or as it is timed
            train_setup(run, sources[CARDS])
        except ConfigError as error:
            assert REFUSED[name] in str(error)
        return
    estimate, _, _ = train_setup(run, sources[CARDS])
    layout, workload = estimate.layout, estimate.workload
    assert (layout.gpus, layout.tp, layout.pp, layout.ep, layout.dp) == (gpus, tp, pp, ep, gpus // (tp * pp * cp))
    assert layout.zero == (3 if " fsdp " in name else 1)  # Megatron-FSDP (optim_grads_params) as --zero 3
    assert (layout.virtual_stages, workload.batch, workload.seq_len) == (VIRTUAL.get(name, 1), mbs, seq)
    assert layout.microbatches == gbs // (layout.dp * mbs)


def test_the_card_rows_ids_are_the_tables_and_the_weak_scaling_keeps_tokens_a_gpu():
    """Every card row is in CARD_ITEMS and CARD_MODEL; the GB300 weak-scaling points hold 64 sequences
    a GPU a step (GBS 512 on 8 to 16,384 on 256) and publish 44,511-45,087 tokens/s a GPU, which the
    model holds at 43,139.8-43,213.1 (0.96-0.97x; 43,043.4-43,116.4 before session 43's one QKV GEMM; 43,065.4-43,138.4, 0.956-0.968, before wt33_small's embedding gradient;
    43,315.9-43,389.8, 0.962-0.973, before wt31_small's loss traffic)."""
    runs, _ = _runs()
    ids = {r.split(" ", 1)[1] for r in runs if r.startswith(CARDS + " ")}
    assert ids == set(CARD_ITEMS) == set(CARD_MODEL) and len(ids) == 32
    weak = [n for n in CARD_ITEMS if " weak " in n]
    assert [CARD_ITEMS[n][8] / (CARD_ITEMS[n][0] * CARD_ITEMS[n][1]) for n in weak] == [64, 64, 64, 64]
    ratios = [CARD_MODEL[n][1] / CARD_ITEMS[n][4] for n in weak]
    # 0.9557-0.9670 before session 43's one QKV GEMM for Megatron's linear_qkv (wt43_review); 0.9578-0.9692 before
    # session 45's MXFP8 operand bytes
    assert min(ratios) == pytest.approx(0.9581, abs=5e-5) and max(ratios) == pytest.approx(0.9695, abs=5e-5)


@pytest.mark.parametrize("name", sorted(CARD_MODEL))
def test_each_card_rows_model_figure(name):
    """The model's tokens/s per GPU on each card row under both time models, to the tenth; the two
    Nemotron 3 Super H100 rows (recompute layernorm-moe-core-attn: the MoE layer rerun whole, its
    shared expert and latent projections with it, and the attention core) are one model step,
    3,328.2 (3,065.2 before session 41's HybridEP rates across H100 nodes; 3,169.7, 1.14x and 1.07x, before the padding; their recipe reduces the gradients after the backward,
    nemotron_3_super.py line 232); Lightning's H100 pretrain row (CP 2 beside Mamba-2 mixers, their
    all-to-alls) 11,618.5. Lightning's GB200 pretrain row and its performance twin share one model step
    (33,412.9; 34,601.2 before session 41's HybridEP rates); its Megatron-FSDP BF16 row is 0.4% slower in the model
    (33,281.6) where the card's is 24% slower."""
    from costmodel.config import ConfigError
    from reports.published_runs import train_tokens

    runs, sources = _runs()
    run, source = runs[f"{CARDS} {name}"], sources[CARDS]
    for model, expected in zip(("roofline", "kernels"), CARD_MODEL[name]):
        if expected is None:
            with pytest.raises(ConfigError, match=REFUSED[name]):
                train_tokens(run, source, model)
        else:
            assert round(train_tokens(run, source, model), 1) == expected


# The guide's table (section 3) as printed: (row, Dispatcher, TFLOPS/GPU), and the recomputation
# its text gives each row; the model's kernel and roofline TFLOP/s (causal) where it expresses one.
GUIDE_TABLE = [("baseline", "alltoall", 494.46), ("fused-zeros-permute", "alltoall", 529.55),
               ("router-fusion", "alltoall", 540.00), ("deepep", "deepep", 566.07),
               ("no-up-proj-recompute", "deepep", 610.71), ("cuda-graphs", "deepep", 663.27),
               ("tuned-deepep", "deepep", 691.49), ("cpu-side", "deepep", 762.12),
               ("pdl-swizzle", "deepep", 797.67), ("graphed-shared-expert", "deepep", 829.93),
               ("hybridep", "hybridep", 943.56), ("hybridep-cpu-side", "hybridep", 956.21),
               ("norm-quant-fusion", "hybridep", 970.01)]


def test_the_guides_rows_are_its_table_at_its_one_layout():
    """13 rows at TP 1 PP 8 VP 4 EP 32, GBS 2,048 MBS 1, 4,096 tokens, 'Et|(tt|)*30L' (no MTP), MXFP8,
    bf16 moments; up_proj recomputed on rows 1-4 only; the model's figure is one per (dispatcher,
    recomputation, router fusion): 1,085.2 on rows 1-2 (the router unfused: 2.19x, 2.05x), 1,103.0 on row 3
    (2.04x), 1,103.3 on the three HybridEP rows
    (1.17-1.14x; 1,159.9 and 1.23-1.20x before session 41's HybridEP at its README's GB200 rates), and on the seven DeepEP rows (its intranode kernels over the NVL72 domain at the
    guide's 400 / 190 GB/s) 944.3 with up_proj recomputed (1.67x) and 963.0 without (1.58-1.16x). Before
    session 34's per-expert MXFP8 casts (layout/grouped_quantize.py): 1,093.2, 1,111.3, 1,169.0, 950.3, 969.3."""
    from reports.published_runs import train_run, train_setup

    runs, sources = _runs()
    source = sources[GUIDE]
    rows = [runs[r] for r in runs if r.startswith(GUIDE + " ")]
    assert [(r["id"].split()[2], r["ep_dispatcher"], r["published_tflops_per_gpu"]) for r in rows] == GUIDE_TABLE
    assert [r["recompute"] for r in rows] == ["mla-up-proj"] * 4 + ["none"] * 9
    assert [r.get("moe_router_fusion", True) for r in rows] == [False] * 2 + [True] * 11  # rung 3, section 2.1.4
    assert [tuple(r.get("cuda_graph_scope", ())) for r in rows] == \
        [()] * 5 + [("attn", "moe_router", "moe_preprocess")] * 8  # rung 6, section 2.3
    assert source["flops_convention"] == "causal"
    for row in rows:
        estimate, _, options = train_setup(row, source)
        layout = estimate.layout
        assert (layout.tp, layout.pp, layout.virtual_stages, layout.ep, layout.dp, layout.microbatches) == \
            (1, 8, 4, 32, 32, 64)
        assert layout.stage_layers == (1, *[2] * 30, 0) and estimate.cfg.mtp_layers == 0
        assert options["overlap"].params == 1.0 and layout.grad_reduce_dtype == "fp32"
    first, last = rows[0], rows[-1]
    deepep = {row["id"].split()[1]: round(train_run(row, source, "kernels"), 1) for row in rows
              if row["ep_dispatcher"] == "deepep"}
    # "04" 944.3 and its roofline 1040.4 before its recomputed up-projections paid their launches again (wt46_mgsoftmax)
    assert deepep == {"04": 943.2, **{row: 963.0 for row in ("05", "06", "07", "08", "09", "10")}}
    assert round(train_run(rows[3], source, "roofline"), 1) == 1039.1
    assert round(train_run(rows[4], source, "roofline"), 1) == 1060.0
    assert round(train_run(first, source, "kernels"), 1) == 1083.7  # 1085.2 before its recomputed launches (wt46_mgsoftmax)
    assert round(train_run(rows[2], source, "kernels"), 1) == 1101.5  # 1103.0 before wt46_mgsoftmax
    assert round(train_run(first, source, "roofline"), 1) == 1234.5  # 1236.5 before wt46_mgsoftmax
    assert round(train_run(last, source, "kernels"), 1) == 1103.3
    assert round(train_run(last, source, "roofline"), 1) == 1232.5  # 1,303.6 before session 41


def test_deepseek_v3s_causal_count_is_megatrons():
    """The guide's TFLOP/s are compared in Megatron's causal count: the DeepSeek-V3 GB200 card prints
    1,231.04 TFLOP/s a GPU at 4,734.856 tokens/s a GPU, 2.6000e11 FLOPs a token (MTP 1), and the
    model's causal count of that row is 2.6064e11 (0.25% above), its dense one 2.9185e11."""
    from costmodel.layout.timing import step_time
    from reports.published_runs import train_setup

    runs, sources = _runs()
    run = runs[f"{CARDS} deepseek-v3 perf mxfp8 256xgb200"]
    published = run["published_model_tflops_per_gpu"] * 1e12 / run["published_tokens_per_s_per_gpu"]
    assert published == pytest.approx(2.6000e11, rel=1e-4)
    estimate, hardware, options = train_setup(run, sources[CARDS])
    per_token = {c: step_time(estimate, hardware, time_model="kernels", flops_convention=c, **options).step()["model_flops"]
                 / (4096 * 4096) for c in ("causal", "dense")}
    assert per_token["causal"] == pytest.approx(2.6064e11, rel=1e-4)
    assert per_token["dense"] == pytest.approx(2.9185e11, rel=1e-4)


def test_the_rows_state_their_recipes_reduce_and_moments():
    """The gradient reduce and Adam moments each row's recipe sets (the sources' 'assumed'): bf16
    moments on DeepSeek-V3's three card rows, V4 Flash's two, Nemotron 3 Super's four and Lightning's
    H100 performance row, and on the guide's 13 (--exp-avg-dtype bf16); the gradients reduced in fp32
    on GPT-OSS 120B's and 20B's H100 pretrain rows (grad_reduce_in_fp32 True) and the guide's 13 (no
    --grad-reduce-in-bf16), in bf16 on the other 30 card rows."""
    runs, _ = _runs()
    cards = {r.split(" ", 1)[1]: runs[r] for r in runs if r.startswith(CARDS + " ")}
    moments = sorted(n for n, r in cards.items() if r.get("precision_aware_optimizer") == "bf16-moments")
    assert moments == sorted([n for n in cards if n.split()[0] in ("deepseek-v3", "deepseek-v4-flash", "nemotron-3-super")]
                             + ["nemotron-3.5-lightning perf bf16 16xh100"]) and len(moments) == 10
    assert not any(r.get("precision_aware_optimizer") not in (None, "bf16-moments") for r in cards.values())
    fp32 = sorted(n for n, r in cards.items() if r["grad_reduce_dtype"] == "fp32")
    assert fp32 == ["gpt-oss-120b pretrain bf16 64xh100", "gpt-oss-20b pretrain bf16 16xh100"]
    assert sum(r["grad_reduce_dtype"] == "bf16" for r in cards.values()) == 30
    guide = [runs[r] for r in runs if r.startswith(GUIDE + " ")]
    assert all((r["grad_reduce_dtype"], r["precision_aware_optimizer"]) == ("fp32", "bf16-moments") for r in guide)


def test_super_gb200_card_runs_8192():
    """Nemotron 3 Super's GB200 BF16 performance item ran the recipe's 8,192-token sequences (amended,
    wt37_moe): its recipe's base, h100/nemotron_3_super.py nemotron_3_super_pretrain_8gpu_h100_bf16_config at
    ae2c24890ecd, sets seq_length 8192 (lines 56, 62). The card's own Megatron-logged 559.39 TFLOP/s a GPU
    over its 9.92635 s step is 8.4727e10 FLOPs a token at 8,192, the GB300 NVFP4 item's 8.4726e10 at its
    stated 8,192, within 2% of the model's causal count (8.6175e10); at 4,096 it would be 1.6945e11, twice
    the model's 8.5106e10. The printed 3,301.113 tokens/s is 512 x 4,096 / 9.92635 / 64, kept beside it."""
    from costmodel.layout.timing import step_time
    from reports.published_runs import train_setup

    runs, sources = _runs()
    gb200, gb300 = (runs[f"{CARDS} nemotron-3-super perf {p}"] for p in ("bf16 64xgb200", "nvfp4 64xgb300"))
    assert gb200["published_tokens_per_s_as_printed"] == pytest.approx(512 * 4096 / 9.92635 / 64, abs=5e-4)
    assert gb200["published_tokens_per_s_per_gpu"] == pytest.approx(512 * 8192 / 9.92635 / 64, abs=5e-4)
    per_token = {}
    for run in (gb200, gb300):
        logged = run["published_model_tflops_per_gpu"] * 1e12 * run["gpus"] * run["published_seconds_per_step"]
        per_token[run["fp8"] if "fp8" in run else "bf16"] = logged / (run["global_batch"] * run["seq_len"])
    assert per_token["bf16"] == pytest.approx(8.4727e10, rel=1e-4)
    assert per_token["nvfp4"] == pytest.approx(8.4726e10, rel=1e-4)
    counted = {}
    for seq in (4096, 8192):
        estimate, hardware, options = train_setup(dict(gb200, seq_len=seq), sources[CARDS])
        step = step_time(estimate, hardware, time_model="kernels", flops_convention="causal", **options).step()
        counted[seq] = step["model_flops"] / (512 * seq)
    assert counted == {4096: pytest.approx(8.5106e10, rel=1e-4), 8192: pytest.approx(8.6175e10, rel=1e-4)}
    assert per_token["bf16"] / counted[8192] == pytest.approx(0.9832, abs=1e-4)
    assert per_token["bf16"] * 8192 / 4096 / counted[4096] == pytest.approx(1.9911, abs=1e-4)


def test_gpt_oss_pretrain_cards_run_the_tokenizers_vocabulary():
    """GPT-OSS 120B's and 20B's H100 pretrain items ran after Megatron-Bridge's #4996 (af17edf52: _pretrain_common's
    use_tokenizer_vocab_size=True), with the RP2 Llama SentencePiece tokenizer: a 32,000-token vocabulary (amended,
    wt37_moe). Their logged FLOPs a token over the model's causal count: 0.8634 and 0.8312 at GPT-OSS's 201,088,
    0.9435 and 0.9461 at 32,000, beside 0.947-0.949 on the other GPT-OSS rows logged after #3947."""
    from costmodel.layout.timing import step_time
    from reports.published_runs import train_setup

    runs, sources = _runs()
    for name, at_201088, at_32000 in (("gpt-oss-120b pretrain bf16 64xh100", 0.8634, 0.9435),
                                      ("gpt-oss-20b pretrain bf16 16xh100", 0.8312, 0.9461)):
        run = runs[f"{CARDS} {name}"]
        assert run["config_changes"] == {"vocab_size": 32000} and "af17edf52" in run["amended"]
        logged = run["published_model_tflops_per_gpu"] * 1e12 / run["published_tokens_per_s_per_gpu"]
        for changes, expected in (({}, at_201088), ({"vocab_size": 32000}, at_32000)):
            estimate, hardware, options = train_setup(dict(run, config_changes=changes), sources[CARDS])
            assert estimate.cfg.vocab_size == changes.get("vocab_size", 201088)
            counted = step_time(estimate, hardware, time_model="kernels", flops_convention="causal",
                                **options).step()["model_flops"] / (run["global_batch"] * run["seq_len"])
            assert logged / counted == pytest.approx(expected, abs=1e-4)
