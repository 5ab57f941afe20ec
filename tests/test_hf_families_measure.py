"""Issue 14's families measured: Hugging Face's own classes against the closed forms of
tests/hf_family_formulas.py.

Every family of tests/family_configs.py (Llama 3.1, Qwen2.5, Qwen3, Gemma, Gemma 2, Phi-3,
Mistral with a window, GPT-NeoX, Falcon old and new, OPT, BLOOM, Mixtral, Qwen2-MoE, DeepSeek-V3) is
built by validate.hf_families from a config dict and measured by validate/measure.py: parameters,
forward and backward matmul FLOPs, bytes saved for backward (eager attention, fp32 and bf16, b = 1 included),
KV-cache bytes after a prefill and decode steps, decode-step FLOPs, and for the MoE families the
grouped_mm FLOPs and the observed routing. Each formula cites the code that makes it so; every
assertion is an exact integer. validate/FINDINGS.md section 11 explains them tensor by tensor.
transformers 5.24.0, torch 2.13.0 (CPU).
"""

from __future__ import annotations

import contextlib

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.family_configs import FAMILY_CONFIGS  # noqa: E402
from tests.hf_family_formulas import (  # noqa: E402
    MOE, active_parameters, attention_flops, dims, experts_batched, experts_grouped, forward_flops,
    kv_cache_bytes, layer_kinds, parameters, saved_bytes, saved_moe,
)
from validate.hf_families import build_hf_from_dict, family_inputs  # noqa: E402
from validate.hf_models import fake_mode  # noqa: E402
from validate.measure import (  # noqa: E402
    cache_after_each_step, count_parameters, expert_loads, matmul_flops, profiler_matmul_flops,
    run_with_cache, saved_activation_bytes,
)

WORKLOADS = ((2, 10), (1, 7))  # (b, n): n longer than every window; b = 1 keeps some views


@contextlib.contextmanager
def built(name, dtype, fake=True, experts=None):
    """The family's model, inside the FakeTensorMode it was built in (fake=False: real tensors)."""
    with fake_mode() if fake else contextlib.nullcontext():
        torch.manual_seed(0)
        yield build_hf_from_dict(FAMILY_CONFIGS[name], dtype=dtype, experts_implementation=experts)


def measure_dtype(name, dtype):
    """MoE in fp32 runs on real tensors: torch._grouped_mm's fake kernel takes only bf16."""
    return not (name in MOE and dtype == torch.float32)


# ---------------------------------------------------------------------------------------------
# Parameters and FLOPs


@pytest.mark.parametrize("name", list(FAMILY_CONFIGS))
def test_parameters(name):
    with built(name, torch.float32, experts="batched_mm") as model:
        assert count_parameters(model) == parameters(name, FAMILY_CONFIGS[name])


def test_active_parameters_of_the_moe_families():
    # Mixtral: 2 of 5 experts of 3*48*40 per layer, 2 layers; the router and attention stay active
    assert active_parameters("mixtral", FAMILY_CONFIGS["mixtral"]) == 83_184 - 2 * 3 * 5_760
    assert active_parameters("deepseek_v3", FAMILY_CONFIGS["deepseek_v3"]) == 75_144 - 2 * 5 * 2_304


@pytest.mark.parametrize("name", list(FAMILY_CONFIGS))
def test_forward_and_backward_matmul_flops(name):
    c = FAMILY_CONFIGS[name]
    with built(name, torch.bfloat16 if name in MOE else torch.float32) as model:
        flops = matmul_flops(model, family_inputs(c, 2, 10, labels=True), backward=True)
        assert flops.forward == forward_flops(name, c, 2, 10)
        assert flops.backward == 2 * flops.forward  # every product trains one of its operands
        assert matmul_flops(model, family_inputs(c, 1, 7)).forward == forward_flops(name, c, 1, 7)


# ---------------------------------------------------------------------------------------------
# Bytes saved for backward


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("name", list(FAMILY_CONFIGS))
def test_saved_bytes(name, dtype):
    c, s = FAMILY_CONFIGS[name], 4 if dtype == torch.float32 else 2
    with built(name, dtype, fake=measure_dtype(name, dtype)) as model:
        for b, n in WORKLOADS:
            saved = saved_activation_bytes(model, family_inputs(c, b, n, labels=True))
            assert saved.total_bytes == saved_bytes(name, c, b, n, s), (b, n)


def test_example_saved_bytes():
    # the numbers FINDINGS.md section 11 quotes (b = 2, n = 10)
    for name, s, want in (("gemma2", 2, 204_780), ("falcon_7b", 4, 84_596),
                          ("mixtral", 2, 126_204), ("deepseek_v3", 2, 188_068)):
        assert saved_bytes(name, FAMILY_CONFIGS[name], 2, 10, s) == want


def test_moe_saves_int32_expert_offsets_once_per_layer():
    with built("mixtral", torch.bfloat16) as model:
        saved = saved_activation_bytes(model, family_inputs(FAMILY_CONFIGS["mixtral"], 2, 10, True))
    offsets = [t for t in saved.tensors if t.op == "GroupedMmBackward0._saved_offs"]
    assert [(t.dtype, t.shape) for t in offsets] == [("int32", (5,))] * 4  # 2 grouped_mm x 2 layers
    assert sum(t.bytes for t in offsets) == 2 * 4 * 5  # shared by both products: 4 E per layer


def test_deepseek_router_branches_that_end_in_indices_are_not_kept():
    # group scores' top-2 indices (T, G, 2), the groups' top-k indices (T, topk_group) and the
    # bool mask (T, E): saved by nodes the loss cannot reach, freed when the router returns
    c = FAMILY_CONFIGS["deepseek_v3"]
    with built("deepseek_v3", torch.bfloat16) as model:
        saved = saved_activation_bytes(model, family_inputs(c, 2, 10, labels=True))
    T, G, E = 20, c["n_group"], c["n_routed_experts"]
    assert saved.unreachable_bytes == 2 * (8 * T * G * 2 + 8 * T * c["topk_group"] + T * E)


# ---------------------------------------------------------------------------------------------
# KV cache


@pytest.mark.parametrize("name", list(FAMILY_CONFIGS))
def test_kv_cache_bytes(name):
    c = FAMILY_CONFIGS[name]
    with built(name, torch.bfloat16) as model:
        model.eval()
        for b, n, steps in ((2, 10, 3), (1, 3, 2)):  # a prefill longer, then shorter than windows
            held = cache_after_each_step(model, family_inputs(c, b, n), steps)
            assert held == [kv_cache_bytes(name, c, b, n, 2, gen) for gen in range(steps + 1)]


def test_sliding_window_layers_keep_views_of_the_whole_prefill():
    c = FAMILY_CONFIGS["gemma2"]  # window 4; layers 0 and 2 slide
    with built("gemma2", torch.bfloat16) as model:
        model.eval()
        keys = run_with_cache(model, family_inputs(c, 2, 10), 0).layers[0].keys
        assert keys.shape[2] == 3 and keys.untyped_storage().nbytes() == 2 * 2 * 10 * 10 * 2
        keys = run_with_cache(model, family_inputs(c, 2, 10), 5).layers[0].keys
        assert keys.shape[2] == 3 and keys.untyped_storage().nbytes() == 2 * 2 * 4 * 10 * 2


def test_fp8_quantized_cache_holds_one_byte_per_element_and_two_scales_per_layer():
    from transformers import QuantizedCache

    c = FAMILY_CONFIGS["llama3"]
    model = build_hf_from_dict(c, dtype=torch.bfloat16).eval()
    cache = QuantizedCache(backend="fp8", config=model.config)
    with torch.no_grad():
        model(**family_inputs(c, 2, 10), cache=cache, use_cache=True)
    held = {t.untyped_storage()._cdata: t.untyped_storage().nbytes()
            for layer in cache.layers
            for t in (*layer._quantized_keys, *layer._quantized_values)}
    assert sum(held.values()) == 2 * 2 * 2 * 2 * 10 * 10 * 1 + 2 * 2 * 4  # 2 L b h_kv n d_h + 8 L


# ---------------------------------------------------------------------------------------------
# Decode steps: windowed attention, MLA's up-projection of the whole cache


def decode_step_flops(model, c, b, n, gen):
    """Forward matmul FLOPs of one decode step after a prefill of n and gen steps."""
    cache = run_with_cache(model, family_inputs(c, b, n), gen)
    step = {"input_ids": torch.ones(b, 1, dtype=torch.long), "cache": cache, "use_cache": True}
    return matmul_flops(model, step)


@pytest.mark.parametrize("name", ["mistral_sw", "gemma2", "deepseek_v3", "llama3"])
def test_decode_step_flops(name):
    c = FAMILY_CONFIGS[name]
    g = dims(c)
    with built(name, torch.bfloat16) as model:
        model.eval()
        for b, n, gen in ((2, 10, 2), (1, 2, 0)):
            context = n + gen + 1  # keys the new token attends to
            flops = decode_step_flops(model, c, b, n, gen)
            keys = [context if kind == "full" else min(context, c["sliding_window"])
                    for kind in layer_kinds(name, c)]  # a window layer: w - 1 cached + the new one
            assert flops.forward_by_op["aten.bmm"] == sum(
                attention_flops(name, c, b, 1, k) for k in keys), (b, n, gen)
            products = flops.forward - flops.forward_by_op["aten.bmm"]
            one_token = forward_flops(name, c, b, 1) - g["L"] * attention_flops(name, c, b, 1, 1)
            if name == "deepseek_v3":  # kv_b_proj up-projects every cached latent, every step
                up = 2 * b * c["kv_lora_rank"] * g["h"] * (c["qk_nope_head_dim"] + c["v_head_dim"])
                one_token += g["L"] * up * (context - 1)
            assert products == one_token, (b, n, gen)


# ---------------------------------------------------------------------------------------------
# grouped_mm: the FLOP formula on real tensors and against the batched_mm path


def test_grouped_mm_formula_on_real_tensors():
    # jagged groups with an empty one: rows 0-2 -> expert 0, none -> expert 1, rows 3-7 -> expert 2
    x = torch.randn(8, 16, requires_grad=True)
    w = torch.randn(3, 16, 24, requires_grad=True)
    offs = torch.tensor([3, 3, 8], dtype=torch.int32)
    from torch.utils.flop_counter import FlopCounterMode

    from validate.measure import EXTRA_FLOP_FORMULAS

    counter = FlopCounterMode(display=False, custom_mapping=dict(EXTRA_FLOP_FORMULAS))
    with counter:
        y = torch._grouped_mm(x, w, offs=offs)
        forward = counter.get_total_flops()
        y.backward(torch.randn_like(y))  # (a sum's stride-0 gradient is not a valid operand)
    assert torch.allclose(y, torch.cat([x[:3] @ w[0], x[3:] @ w[2]]), atol=1e-5)
    per_group = sum(2 * rows * 16 * 24 for rows in (3, 0, 5))
    assert forward == per_group
    assert counter.get_total_flops() == 3 * per_group  # input gradient + weight gradient


def test_grouped_mm_counts_what_batched_mm_and_the_profiler_count_but_saves_less():
    c = FAMILY_CONFIGS["mixtral"]
    inputs = family_inputs(c, 2, 10, labels=True)
    with built("mixtral", torch.float32, fake=False) as grouped:
        g = matmul_flops(grouped, inputs, backward=True)
        saved_gm = saved_activation_bytes(grouped, inputs).total_bytes
    with built("mixtral", torch.float32, fake=False, experts="batched_mm") as batched:
        bm = matmul_flops(batched, inputs, backward=True)
        profiled = profiler_matmul_flops(batched, inputs, backward=True)
        saved_bm = saved_activation_bytes(batched, inputs).total_bytes
    assert (g.forward, g.backward) == (bm.forward, bm.backward) == (1_841_280, 3_682_560)
    d, f, k, E = c["hidden_size"], c["intermediate_size"], c["num_experts_per_tok"], 5
    grouped_bytes = saved_moe("mixtral", c, 2, 10, 4)
    assert saved_gm == grouped_bytes
    assert saved_bm == grouped_bytes + 2 * (experts_batched(20, k, d, f, 4, 4)
                                            - experts_grouped(20, k, E, d, f, 4, 4))
    assert "aten._grouped_mm" in g.forward_by_op and "aten._grouped_mm" not in bm.forward_by_op
    assert profiled == g.forward + g.backward


def test_expert_loads_set_the_grouped_flops():
    c = FAMILY_CONFIGS["qwen2_moe"]
    inputs = family_inputs(c, 2, 10)
    with built("qwen2_moe", torch.float32, fake=False) as model:
        loads = expert_loads(model, inputs)
        flops = matmul_flops(model, inputs)
    assert list(loads) == ["model.layers.0.mlp.experts"]  # layer 1 is in mlp_only_layers
    assert sum(loads["model.layers.0.mlp.experts"]) == 2 * 10 * c["num_experts_per_tok"]
    d, f = c["hidden_size"], c["moe_intermediate_size"]
    assert flops.forward_by_op["aten._grouped_mm"] == sum(
        2 * load * 3 * d * f for layer in loads.values() for load in layer)
