"""Other tools beside ours (validate/other_tools.py), the cases added in session 25: Llama 3 (GQA, a
128,256-token vocabulary), ZeRO-3 and FSDP2, decoding at batch 64, 32k context with SP, CP and DTensor,
Llama 3 70B in Megatron's layout, Mixtral's and Qwen3's experts. llm-analysis is given our sizes
(cases.llm_analysis_model). The record, its helpers and llm-analysis's formulas as restated in
tests/test_other_tools.py.
"""

from __future__ import annotations

import pytest

from costmodel.presets import load_preset
from tests.test_other_tools import CASES, llm_analysis_fwd, llm_analysis_params, tool
from validate import other_tools_cases as cases

L3 = "llama3-8b train 1 GPU 8192"
Z3 = "llama3-8b train ZeRO-3 dp8 8192"
DECODE = "llama3-8b decode batch 64 at 4096"
TP8 = "llama3.1-8b train tp8 sp 32k"
CP2 = "llama3.1-8b train tp4 cp2 sp 32k"
MIXTRAL = "mixtral-8x7b train ep8 dp8"


def test_llm_analysis_is_given_our_sizes():
    assert cases.llm_analysis_model("llama3-8b") == {
        "name": "llama3-8b", "num_layers": 32, "n_head": 32, "hidden_dim": 4096, "vocab_size": 128256,
        "max_seq_len": 8192, "num_key_value_heads": 8, "ffn_embed_dim": 14336, "expansion_ratio": 3.5,
        "model_type": "llama"}
    mixtral = cases.llm_analysis_model("mixtral-8x7b")
    assert (mixtral["moe_num_experts"], mixtral["moe_top_k"], mixtral["ffn_embed_dim"]) == (8, 2, 14336)
    assert set(CASES[CP2]["tools"]) == {"Megatron-LM"}  # llm-analysis has no context parallelism


def test_llm_analysis_with_our_sizes_still_counts_two_matrices_and_a_tied_head():
    """Llama 3's untied 128,256 x 4,096 head and its third FFN matrix; Mixtral's third matrix in each
    of its 8 experts a layer (its router, d E, it counts)."""
    for case in (L3, Z3, TP8):
        assert tool(case, "llm-analysis")["params"] == llm_analysis_params(4096, 32, 32, 8, 14336, 128256)
    assert CASES[L3]["ours"]["params"] - tool(L3, "llm-analysis")["params"] == \
        32 * 4096 * 14336 + 128256 * 4096 == 2_404_384_768
    assert tool(MIXTRAL, "llm-analysis")["params"] == llm_analysis_params(4096, 32, 32, 8, 14336, 32000, experts=8)
    assert CASES[MIXTRAL]["ours"]["params"] - tool(MIXTRAL, "llm-analysis")["params"] == \
        32 * 8 * 4096 * 14336 + 32000 * 4096 == 15_163_457_536


def test_llm_analysis_flops_have_no_ffn_width_and_no_experts():
    """3 x get_num_flops_fwd_total: 16 n d^2 a layer for any MLP, Mixtral's top-2 of 8 experts too."""
    assert tool(L3, "llm-analysis")["flops_sequence"] == 3 * llm_analysis_fwd(4096, 32, 32, 8, 128256, 8192)
    assert CASES[L3]["ours"]["flops_sequence"] - tool(L3, "llm-analysis")["flops_sequence"] == \
        3 * 32 * 8192 * 4096 * (6 * 14336 - 16 * 4096) == 65_970_697_666_560
    assert tool(TP8, "llm-analysis")["flops_sequence"] == 3 * llm_analysis_fwd(4096, 32, 32, 8, 128256, 32768)
    mixtral = tool(MIXTRAL, "llm-analysis")["flops_sequence"]
    assert mixtral == 3 * llm_analysis_fwd(4096, 32, 32, 8, 32000, 4096)  # a dense 4d FFN's
    assert CASES[MIXTRAL]["ours"]["flops_sequence"] / mixtral == pytest.approx(2.02, abs=0.005)


def test_zero3_shards_the_same_way_but_the_gradients_bytes():
    """ZeRO-3 over 8: weights 2 / 8 and optimizer 12 / 8 bytes a parameter in both; gradients 4 / 8 in
    llm-analysis (fp32), 6 / 8 in ours (bf16 shard + the fp32 partition DeepSpeed's step() allocates)."""
    ours, theirs = CASES[Z3]["ours"], tool(Z3, "llm-analysis")
    mine, its = 8_030_261_248, 5_625_876_480
    assert (ours["weights"], ours["gradients"], ours["optimizer"]) == (mine * 2 // 8, mine * 6 // 8, mine * 12 // 8)
    assert (theirs["weights"], theirs["gradients"], theirs["optimizer"]) == (its * 2 / 8, its * 4 / 8, its * 12 / 8)
    assert ours["activations"] == CASES[L3]["ours"]["activations"] == cases.MEASURED["saved llama3-8b 8192 sdpa"][0]


def test_decoding_at_batch_64_gqa_cache_traffic():
    """The cache of 64 x 4,096 tokens is 34,359,738,368 bytes (measured); LLM-Viewer's decode reads it
    with num_attention_heads (32), not the 8 KV heads: 4 x; llm-analysis charges 2 x the cache (of
    4,097 tokens) at 2,039 GB/s; llm-analysis's step has no attention over the cache."""
    kv = CASES[DECODE]["ours"]["kv_cache"]
    assert kv == 2 * 32 * 8 * 128 * 4096 * 64 * 2 == tool(DECODE, "LLM-Viewer")["kv_cache"]
    assert tool(DECODE, "LLM-Viewer")["raw"]["total"]["decode"]["load_kv_cache"] == 4 * kv
    la = tool(DECODE, "llm-analysis")
    assert la["kv_cache"] == kv * 4097 // 4096 == 34_368_126_976
    assert la["raw"]["kv_cache_latency"] == pytest.approx(2 * la["kv_cache"] / 2039e9, rel=1e-12)
    # a forward of one token a sequence: its attention term 4 b n^2 d at n = 1 sees one key, not the 4,096 cached
    assert la["decode_flops"] == 64 * llm_analysis_fwd(4096, 32, 32, 8, 128256, 1)
    assert CASES[DECODE]["ours"]["decode_flops"] - 1_098_068_787_200 == 2_142_699_520
    viewer = tool(DECODE, "LLM-Viewer")
    assert CASES[DECODE]["ours"]["weights"] - viewer["weights"] == 2 * 2 * 128256 * 4096 + 2 * (2 * 32 + 1) * 4096


def megatron_without_sp(s: int, h: int, tp: int, layers: int, vocab: int) -> float:
    """compute_activation_memory_without_sp at b = 1, pp = 1: s h (10 + 24 / tp) L + 8 s + s h + 2 (s V / tp
    + s h), x 1.05. No cp, no SP, no experts, no GQA in it."""
    return (s * h * (10 + 24 / tp) * layers + 8 * s + s * h + 2 * (s * vocab / tp + s * h)) * 1.05


def test_megatron_at_32k_with_sp_and_cp_and_with_experts():
    tp8, cp2, mix = (tool(c, "Megatron-LM") for c in (TP8, CP2, MIXTRAL))
    assert tp8["raw"]["activation_function"] == cp2["raw"]["activation_function"] == \
        "compute_activation_memory_without_sp"  # report_theoretical_memory's: SP without selective
    assert tp8["activations"] == pytest.approx(megatron_without_sp(32768, 4096, 8, 32, 129024), rel=1e-15)
    assert cp2["activations"] == pytest.approx(megatron_without_sp(32768, 4096, 4, 32, 128512), rel=1e-15)
    # Mixtral's: the dense Llama-2-7B row's bytes to the byte (no expert term)
    assert mix["activations"] == cases.MEGATRON_ROWS["llama2-7b tp1 pp1 dp8"]["activation_bytes"]
    assert CASES[MIXTRAL]["ours"]["activations"] / mix["activations"] == pytest.approx(1.754, abs=0.001)
    # model states: equal at tp 8 and for Mixtral; at cp 2 Megatron's optimizer is over dp only
    assert CASES[TP8]["ours"]["model_states"] == tp8["model_states"] == 18_086_436_864
    assert CASES[MIXTRAL]["ours"]["model_states"] == mix["model_states"]
    shard = CASES[CP2]["ours"]["weights"] // 2
    assert shard == 2_008_289_280
    assert cp2["model_states"] - CASES[CP2]["ours"]["model_states"] == 6 * shard
    # FLOPs: causal core (3 x 2 L n^2 d), the padded vocabulary, and Mixtral's router
    n, d = 32768, 4096
    assert CASES[TP8]["ours"]["flops_sequence"] - tp8["flops_sequence"] == \
        3 * 2 * 32 * n * n * d - 3 * 2 * n * d * (129024 - 128256)
    assert CASES[CP2]["ours"]["flops_sequence"] - cp2["flops_sequence"] == \
        3 * 2 * 32 * n * n * d - 3 * 2 * n * d * (128512 - 128256)
    assert CASES[MIXTRAL]["ours"]["flops_sequence"] - mix["flops_sequence"] == \
        3 * 2 * 32 * 4096**3 + 3 * 2 * 4096 * 4096 * 8 * 32 == 13_219_909_337_088


@pytest.mark.slow
def test_full_size_llama3_8b_of_the_class():
    """Llama-3-8B and -3.1-8B in bf16 under FakeTensorMode (no weights, about 15 s): parameters, the
    forward's matmul FLOPs at 8,192 and 32,768, the bytes saved for backward at 8,192, and the cache
    after a 64 x 4,096 prefill and after one decode step, with that step's FLOPs."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from validate.hf_models import build_hf_model, make_inputs
    from validate.measure import count_parameters, matmul_flops, saved_activation_bytes
    from validate.measure.flops import _flop_counter
    from validate.measure.memory import cache_bytes, output_cache
    from validate.torch_modes import fake_mode

    m = {key: value for key, (value, _) in cases.MEASURED.items()}
    d, layers, f, v, kv_width = 4096, 32, 14336, 128256, 1024
    matmuls = layers * (2 * d * d + 2 * d * kv_width + 3 * d * f) + d * v  # weights a token goes through
    for preset, n in (("llama3-8b", 8192), ("llama3.1-8b", 32768)):
        cfg = load_preset(preset)
        with fake_mode():
            model = build_hf_model(cfg, "sdpa", dtype=torch.bfloat16)
            assert count_parameters(model) == m["params llama3-8b"]
            forward = matmul_flops(model, make_inputs(cfg, 1, n)).forward
        assert forward == 2 * n * matmuls + 4 * layers * n * n * d == m[f"forward {preset} {n}"]
    cfg = load_preset("llama3-8b")
    with fake_mode():
        model = build_hf_model(cfg, "sdpa", dtype=torch.bfloat16)
        saved = saved_activation_bytes(model, make_inputs(cfg, 1, 8192, labels=True)).total_bytes
    assert saved == m["saved llama3-8b 8192 sdpa"]
    with fake_mode(), torch.no_grad():
        model = build_hf_model(cfg, "sdpa", dtype=torch.bfloat16).eval()
        cache = output_cache(model(input_ids=make_inputs(cfg, 64, 4096)["input_ids"], use_cache=True))
        prefill = sum(cache_bytes(cache).values())
        counter = _flop_counter()
        with counter:
            cache = output_cache(model(input_ids=torch.ones(64, 1, dtype=torch.long), cache=cache, use_cache=True))
        step, after = counter.get_total_flops(), sum(cache_bytes(cache).values())
    assert prefill == m["kv llama3-8b 64x4096"] == CASES[DECODE]["ours"]["kv_cache"]
    assert after == tool(DECODE, "llm-analysis")["kv_cache"]
    assert step == 2 * 64 * matmuls + 4 * layers * d * 4097 * 64 == 1_098_068_787_200


@pytest.mark.slow
def test_full_size_llama3_8b_under_fsdp2():
    """HF's Llama-3-8B under fully_shard (bf16 compute, fp32 reduction) on the fake process group of 8,
    under FakeTensorMode (about 25 s): rank 0 holds fp32 shards of the parameters and gradients, 4 / 8
    bytes a parameter each, and AdamW's m and v, 8 / 8 (with its 291 step counters, 4 bytes each, on the
    CPU; torch keeps them on the host on CUDA: Layout.device)."""
    pytest.importorskip("transformers")
    from costmodel.config import Workload
    from costmodel.layout import Layout, ParallelEstimate
    from validate.distributed.fsdp import FsdpCase, measure_fsdp
    from validate.distributed.launch import run_fake

    cfg = load_preset("llama3-8b")
    state = run_fake(measure_fsdp, 8, [0], FsdpCase(cfg, batch=1, seq_len=64, implementation="hf",
                                                    mixed_precision=True, fake=True, memory_tracker=False))[0]["state"]
    shard = cases.MEASURED["fsdp2 llama3-8b shard"][0]
    assert state["parameters"]["storage"] == state["gradients"]["storage"] == shard == 8_030_261_248 * 4 // 8
    assert state["optimizer"]["storage"] == 8_030_261_248 + 291 * 4
    workload = Workload(seq_len=8192, batch=1, dtype="bf16", attention="sdpa", impl="hf")
    cpu = ParallelEstimate(cfg, workload, Layout(dp=8, zero=3, framework="fsdp2", device="cpu")).per_stage[0]
    assert (cpu["weights"], cpu["gradients"], cpu["optimizer"]) == (
        shard, shard, state["optimizer"]["storage"])
    ours = CASES["llama3-8b train FSDP2 dp8 8192"]["ours"]
    assert (ours["weights"], ours["gradients"], ours["optimizer"]) == (shard, shard, 8_030_261_248)
    # llm-analysis's ZeRO-3 (the same run for FSDP, its docstring says): 2 + 4 + 12 bytes / 8 of its count,
    # a bf16 weight shard beside fp32 master weights FSDP2 does not keep (its fp32 shard is both)
    theirs = tool("llama3-8b train FSDP2 dp8 8192", "llm-analysis")
    assert theirs == {**tool(Z3, "llm-analysis"), "raw": theirs["raw"]}


QWEN3 = "qwen3-30b-a3b train ep8 dp8"


def test_qwen3_moe_head_width_experts_and_q_k_norms():
    """Qwen3-30B-A3B: 32 heads of 128 on d 2,048 (llm-analysis assumes d / h = 64), 128 experts of 768
    (top 8), q/k RMSNorms of 128 (Megatron's weight formula has no qk_layernorm term)."""
    d, layers, v = 2048, 48, 151936
    la = tool(QWEN3, "llm-analysis")
    assert la["params"] == llm_analysis_params(d, layers, 32, 4, 768, v, experts=128)
    attention_short = (2 * d * 4096 + 2 * d * 512) - (2 * d * d + 2 * d * d // 8)
    assert attention_short == 9_437_184
    assert CASES[QWEN3]["ours"]["params"] - la["params"] == \
        layers * attention_short + layers * 128 * d * 768 + v * d + layers * 2 * 128 == 10_427_838_464
    megatron = tool(QWEN3, "Megatron-LM")
    assert CASES[QWEN3]["ours"]["model_states"] - megatron["model_states"] == layers * 2 * 128 * (6 + 12 / 8) == 92_160
    # FLOPs: Megatron's causal core (3 x 2 n^2 (h d_h) L, half of ours) and no router (3 x 2 n d E L)
    n = 4096
    assert CASES[QWEN3]["ours"]["flops_sequence"] - megatron["flops_sequence"] == \
        3 * 2 * n * n * 4096 * layers + 3 * 2 * n * d * 128 * layers
    # activations: Megatron's s h (10 + 24) a layer on h = 2,048; llm-analysis's MLP x (128 / 8) x 8
    assert megatron["activations"] == pytest.approx(megatron_without_sp(n, d, 1, layers, v), rel=1e-15)
    mlp = (2 * n * d + (2 + 2) * (768 / d) * n * d) * (128 / 8) * 8  # get_activation_memory_per_layer_mlp
    assert mlp * layers > 0.9 * la["activations"] > CASES[QWEN3]["ours"]["activations"]


def test_long_context_activations_with_and_without_flash():
    """At 32,768: llm-analysis's flash_attn switch swaps (2 s h + 4 a s) 2 bytes a layer for 2 a s^2 x 2
    bytes (get_activation_memory_per_layer_attn); HF's eager keeps 6 bytes a score (fp32 softmax + bf16
    probabilities), which ours equals (measured); llm-analysis's time does not change."""
    s, h, a, layers = 32768, 4096, 32, 32
    sdpa, eager = (tool(f"llama3.1-8b train 1 GPU 32k {k}", "llm-analysis") for k in ("sdpa", "eager"))
    assert eager["activations"] - sdpa["activations"] == layers * (2 * a * s * s * 2 - (2 * s * h + 4 * a * s) * 2)
    assert eager["seconds"] == sdpa["seconds"]
    ours = {k: CASES[f"llama3.1-8b train 1 GPU 32k {k}"]["ours"] for k in ("sdpa", "eager")}
    assert ours["eager"]["activations"] == cases.MEASURED["saved llama3.1-8b 32768 eager"][0]
    scores = layers * a * s * s
    assert 1 - 6 * scores / ours["eager"]["activations"] == pytest.approx(0.0353, abs=0.0005)
    assert ours["eager"]["activations"] - eager["activations"] > 2 * scores  # the fp32 copy it leaves out
    assert 1 - sdpa["activations"] / ours["sdpa"]["activations"] == pytest.approx(0.188, abs=0.001)
    # the attention core is over half of the step's FLOPs here, counted dense by all but Megatron
    assert 3 * 4 * layers * s * s * h / ours["sdpa"]["flops_sequence"] == pytest.approx(0.534, abs=0.001)


@pytest.mark.slow
def test_full_size_llama3_1_8b_saved_bytes_at_32k():
    """Llama-3.1-8B in bf16 under FakeTensorMode, one 32,768-token sequence with its loss: the bytes
    saved for backward with sdpa and with eager attention (about 15 s)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from validate.hf_models import build_hf_model, make_inputs
    from validate.measure import saved_activation_bytes
    from validate.torch_modes import fake_mode

    cfg = load_preset("llama3.1-8b")
    for attention in ("sdpa", "eager"):
        with fake_mode():
            model = build_hf_model(cfg, attention, dtype=torch.bfloat16)
            saved = saved_activation_bytes(model, make_inputs(cfg, 1, 32768, labels=True)).total_bytes
        assert saved == cases.MEASURED[f"saved llama3.1-8b 32768 {attention}"][0], attention


@pytest.mark.slow
def test_full_size_moe_forward_flops_of_the_classes():
    """HF's Mixtral-8x7B and Qwen3-30B-A3B in bf16 under FakeTensorMode, one 4,096-token sequence
    (about 20 s): FlopCounterMode counts top-k experts a token (2 of 8 of 14,336; 8 of 128 of 768),
    the router's d x E, and Qwen3's 4,096-wide queries on d 2,048."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from validate.hf_models import build_hf_model, make_inputs
    from validate.measure import matmul_flops
    from validate.torch_modes import fake_mode

    n = 4096
    shapes = {"mixtral-8x7b": (4096, 32, 4096, 1024, 14336, 8, 2, 32000),
              "qwen3-30b-a3b": (2048, 48, 4096, 512, 768, 128, 8, 151936)}
    for preset, (d, layers, q, kv, f, experts, top_k, v) in shapes.items():
        cfg = load_preset(preset)
        with fake_mode():
            model = build_hf_model(cfg, "sdpa", dtype=torch.bfloat16)
            forward = matmul_flops(model, make_inputs(cfg, 1, n)).forward
        token = layers * (2 * d * q + 2 * d * kv + top_k * 3 * d * f + d * experts) + d * v
        assert forward == 2 * n * token + 4 * layers * n * n * q == cases.MEASURED[f"forward {preset} {n}"][0]


DTENSOR = "llama3.1-8b train DTensor tp8 sp 32k"


def test_sequence_parallelism_under_dtensor_keeps_what_megatrons_formula_leaves_out():
    measured = cases.MEASURED["saved llama3.1-8b 32768 dtensor tp8 sp"][0]
    assert CASES[DTENSOR]["ours"]["activations"] == measured
    assert measured / tool(DTENSOR, "llm-analysis")["activations"] == pytest.approx(2.52, abs=0.01)
    assert tool(DTENSOR, "llm-analysis")["activations"] == tool(TP8, "llm-analysis")["activations"]
    assert CASES[TP8]["ours"]["activations"] == 19_411_763_202  # ours for Megatron's code, same sizes
    assert 32768 * 128256 * 4 == 16_810_770_432  # the loss's fp32 logits, whole on each rank


@pytest.mark.slow
def test_full_size_llama3_1_8b_under_dtensor_tp_and_sp_at_32k():
    """HF's Llama-3.1-8B (sdpa, bf16) under DTensor tp 8 with SP on the fake process group, under
    FakeTensorMode, one 32,768-token sequence (about 15 s): rank 0's saved bytes, its loss's fp32
    logits whole, each layer's gathered attention and MLP inputs."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from validate.distributed.launch import run_fake
    from validate.distributed.tensor_parallel import TpCase, measure_tp

    case = TpCase(load_preset("llama3.1-8b"), batch=1, seq_len=32768, implementation="hf", sequence_parallel=True,
                  fake=True, dtype=torch.bfloat16, attention="sdpa")
    measured = run_fake(measure_tp, 8, [0], case)[0]
    assert measured["saved_bytes"] == cases.MEASURED["saved llama3.1-8b 32768 dtensor tp8 sp"][0]
    by_module = measured["saved_by_module"]
    # the logits upcast for the loss, whole; the int64 labels; the loss's scalars
    assert by_module["(root)"] == 32768 * 128256 * 4 + 32768 * 8 + 12
    assert by_module["model.layers.1"] == 1_292_402_688


L70 = "llama3-70b train tp8 pp4 dp2 sp selective 8192"


def test_llama3_70b_in_megatrons_layout():
    d, layers, f, v, n = 8192, 80, 28672, 128256, 8192
    assert tool(L70, "llm-analysis")["params"] == llm_analysis_params(d, layers, 64, 8, f, v)
    assert CASES[L70]["ours"]["params"] - tool(L70, "llm-analysis")["params"] == \
        layers * d * f + v * d == 19_841_155_072
    # selective recomputation adds its attention core's forward, 4 n^2 d a layer
    la = tool(L70, "llm-analysis")["flops_sequence"]
    assert la == 3 * llm_analysis_fwd(d, layers, 64, 8, v, n) + 4 * n * n * d * layers
    assert 1 - la / CASES[L70]["ours"]["flops_sequence"] == pytest.approx(0.123, abs=0.001)
    megatron = tool(L70, "Megatron-LM")
    assert CASES[L70]["ours"]["flops_sequence"] - megatron["flops_sequence"] == \
        3 * 2 * layers * n * n * d - 3 * 2 * n * d * (129024 - v)
    assert CASES[L70]["ours"]["model_states"] - megatron["model_states"] == -(6 + 12 // 2) * d // 4
    assert CASES[L70]["ours"]["activations"] / megatron["activations"] == pytest.approx(1.046, abs=0.001)


@pytest.mark.slow
def test_full_size_llama3_70b_forward_flops():
    """HF's Llama-3-70B in bf16 under FakeTensorMode, one 8,192-token sequence (about 12 s)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from validate.hf_models import build_hf_model, make_inputs
    from validate.measure import matmul_flops
    from validate.torch_modes import fake_mode

    cfg, n = load_preset("llama3-70b"), 8192
    with fake_mode():
        forward = matmul_flops(build_hf_model(cfg, "sdpa", dtype=torch.bfloat16), make_inputs(cfg, 1, n)).forward
    d, layers, f, v = 8192, 80, 28672, 128256
    assert forward == 2 * n * (layers * (2 * d * d + 2 * d * 1024 + 3 * d * f) + d * v) + 4 * layers * n * n * d
    assert forward == cases.MEASURED["forward llama3-70b 8192"][0]
