"""The measurement toolkit (validate/measure.py) and the Hugging Face builders (validate/hf_models.py).

Tiny, deliberately odd configs (d=48, h=6, h_kv=2, d_ff=37, vocab 99, n=10, b=2) with real tensors;
every assertion is an exact integer with its source beside it. The closed forms of
validate/FINDINGS.md are executed from that file, so the findings cannot drift from the code.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from costmodel.config import ModelConfig  # noqa: E402
from costmodel.hf import from_hf_config  # noqa: E402
from costmodel.presets import load_preset, preset_names  # noqa: E402
from validate.hf_models import (  # noqa: E402
    HF_FAMILIES, build_hf_model, default_dtype, fake_mode, hf_config, make_inputs,
)
from validate.measure import (  # noqa: E402
    cache_bytes, count_parameters, cuda_peak_memory, default_loss, kv_cache_bytes, matmul_flops,
    other_op_elements, parameters_by_module, peak_memory_memtracker, profiler_matmul_flops,
    register_cpu_sdpa_flop_formulas, run_with_cache, saved_activation_bytes,
)

FINDINGS = Path(__file__).resolve().parent.parent / "validate" / "FINDINGS.md"


def tiny(family: str, **changes) -> ModelConfig:
    """A 2-layer odd-sized model of a Hugging Face family (T5: 2 encoder + 2 decoder layers)."""
    base = dict(name=f"tiny-{family}", family=family, vocab_size=99, d_model=48, n_heads=6, d_ff=37)
    base.update({
        "llama": dict(n_kv_heads=2, n_decoder_layers=2, position="rope", norm="rmsnorm",
                      activation="swiglu", qkv_bias=False, out_bias=False, ffn_bias=False,
                      tie_embeddings=False),
        "gpt2": dict(n_decoder_layers=2, activation="gelu_tanh"),
        "bert": dict(n_encoder_layers=2, norm_position="post", embedding_norm=True, head="pooler",
                     tie_embeddings=False, token_types=2),
        "t5": dict(n_encoder_layers=2, n_decoder_layers=2, d_head=8, position="relative",
                   norm="rmsnorm", activation="relu", qkv_bias=False, out_bias=False,
                   ffn_bias=False, relative_buckets=8, attention_scale=1.0, scale_lm_head_input=True),
    }[family])
    base.update(changes)
    return ModelConfig(**base)


def findings() -> dict:
    """The formulas block of validate/FINDINGS.md, executed."""
    block = re.search(r"```python\n(# findings: formulas.*?)```", FINDINGS.read_text(), re.S)
    namespace: dict = {}
    exec(block.group(1), namespace)  # noqa: S102 - our own documentation
    return namespace


def bytes_of(dtype: torch.dtype) -> int:
    return torch.finfo(dtype).bits // 8


# ---------------------------------------------------------------------------------------------
# hf_models


HF_PRESETS = [n for n in preset_names() if load_preset(n).family in HF_FAMILIES]


@pytest.mark.parametrize("name", HF_PRESETS)
def test_hf_config_round_trips_every_hf_preset(name):
    cfg = load_preset(name)
    assert from_hf_config(hf_config(cfg).to_dict(), name=cfg.name) == cfg


@pytest.mark.parametrize("cfg, words", [
    (load_preset("seed-toy"), "family 'transformer'"),
    (tiny("t5", tie_embeddings=False), "untied lm head"),
    (tiny("llama", qkv_bias=True), "different q/k/v and output-projection biases"),
    (tiny("gpt2", n_kv_heads=2), "grouped-query attention"),
    (tiny("bert", token_types=0), "zero token types"),
])
def test_hf_config_rejects_what_hugging_face_cannot_build(cfg, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        hf_config(cfg)


def test_build_gives_the_class_a_user_trains_with_exact_parameters():
    llama = build_hf_model(tiny("llama"))
    assert type(llama).__name__ == "LlamaForCausalLM" and llama.training
    # embed 99*48 + 2 layers * (q 48*48 + k,v 2*48*16 + o 48*48 + 3*48*37 + 2 norms 2*48)
    # + final norm 48 + lm_head 48*99 = 4,752 + 2*11,568 + 48 + 4,752
    assert count_parameters(llama) == 32_688
    assert parameters_by_module(llama, 1) == {"model": 27_936, "lm_head": 4_752}
    gpt2 = build_hf_model(tiny("gpt2"))  # tied: lm_head is wte, counted once under transformer
    assert type(gpt2).__name__ == "GPT2LMHeadModel"
    assert parameters_by_module(gpt2, 1) == {"transformer": count_parameters(gpt2)}
    bert = build_hf_model(tiny("bert"))
    assert type(bert).__name__ == "BertModel" and bert.pooler is not None
    t5 = build_hf_model(tiny("t5"), "sdpa")
    assert type(t5).__name__ == "T5ForConditionalGeneration"
    assert t5.config._attn_implementation == "sdpa"


def test_make_inputs_is_deterministic_and_shaped_per_family():
    llama = make_inputs(tiny("llama"), 2, 10, labels=True)
    assert set(llama) == {"input_ids", "labels"} and llama["input_ids"].shape == (2, 10)
    assert torch.equal(llama["input_ids"], make_inputs(tiny("llama"), 2, 10)["input_ids"])
    assert int(llama["input_ids"].max()) < 99
    bert = make_inputs(tiny("bert"), 3, 13, labels=True)
    assert set(bert) == {"input_ids", "token_type_ids"}  # BertModel has no labels
    t5 = make_inputs(tiny("t5"), 2, 10, tgt_len=6, labels=True)
    assert t5["decoder_input_ids"].shape == t5["labels"].shape == (2, 6)


def test_fake_mode_builds_in_a_dtype_and_restores_the_default():
    with fake_mode():
        model = build_hf_model(tiny("llama"), dtype=torch.bfloat16)
        assert model.lm_head.weight.dtype == torch.bfloat16
    assert torch.get_default_dtype() == torch.float32
    with default_dtype(None):
        assert torch.get_default_dtype() == torch.float32


def test_llama2_7b_full_size_under_fake_tensor_mode():
    cfg = load_preset("llama2-7b")
    with fake_mode():
        model = build_hf_model(cfg)
        assert count_parameters(model) == 6_738_415_616  # docs/design.md reference table
        flops = matmul_flops(model, make_inputs(cfg, 1, 2048))
    # docs/design.md: 2*n*(L*(4d^2 + 3*d*d_ff) + d*V) + L*4*n^2*d
    assert flops.forward == 29_261_612_187_648


def test_llama2_7b_saved_bytes_under_fake_tensor_mode_equal_the_findings_formula():
    cfg = load_preset("llama2-7b")
    with fake_mode():
        model = build_hf_model(cfg, "sdpa", dtype=torch.bfloat16)
        saved = saved_activation_bytes(model, make_inputs(cfg, 1, 2048, labels=True))
    f = findings()
    assert saved.total_bytes == f["saved_bytes"](f["dims"](cfg), 1, 2048, 2, "sdpa", False)
    assert saved.total_bytes == 12_553_068_556


# ---------------------------------------------------------------------------------------------
# Matmul FLOPs


def test_matmul_flops_of_tiny_llama_forward_backward_and_by_module():
    model = build_hf_model(tiny("llama"))
    result = matmul_flops(model, make_inputs(tiny("llama"), 2, 10, labels=True), backward=True, depth=1)
    # linears: 2*20 tokens*(2*48*48 + 2*48*16 + 3*48*37)*2 layers + lm_head 2*20*48*99 = 1,107,840
    # attention: 2 layers * 2 bmm * 2*b*h*n*n*d_h = 2*2*(2*2*6*10*10*8) = 76,800
    assert result.forward_by_op == {"aten.mm": 1_107_840, "aten.bmm": 76_800}
    assert result.forward == 1_184_640
    assert result.backward == 2 * 1_184_640  # every weight and the embeddings train
    assert result.forward_by_module == {"model": 994_560, "lm_head": 190_080}
    assert result.backward_by_module == {"model": 1_989_120, "lm_head": 380_160}
    per_linear = matmul_flops(model, make_inputs(tiny("llama"), 2, 10), depth=5).forward_by_module
    assert per_linear["model.layers.0.self_attn.q_proj"] == 2 * 20 * 48 * 48
    assert per_linear["model.layers.0.self_attn"] == 2 * 2 * 2 * 6 * 10 * 10 * 8  # its own bmm
    assert sum(per_linear.values()) == 1_184_640


@pytest.mark.parametrize("family", ["llama", "gpt2", "bert", "t5"])
def test_sdpa_flop_formula_makes_sdpa_count_like_eager(family):
    cfg = tiny(family)
    inputs = make_inputs(cfg, 2, 10, tgt_len=6, labels=family != "bert")
    eager = matmul_flops(build_hf_model(cfg, "eager"), inputs, backward=True)
    sdpa = matmul_flops(build_hf_model(cfg, "sdpa"), inputs, backward=True)
    assert sdpa.forward == eager.forward
    # CPU flash backward recomputes Q K^T: + 2*b*h*n_q*n_k*d_h per flash attention
    # (T5 in training: only the 2 cross-attentions, m=6 x n=10, take the flash kernel)
    extra = 2 * 2 * 2 * 6 * (6 * 10 if family == "t5" else 10 * 10) * 8
    assert sdpa.backward - eager.backward == extra
    assert sum(sdpa.backward_by_module.values()) == sdpa.backward


def test_registered_cpu_sdpa_formula_serves_plain_flop_counter_mode():
    register_cpu_sdpa_flop_formulas()
    register_cpu_sdpa_flop_formulas()  # idempotent
    model = build_hf_model(tiny("llama"), "sdpa")
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        model(**make_inputs(tiny("llama"), 2, 10))
    assert counter.get_total_flops() == 1_184_640


@pytest.mark.parametrize("family, forward", [("llama", 1_184_640), ("gpt2", 1_288_320)])
def test_profiler_counts_the_same_matmul_flops_as_flop_counter_mode(family, forward):
    cfg = tiny(family)
    model = build_hf_model(cfg)
    assert profiler_matmul_flops(model, make_inputs(cfg, 2, 10)) == forward
    inputs = make_inputs(cfg, 2, 10, labels=True)
    assert profiler_matmul_flops(model, inputs, backward=True) == 3 * forward


def test_matmul_flops_equal_the_findings_formulas_for_each_family():
    f = findings()
    for family in ("llama", "gpt2", "bert", "t5"):
        cfg = tiny(family, dropout=0.1)
        inputs = make_inputs(cfg, 3, 13, tgt_len=7, labels=family != "bert")
        result = matmul_flops(build_hf_model(cfg), inputs, backward=True)
        assert result.forward == f["forward_matmul_flops"](f["dims"](cfg), 3, 13, 7), family
        assert result.backward == f["backward_matmul_flops"](f["dims"](cfg), 3, 13, "eager", True, 7)


# ---------------------------------------------------------------------------------------------
# Other ops


def test_other_op_elements_of_tiny_llama():
    b, n, d, h, kv, dh, f, L = 2, 10, 48, 6, 2, 8, 37, 2
    ops = other_op_elements(build_hf_model(tiny("llama")), make_inputs(tiny("llama"), b, n))
    assert ops["aten._softmax"] == L * b * h * n * n  # 2,400
    assert ops["aten.silu"] == L * b * n * f
    assert ops["aten.pow.Tensor_Scalar"] == (2 * L + 1) * b * n * d  # 2 norms a layer + final
    assert ops["aten.rsqrt"] == ops["aten.mean.dim"] == (2 * L + 1) * b * n
    assert ops["aten.neg"] == L * b * (h + kv) * n * dh // 2  # rotate_half on q and k
    assert ops["aten.embedding"] == b * n * d
    assert "aten.view" not in ops and "aten._unsafe_view" not in ops and "aten.t" not in ops
    training = other_op_elements(build_hf_model(tiny("llama")),
                                 make_inputs(tiny("llama"), b, n, labels=True), backward=True)
    assert training["aten._softmax_backward_data"] == L * b * h * n * n


# ---------------------------------------------------------------------------------------------
# Saved activations


def test_saved_bytes_of_a_linear_exclude_its_weight():
    linear = torch.nn.Linear(3, 4)
    saved = saved_activation_bytes(linear, {"input": torch.ones(2, 3, requires_grad=True)})
    # addmm saves the input (2*3 fp32 = 24) and W.t() (a view of the weight: excluded);
    # default_loss of a tensor, out.float().pow(2).mean(): pow saves out (2*4 fp32 = 32)
    assert saved.total_bytes == 24 + 32
    assert [(t.op, t.kind) for t in saved.tensors] == [
        ("AddmmBackward0._saved_mat1", "new"), ("AddmmBackward0._saved_mat2", "parameter"),
        ("PowBackward0._saved_self", "new"),
    ]
    # an input that needs no grad: autograd does not even save the weight
    no_grad_input = saved_activation_bytes(linear, {"input": torch.ones(2, 3)})
    assert [t.kind for t in no_grad_input.tensors] == ["new", "new"]


def test_saved_bytes_exclude_every_view_of_a_parameter_in_llama():
    model = build_hf_model(tiny("llama"))
    saved = saved_activation_bytes(model, make_inputs(tiny("llama"), 2, 10, labels=True))
    params = [t for t in saved.tensors if t.kind == "parameter"]
    # per layer: 7 weights (mm mat2 = W.t()) + 2 norm weights; final norm weight; lm_head
    assert len(params) == 2 * 9 + 2
    assert saved.total_bytes == sum(t.bytes for t in saved.tensors) == 130_884
    assert sum(saved.by_module(1).values()) == saved.total_bytes
    ops = {t.op for t in saved.tensors}
    assert "SoftmaxBackward0._saved_result" in ops and "(unreachable from the loss)" not in ops


def test_saved_bytes_are_the_same_under_fake_tensor_mode():
    cfg = tiny("t5", dropout=0.1)
    inputs = make_inputs(cfg, 2, 10, tgt_len=6, labels=True)
    real = saved_activation_bytes(build_hf_model(cfg, dtype=torch.bfloat16), inputs)
    with fake_mode():
        fake = saved_activation_bytes(build_hf_model(cfg, dtype=torch.bfloat16), inputs)
    assert fake.total_bytes == real.total_bytes == 192_906


def test_bert_default_loss_uses_hidden_and_pooled_outputs():
    cfg = tiny("bert")
    output = build_hf_model(cfg)(**make_inputs(cfg, 2, 10))
    expected = output.last_hidden_state.pow(2).mean() + output.pooler_output.pow(2).mean()
    assert torch.equal(default_loss(output), expected)


CASES = [(dtype, attn, p) for dtype in (torch.float32, torch.bfloat16)
         for attn in ("eager", "sdpa") for p in (0.0, 0.1)]


@pytest.mark.parametrize("family", ["llama", "gpt2", "bert", "t5"])
def test_saved_bytes_equal_the_findings_formulas(family):
    f = findings()
    for dtype, attn, p in CASES:
        cfg = tiny(family, dropout=p)
        model = build_hf_model(cfg, attn, dtype=dtype)
        saved = saved_activation_bytes(model, make_inputs(cfg, 2, 10, tgt_len=6, labels=True))
        want = f["saved_bytes"](f["dims"](cfg), 2, 10, bytes_of(dtype), attn, p > 0, 6)
        assert saved.total_bytes == want, (dtype, attn, p)


@pytest.mark.parametrize("cfg", [
    tiny("gpt2"),  # b = 1: the eager query is a view of the 3d-wide c_attn output
    tiny("llama", n_kv_heads=1),  # b = 1 MQA: repeat_kv stays a view of the cache
], ids=["gpt2", "llama-mqa"])
def test_saved_bytes_at_batch_one_follow_the_findings_quirks(cfg):
    f = findings()
    saved = saved_activation_bytes(build_hf_model(cfg), make_inputs(cfg, 1, 7, labels=True))
    assert saved.total_bytes == f["saved_bytes"](f["dims"](cfg), 1, 7, 4, "eager", False)


@pytest.mark.slow
def test_saved_bytes_equal_the_findings_formulas_for_the_odd_configs():
    from tests.odd_configs import odd_configs

    f = findings()
    for cfg in odd_configs():
        for dtype in (torch.float32, torch.bfloat16):
            for attn in ("eager", "sdpa"):
                for b, n, m in ((2, 10, 7), (1, 13, 5)):
                    saved = saved_activation_bytes(build_hf_model(cfg, attn, dtype=dtype),
                                                   make_inputs(cfg, b, n, m, labels=True))
                    want = f["saved_bytes"](f["dims"](cfg), b, n, bytes_of(dtype), attn,
                                            cfg.dropout > 0, m)
                    assert saved.total_bytes == want, (cfg.name, dtype, attn, b, n)


# ---------------------------------------------------------------------------------------------
# KV cache


def test_kv_cache_of_gqa_llama_holds_only_kv_heads():
    cfg = tiny("llama")
    model = build_hf_model(cfg, dtype=torch.bfloat16).eval()
    inputs = make_inputs(cfg, 2, 10)
    # 2 (K, V) * L=2 * b=2 * h_kv=2 * tokens * d_h=8 * 2 bytes
    assert kv_cache_bytes(model, inputs) == 2 * 2 * 2 * 2 * 10 * 8 * 2
    assert kv_cache_bytes(model, inputs, gen_tokens=3) == 2 * 2 * 2 * 2 * 13 * 8 * 2


def test_kv_cache_of_t5_has_self_and_cross_attention_parts():
    cfg = tiny("t5", d_head=7, n_decoder_layers=3)
    model = build_hf_model(cfg, "sdpa").eval()
    parts = cache_bytes(run_with_cache(model, make_inputs(cfg, 2, 10, tgt_len=6), gen_tokens=3))
    # self: 2 * L_d=3 * b=2 * h=6 * (m=6 + 3) * d_h=7 * 4; cross: n=10 source tokens instead
    assert parts == {"self_attention": 2 * 3 * 2 * 6 * 9 * 7 * 4,
                     "cross_attention": 2 * 3 * 2 * 6 * 10 * 7 * 4}


def test_kv_cache_under_fake_tensor_mode():
    cfg = tiny("gpt2")
    with fake_mode():
        model = build_hf_model(cfg).eval()
        assert kv_cache_bytes(model, make_inputs(cfg, 3, 13), gen_tokens=2) == 2 * 2 * 3 * 6 * 15 * 8 * 4


# ---------------------------------------------------------------------------------------------
# Peak memory


def test_memtracker_peak_of_a_training_step_on_cpu_and_under_fake_mode():
    cfg = tiny("llama")
    inputs = make_inputs(cfg, 2, 10, labels=True)
    peak = peak_memory_memtracker(build_hf_model(cfg), inputs)
    params = 4 * 32_688
    assert peak["Parameter"] == peak["Gradient"] == params
    assert peak["Buffer"] == 2 * 4 * 4  # RoPE inv_freq and original_inv_freq, d_h/2 = 4 floats each
    assert peak["Other"] == 2 * 2 * 10 * 8  # input ids and labels, tracked as external
    # AdamW exp_avg + exp_avg_sq + 21 fp32 steps, plus transient temporaries of the step
    assert peak["Optstate"] >= 2 * params + 21 * 4
    assert peak["Total"] == sum(v for k, v in peak.items() if k != "Total")
    with fake_mode():
        assert peak_memory_memtracker(build_hf_model(cfg), inputs) == peak


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU; none on this machine")
@pytest.mark.cuda
def test_cuda_peak_memory_of_tiny_llama():
    cfg = tiny("llama")
    model = build_hf_model(cfg).cuda()
    inputs = {k: v.cuda() for k, v in make_inputs(cfg, 2, 10, labels=True).items()}
    peak = cuda_peak_memory(model, inputs, gen_tokens=3)
    assert peak["weights"] >= 4 * 32_688
    assert peak["train_step_peak"] >= 4 * 4 * 32_688  # weights, grads, two AdamW moments
    assert peak["inference_peak"] >= peak["weights"]


def test_cuda_peak_memory_refuses_without_a_gpu():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError, match="CUDA"):
        cuda_peak_memory(torch.nn.Linear(2, 2), {"input": torch.ones(1, 2)})
