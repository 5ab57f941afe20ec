"""Session 41's second batch of unseen training rows (wt41_unseent2; costmodel/published_runs.json sources
"jaxtoolbox-pax-126m", "jaxtoolbox-pax-5b", "jaxtoolbox-pax-175b", "jaxtoolbox-pax-2310-126m", "jaxtoolbox-pax-2310-5b",
"jaxtoolbox-pax-2310-175b", "jaxtoolbox-pax-llama", "jaxtoolbox-maxtext", "dgxc-grok1" and "dgxc-llama4", typed before
any was computed: a18594aa, 07a43543 and ee4519ba): NVIDIA JAX-Toolbox's Pax README (GPT 126M, 5B and 175B on A100 80GB
and H100 nodes, its 23.10 and 24.04 tables, and LLaMA-2 7B SFT) and MaxText README (Llama 2 7B on 8 H100s), and DGX
Cloud benchmarking's Grok-1 314B and Llama 4 Maverick MoE recipes (NeMo 25.04, GB200 and H100); each row's figure as
its README prints it, the kernel model's ratios as first computed (our speed over the published one), the figures
validate/FINDINGS.md quotes ("Unseen training rows, part 2"). Nothing in the model was changed for them."""

from __future__ import annotations

import pytest

from tests.unseen_rows import assert_first_computed, assert_summaries, ratios, runs_of, train_groups, train_setup_of

SOURCES = ("jaxtoolbox-pax-126m", "jaxtoolbox-pax-5b", "jaxtoolbox-pax-175b", "jaxtoolbox-pax-2310-126m",
           "jaxtoolbox-pax-2310-5b", "jaxtoolbox-pax-2310-175b", "jaxtoolbox-pax-llama", "jaxtoolbox-maxtext",
           "dgxc-grok1", "dgxc-llama4")

# each Pax source's (GPU, precision, Sequences/Sec) as its README table prints them (the whole job's sequences a second)
PAX = {"jaxtoolbox-pax-126m": [("a100-80gb", "bf16", 2098.16), ("a100-80gb", "te-bf16", 2526.72),
                               ("h100-sxm", "te-bf16", 4709.12)],
       "jaxtoolbox-pax-5b": [("a100-80gb", "bf16", 594.13), ("a100-80gb", "te-bf16", 718.19),
                             ("h100-sxm", "te-bf16", 1657.24), ("h100-sxm", "te-fp8", 2374.66)],
       "jaxtoolbox-pax-175b": [("a100-80gb", "te-bf16", 20.44), ("h100-sxm", "te-bf16", 51.00),
                               ("h100-sxm", "te-fp8", 84.45)],
       "jaxtoolbox-pax-2310-126m": [("a100-80gb", "bf16", 1877.20), ("a100-80gb", "te-bf16", 2512.2),
                                    ("h100-sxm", "te-bf16", 4143.21)],
       "jaxtoolbox-pax-2310-5b": [("a100-80gb", "bf16", 465.45), ("a100-80gb", "te-bf16", 586.82),
                                  ("h100-sxm", "te-bf16", 1066.67), ("h100-sxm", "te-fp8", 1288.05)],
       "jaxtoolbox-pax-2310-175b": [("a100-80gb", "bf16", 18.29), ("a100-80gb", "te-bf16", 19.47),
                                    ("h100-sxm", "te-bf16", 44.01), ("h100-sxm", "te-fp8", 65.64)]}
# size -> (GPUs, BS / GPU, layers, width, heads, vocabulary, zero, recompute 24.04, recompute 23.10)
SIZES = {"126m": (64, 4, 12, 768, 12, 50304, 0, "none", "none"),
         "5b": (256, 8, 24, 4096, 32, 50304, 3, "jax-dots", "selective"),
         "175b": (256, 6, 96, 12288, 96, 50257, 3, "full", "full")}


def test_the_pax_rows_are_the_readme_tables():
    """tokens/s a GPU = Sequences/Sec x 2,048 / #GPUs; GBS = BS / GPU x #GPUs, one micro-batch a step; the mesh as the
    table states it (126M: DP 64, plain data parallelism; 5B and 175B: FSDP 256, fully sharded); flash attention from
    the 24.04 tables on (cuDNN's), not the 126M's (the page's note) nor any 23.10 row's."""
    for name, rows in PAX.items():
        size = name.split("-")[-1]
        gpus, per_gpu, layers, width, heads, vocab, zero, recompute, recompute_2310 = SIZES[size]
        runs = runs_of(name)
        assert [(r.get("hardware", "a100-80gb"), r["id"].split()[2]) for r in runs] == [(h, p) for h, p, _ in rows]
        for run, (_, precision, sequences) in zip(runs, rows):
            assert run["published_tokens_per_s_per_gpu"] == pytest.approx(sequences * 2048 / gpus, abs=0.001)
            assert (run["gpus"], run["dp"], run["micro_batch"], run["global_batch"], run["seq_len"]) == \
                (gpus, gpus, per_gpu, per_gpu * gpus, 2048)
            assert (run.get("fp8") == "tensorwise") == (precision == "te-fp8")
            estimate, hardware, options = train_setup_of(run)
            layout, cfg = estimate.layout, estimate.cfg
            assert hardware.name == run.get("hardware", "a100-80gb")
            assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.vocab_size, cfg.position, cfg.dropout) == \
                (layers, width, heads, 4 * width, vocab, "learned", 0.0)
            assert (layout.dp, layout.dp_shard, layout.zero, layout.microbatches) == (gpus, None, zero, 1)
            flash = "2310" not in name and size != "126m"
            assert (estimate.workload.attention == "flash") == flash
            assert options.get("attention_kernel") == ("cudnn" if flash else None)
            assert estimate.workload.recompute == (recompute_2310 if "2310" in name else recompute)
            assert options["compiled"] is True
        assert runs_of(name)[0]["id"].endswith("23.10" if "2310" in name else "24.04")


def test_the_llama_and_maxtext_rows_are_their_tables():
    """Pax's LLaMA-2 7B SFT: 16 H100s, FSDP 16, BS 2, 4,096 tokens, 43.24 and 53.69 sequences a second; MaxText's
    Llama 2 7B: 8 H100s, FSDP 8, GBS 16, 0.721 s a step (22.19 sequences a second)."""
    sft = runs_of("jaxtoolbox-pax-llama")
    assert [r["published_tokens_per_s_per_gpu"] for r in sft] == [round(s * 4096 / 16, 3) for s in (43.24, 53.69)]
    maxtext = runs_of("jaxtoolbox-maxtext")[0]
    assert maxtext["published_seconds_per_step"] == 0.721
    assert maxtext["published_tokens_per_s_per_gpu"] == pytest.approx(16 * 4096 / 0.721 / 8, abs=0.001)
    assert round(16 / 0.721, 2) == 22.19  # the table's Sequences/Sec, from its step time
    for run, gpus, recompute in ((sft[0], 16, "full"), (maxtext, 8, "none")):
        estimate, hardware, _ = train_setup_of(run)
        assert (hardware.name, estimate.cfg.name, estimate.layout.dp, estimate.layout.zero, estimate.workload.seq_len,
                estimate.workload.batch, estimate.workload.recompute) == \
            ("h100-sxm", "llama2-7b", gpus, 3, 4096, 2, recompute)


GROK = {"bf16": ((7.325, 7.39, 7.324), 15.933), "fp8": ((5.298, 5.224, 5.193), 13.433)}
MAVERICK = {"bf16": ((7.781, 7.859, 7.992), 4.426), "fp8": ((6.093, 6.223, 6.327), 3.855)}


def test_the_dgx_cloud_rows_are_the_readmes_step_times():
    """tokens/s a GPU = 8,192 x GBS / step / GPUs from each README's step time (Grok-1's 512-GPU GB200 throughput cells
    print half of that; its MFU cells follow the step); the weak-scaled GBS of each config table."""
    grok = runs_of("dgxc-grok1")
    assert [r["published_seconds_per_step"] for r in grok] == [*GROK["bf16"][0], *GROK["fp8"][0],
                                                                GROK["bf16"][1], GROK["fp8"][1]]
    assert [r["global_batch"] for r in grok] == [256, 512, 1024] * 2 + [1024, 1024]
    maverick = runs_of("dgxc-llama4")
    assert [r["published_seconds_per_step"] for r in maverick] == [*MAVERICK["bf16"][0], *MAVERICK["fp8"][0],
                                                                    MAVERICK["bf16"][1], MAVERICK["fp8"][1]]
    assert [r["global_batch"] for r in maverick] == [1024, 2048, 4096] * 2 + [1024, 1024]
    for run in grok + maverick:
        assert run["published_tokens_per_s_per_gpu"] == pytest.approx(
            8192 * run["global_batch"] / run["published_seconds_per_step"] / run["gpus"], abs=0.001)
    # the README's 512-GPU GB200 Grok-1 BF16 throughput cell, 572,679, is half of the step's
    assert round(8192 * 1024 / 7.324) == 2 * 572679 + 1


def test_grok1_is_mixtral_at_the_scripts_sizes():
    """NeMo's pretrain_grok1_314b.py: MixtralConfig8x7B at 64 layers, 6,144 wide, 48 heads, 8 query groups, FFN 32,768,
    8 experts (top 2), the Llama 3 tokenizer's 128,256 tokens; the H100 layout TP 4 PP 8 CP 2 VP 8 EP 8 ETP 1."""
    run = runs_of("dgxc-grok1")[-1]
    estimate, hardware, _ = train_setup_of(run)
    cfg, layout = estimate.cfg, estimate.layout
    assert (cfg.n_layers, cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.d_ff, cfg.n_experts, cfg.top_k,
            cfg.vocab_size) == (64, 6144, 48, 8, 32768, 8, 2, 128256)
    assert (layout.tp, layout.pp, layout.cp, layout.dp, layout.ep, layout.etp, layout.virtual_stages,
            layout.microbatches, layout.fp8, layout.fp8_param_gather, hardware.name) == \
        (4, 8, 2, 8, 8, 1, 8, 128, "delayed", True, "h100-sxm")


REFUSED = tuple(f"jaxtoolbox-pax-{s} {p} fsdp256 256xa100-80gb 24.04" for s, p in
                (("5b", "gpt3-5b bf16"), ("5b", "gpt3-5b te-bf16"), ("175b", "gpt3-175b te-bf16")))
#: Refused when typed ("--etp 4 is not modelled": only parallel folding's ETP 1), computed since wt41_etp (session 41:
#: Megatron-Core's expert tensor parallelism, costmodel/layout/experts.py): their first computed ratios
ETP_ROWS = {**{f"dgxc-grok1 grok1-314b {p} tp4 ep8 etp4 {g}xgb200": r
               for p, rs in (("bf16", (1.01, 1.017, 1.007)), ("fp8", (1.123, 1.105, 1.097)))
               for g, r in zip((128, 256, 512), rs)},
            "dgxc-llama4 llama4-maverick bf16 tp4 ep128 etp4 512xh100": 1.076,
            "dgxc-llama4 llama4-maverick fp8 tp4 ep128 etp4 512xh100": 1.143}
# Session 43 (wt43_review): Megatron's linear_qkv as one GEMM (facts.json fused_qkv) moved these
ETP_ROWS.update({'dgxc-grok1 grok1-314b bf16 tp4 ep8 etp4 128xgb200': 1.012, 'dgxc-grok1 grok1-314b bf16 tp4 ep8 etp4 256xgb200': 1.019, 'dgxc-grok1 grok1-314b bf16 tp4 ep8 etp4 512xgb200': 1.009, 'dgxc-grok1 grok1-314b fp8 tp4 ep8 etp4 128xgb200': 1.124, 'dgxc-grok1 grok1-314b fp8 tp4 ep8 etp4 256xgb200': 1.106, 'dgxc-grok1 grok1-314b fp8 tp4 ep8 etp4 512xgb200': 1.098, 'dgxc-llama4 llama4-maverick bf16 tp4 ep128 etp4 512xh100': 1.083, 'dgxc-llama4 llama4-maverick fp8 tp4 ep128 etp4 512xh100': 1.145})


def test_the_refused_rows_say_why(published_tables):
    """Not expressible, as `published` marks them: cuDNN's fused attention has no Ampere figures (the A100 24.04 rows
    with flash attention). The eight rows at expert tensor parallelism 4 (ETP = TP, the experts split beside the
    attention: the GB200 Grok-1 rows, the H100 Maverick rows), refused when typed, compute since wt41_etp."""
    why: dict[str, str] = {}
    every = ratios(("jaxtoolbox-pax-5b", "jaxtoolbox-pax-175b", "dgxc-grok1", "dgxc-llama4"), refused=why,
                   tables=published_tables)
    assert sorted(why) == sorted(REFUSED)
    assert all("has no published figures on ampere" in reason for reason in why.values())
    assert {k: round(every[k], 3) for k in ETP_ROWS} == ETP_ROWS


FIRST = {"jaxtoolbox-pax-126m gpt3-126m te-bf16 dp64 64xh100-sxm 24.04": 0.876,
         "jaxtoolbox-pax-5b gpt3-5b te-bf16 fsdp256 256xh100-sxm 24.04": 1.29,
         "jaxtoolbox-pax-175b gpt3-175b te-fp8 fsdp256 256xh100-sxm 24.04": 0.97,
         "jaxtoolbox-pax-2310-5b gpt3-5b bf16 fsdp256 256xa100-80gb 23.10": 1.364,
         "jaxtoolbox-pax-2310-175b gpt3-175b bf16 fsdp256 256xa100-80gb 23.10": 1.035,
         "jaxtoolbox-pax-llama llama2-7b sft te-bf16 fsdp16 16xh100": 0.691,
         "jaxtoolbox-maxtext llama2-7b bf16 fsdp8 8xh100": 1.088,
         "dgxc-grok1 grok1-314b bf16 tp4 pp8 cp2 vp8 ep8 etp1 512xh100": 1.006,
         "dgxc-grok1 grok1-314b fp8 tp4 pp8 cp2 vp8 ep8 etp1 512xh100": 1.213,
         "dgxc-llama4 llama4-maverick bf16 pp2 vp12 ep64 128xgb200": 1.204,
         "dgxc-llama4 llama4-maverick fp8 pp2 vp12 ep64 512xgb200": 1.36}
MOVED: dict[str, float] = {}


def test_first_computed_ratios_of_a_few_rows(published_tables):
    assert_first_computed(SOURCES, FIRST, MOVED, REFUSED, tables=published_tables)


FIRST_STATS = {"training rates": ((29, 14.2, 25, 12, 6), (0.691, 1.364)),
               "jaxtoolbox-pax-126m": ((3, 10.2, 3, 1, 0), (0.876, 1.102)),
               "jaxtoolbox-pax-5b": ((2, 23.3, 2, 0, 0), (1.176, 1.29)),
               "jaxtoolbox-pax-175b": ((2, 5.2, 2, 2, 1), (0.97, 1.073)),
               "jaxtoolbox-pax-2310-126m": ((3, 7.9, 3, 2, 1), (0.921, 1.232)),
               "jaxtoolbox-pax-2310-5b": ((4, 28.8, 3, 1, 0), (1.082, 1.364)),
               "jaxtoolbox-pax-2310-175b": ((4, 3.1, 4, 4, 3), (0.972, 1.063)),
               "jaxtoolbox-pax-llama": ((2, 22.5, 1, 0, 0), (0.691, 0.858)),
               "jaxtoolbox-maxtext": ((1, 8.8, 1, 1, 0), (1.088, 1.088)),
               "dgxc-grok1": ((2, 11.0, 2, 1, 1), (1.006, 1.213)),
               "dgxc-llama4": ((6, 27.5, 4, 0, 0), (1.204, 1.36))}
# wt41_etp (session 41): the eight expert-tensor-parallel rows computed (ETP_ROWS)
NOW_STATS = {**FIRST_STATS, "training rates": ((37, 10.5, 33, 17, 9), (0.691, 1.364)),
             "dgxc-grok1": ((8, 5.7, 8, 5, 4), (1.006, 1.213)),
             "dgxc-llama4": ((8, 22.0, 6, 1, 0), (1.076, 1.36))}


@pytest.mark.slow  # every expressible row of the ten sources computed
def test_the_rows_as_first_computed(published_tables):
    why: dict[str, str] = {}
    every = ratios(SOURCES, refused=why, tables=published_tables)
    assert sorted(why) == sorted(REFUSED)
    groups = train_groups(every, SOURCES)
    assert groups.pop("GPU-hours") == []
    assert_summaries(every, groups, NOW_STATS)
    # the pattern: the model cannot tell Pax's BF16 (praxis) from its TE BF16 rows (one figure for both), whose
    # published rates differ by up to 34% (126M on A100, 23.10); the FP8 gain the model gives exceeds the one measured
    # on every FP8 pair of the NeMo recipes (Grok-1 on H100, Maverick on GB200)
    pairs = [(k, k.replace(" bf16 ", " te-bf16 ")) for k in every if " bf16 " in k and k.startswith("jaxtoolbox-pax")
             and k.replace(" bf16 ", " te-bf16 ") in every]
    assert len(pairs) == 5
    assert all(every[b] > every[t] for b, t in pairs)
    for name in ("dgxc-grok1", "dgxc-llama4"):
        for key in every:
            if key.startswith(name) and " bf16 " in key:
                assert every[key.replace(" bf16 ", " fp8 ")] > every[key], key


# Session 43 (wt43_review): Megatron's linear_qkv as one GEMM and its dense attention's scale, mask and
# dropout passes (facts.json fused_qkv, fused_scale_mask_softmax) moved these rows' ratios and summaries.
MOVED.update({'dgxc-grok1 grok1-314b bf16 tp4 pp8 cp2 vp8 ep8 etp1 512xh100': 1.011,
              'dgxc-grok1 grok1-314b fp8 tp4 pp8 cp2 vp8 ep8 etp1 512xh100': 1.215,
              'dgxc-llama4 llama4-maverick bf16 pp2 vp12 ep64 128xgb200': 1.205})


# Session 43 (wt43_review): Megatron's linear_qkv as one GEMM and its dense attention's scale, mask and
# dropout passes (facts.json fused_qkv, fused_scale_mask_softmax) moved these rows' ratios and summaries.
NOW_STATS.update({'training rates': ((37, 10.6, 33, 17, 9), (0.691, 1.364)),
              'dgxc-grok1': ((8, 5.8, 8, 5, 4), (1.009, 1.215)),
              'dgxc-llama4': ((8, 22.0, 6, 1, 0), (1.083, 1.36))})


# the eager score GEMMs' writes at the A100's Copy rate (session 45): 1.364 and 1.035 before
MOVED.update({
              "jaxtoolbox-pax-2310-5b gpt3-5b bf16 fsdp256 256xa100-80gb 23.10": 1.367,
              "jaxtoolbox-pax-2310-175b gpt3-175b bf16 fsdp256 256xa100-80gb 23.10": 1.036})


# the eager score GEMMs' writes at the A100's Copy rate (session 45); before: (10.6, 0.691-1.364), (10.2,
# 0.876-1.102), (7.9, 0.921-1.232), (28.8, 1.082-1.364), (3.1, 0.972-1.063)
NOW_STATS = {**NOW_STATS,
                 "training rates": ((37, 10.7, 33, 17, 9), (0.691, 1.367)),
                 "jaxtoolbox-pax-126m": ((3, 10.7, 3, 1, 0), (0.876, 1.107)),
                 "jaxtoolbox-pax-2310-126m": ((3, 7.5, 3, 2, 1), (0.925, 1.237)),
                 "jaxtoolbox-pax-2310-5b": ((4, 28.8, 3, 1, 0), (1.085, 1.367)),
                 "jaxtoolbox-pax-2310-175b": ((4, 3.1, 4, 4, 3), (0.973, 1.063))}

# wt46_mgsoftmax: Megatron's causal softmax loads its rows to the diagonal and a recomputed forward pays its
# leaves' launches again (StepTime.compute); each group it moved, its summary before beside it
NOW_STATS = {**NOW_STATS,
    "training rates": ((37, 10.7, 33, 17, 9), (0.689, 1.367)),  # was ((37, 10.7, 33, 17, 9), (0.691, 1.367))
    "jaxtoolbox-pax-5b": ((2, 23.2, 2, 0, 0), (1.174, 1.289)),  # was ((2, 23.3, 2, 0, 0), (1.176, 1.29))
    "jaxtoolbox-pax-2310-5b": ((4, 28.7, 3, 1, 0), (1.084, 1.367)),  # was ((4, 28.8, 3, 1, 0), (1.085, 1.367))
    "jaxtoolbox-pax-llama": ((2, 22.7, 1, 0, 0), (0.689, 0.856))}  # was ((2, 22.5, 1, 0, 0), (0.691, 0.858))

# wt46_mgsoftmax: Megatron's causal softmax loads its rows to the diagonal and a recomputed forward pays its
# leaves' launches again (StepTime.compute); each row it moved, its ratio before beside it
MOVED = {**MOVED,
    "jaxtoolbox-pax-5b gpt3-5b te-bf16 fsdp256 256xh100-sxm 24.04": 1.289,  # was 1.29
    "jaxtoolbox-pax-llama llama2-7b sft te-bf16 fsdp16 16xh100": 0.689}  # was 0.691
