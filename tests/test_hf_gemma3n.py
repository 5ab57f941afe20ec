"""Gemma 3n's language model (costmodel/hf_gemma3n.py: gemma3n_text, and the gemma3n wrapper read as
its text_config; costmodel/blocks/altup.py) against transformers 5.24's Gemma3nForCausalLM built
from the same config dict: parameters and buffers on the meta device (odd AltUp stream counts,
LAuReL ranks, per-layer input widths, K/V sharing, a last layer that slides, an untied head, the
class default), the matmul FLOPs of the training forward and step, of a prefill (also generate's,
logits_to_keep 1) and of a cached decode step, the KV cache after a prefill (the sharing layers
holding none), and the configs refused in one sentence. Not compared: other ops' elements (AltUp's
and the activation sparsity's elementwise work is stated, not measured) and bytes saved for backward."""

from __future__ import annotations

import json

import pytest

from costmodel.config import ConfigError
from costmodel.hf import from_hf_config
from tests.cli_run import run_main
from tests.family_configs import buffer_bytes_both, estimated_total, hf_meta_count

pytestmark = [pytest.mark.filterwarnings("ignore:model .* attends within a sliding window"),
              pytest.mark.filterwarnings("ignore:model .* is Gemma 3n")]

#: Odd sizes no dimension shares: d 48, 6 heads of 10 (not 48 / 6), 2 KV heads, MLP 37, vocabulary
#: 99, 5 layers (Gemma3nTextConfig's rule: layer 4 full, the rest sliding), per-layer inputs 8 wide
#: from a 128-row table, 3 AltUp streams, LAuReL rank 7, no K/V sharing.
BASE = dict(model_type="gemma3n_text", vocab_size=99, hidden_size=48, num_attention_heads=6, num_key_value_heads=2,
            head_dim=10, intermediate_size=37, num_hidden_layers=5, sliding_window=5, max_position_embeddings=64,
            hidden_size_per_layer_input=8, vocab_size_per_layer_input=128, altup_num_inputs=3, laurel_rank=7,
            num_kv_shared_layers=0)
_ALTERNATING = ["sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention"]
CONFIGS = {
    "gemma3n": BASE,
    # the last 2 layers reuse layers 1's (full) and 2's (sliding) K and V; the last layer slides
    "gemma3n-kv-shared": dict(BASE, num_kv_shared_layers=2, layer_types=_ALTERNATING),
    # one AltUp stream (no extra projections), rank 3, an untied head, exact GELU, a 6-wide input
    "gemma3n-one-stream": dict(BASE, altup_num_inputs=1, laurel_rank=3, tie_word_embeddings=False,
                               hidden_activation="gelu", hidden_size_per_layer_input=6, altup_correct_scale=False),
    # 5 streams (the active one the third), biases on q/k/v/o, intermediate_size as a per-layer list,
    # full layers first and fourth, a final soft cap of 20, activation sparsity on the first 2 layers
    "gemma3n-five-streams": dict(BASE, altup_num_inputs=5, altup_active_idx=2, attention_bias=True,
                                 intermediate_size=[37] * 5, final_logit_softcapping=20.0,
                                 layer_types=["full_attention", "sliding_attention", "sliding_attention",
                                              "full_attention", "sliding_attention"],
                                 activation_sparsity_pattern=[0.95, 0.9, 0.0, 0.0, 0.0]),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_parameters_equal_the_class(name):
    assert estimated_total(CONFIGS[name], name) == hf_meta_count(CONFIGS[name])


def test_parameters_are_the_counted_integer():
    """5 layers x (q 2,880 + k, v 2 x 960 + o 2,880 + q/k norms 20 + MLP 3 x 48 x 37 + 4 norms 192
    + AltUp (scale 48 + correction 9 + prediction 27 + router 144 + norm 48) + LAuReL (2 x 336 + 48)
    + per-layer gate and projection 2 x 384 + norm 48) = 5 x 15,032; embeddings 99 x 48 + the per-layer
    table 128 x 40 + projection 48 x 40 + norm 8 + AltUp projections 2 x 2 x 48 x 48 + final norm 48:
    96,224, the meta model's."""
    assert estimated_total(BASE, "g") == 5 * 15_032 + 4_752 + 5_120 + 1_920 + 8 + 9_216 + 48 == 96_224


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_class(name):
    """The bf16 meta model's buffers: two RoPE tables (inv_freq and original_inv_freq, fp32, d_h / 2)
    per layer kind, the two tables' embed_scale, per_layer_projection_scale, per_layer_input_scale and
    each layer's router_input_scale (bf16 scalars)."""
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs


def test_buffers_are_the_counted_bytes():
    """2 kinds x 2 tables x 5 x 4 bytes + 4 model scalars x 2 + 5 router scales x 2 = 98."""
    assert buffer_bytes_both(BASE, "g")[0] == 98


def test_the_class_default_exact_integer():
    """Gemma3nTextConfig() (gemma-3n-E4B's text shape: d 2,048, 35 layers, the last 15 sharing K/V,
    4 AltUp streams, LAuReL rank 64, per-layer inputs 256 wide): 6,835,235,568 parameters, the meta
    model's; read from the config's own to_dict (intermediate_size a list, layer_types spelt out) too."""
    transformers = pytest.importorskip("transformers")
    fields = transformers.AutoConfig.for_model("gemma3n_text").to_dict()
    assert estimated_total({"model_type": "gemma3n_text"}, "d") == estimated_total(fields, "d") \
        == hf_meta_count({"model_type": "gemma3n_text"}) == 6_835_235_568
    cfg = from_hf_config(fields, name="d")
    assert (cfg.altup_inputs, cfg.laurel_rank, cfg.per_layer_input, cfg.kv_shared_layers) == (4, 64, 256, 15)
    assert [i for i in range(35) if not cfg.layer_slides(i)] == [4, 9, 14, 19, 24, 29, 34]


@pytest.mark.parametrize("tie", [True, False, None])
def test_the_multimodal_wrapper_is_read_as_its_language_model(tie):
    """gemma3n: text_config read as gemma3n_text; Gemma3nForConditionalGeneration holds lm_head, so the
    wrapper's tie_word_embeddings (Gemma3nConfig's default True) decides, not the text_config's."""
    text = {k: v for k, v in BASE.items() if k != "model_type"}
    wrapper = {"model_type": "gemma3n", "text_config": dict(text, tie_word_embeddings=not tie)}
    if tie is not None:
        wrapper["tie_word_embeddings"] = tie
    cfg = from_hf_config(wrapper, name="m")
    assert cfg.family == "gemma3n_text" and cfg.name == "m (language model)"
    assert estimated_total(wrapper, "m") == hf_meta_count(dict(BASE, tie_word_embeddings=tie is not False))


@pytest.mark.parametrize("fields,message", [
    (dict(BASE, intermediate_size=[37, 37, 40, 37, 37]), "differ between layers"),
    (dict(BASE, intermediate_size=[37, 37]), "one for each of the 5 layers"),
    (dict(BASE, hidden_size_per_layer_input=0), "hidden_size_per_layer_input 0"),
    (dict(BASE, altup_active_idx=3), "altup_active_idx"),
    (dict(BASE, final_logit_softcapping=None), "final_logit_softcapping null"),
    (dict(BASE, num_kv_shared_layers=2), "kv_shared_layers"),  # the own layers are all sliding
    # every layer full: transformers runs it, the tree's K/V sharing needs both kinds
    (dict(BASE, num_kv_shared_layers=2, layer_types=["full_attention"] * 5), "kv_shared_layers"),
    (dict(BASE, activation_sparsity_pattern=[0.5, 0.0]), "activation_sparsity_pattern"),
    (dict(BASE, hidden_activation="silu"), "hidden_activation 'silu' for gemma3n_text"),
])
def test_refused_configs(fields, message):
    with pytest.raises(ConfigError, match=message):
        from_hf_config(fields, name="bad")


def test_refusal_is_one_line_and_status_2(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(BASE, intermediate_size=[37, 37, 40, 37, 37])))
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2 and "intermediate_size" in err and len(err.strip().splitlines()) == 1


def test_architectures_name_the_type():
    named = {k: v for k, v in BASE.items() if k != "model_type"}
    assert from_hf_config(dict(named, architectures=["Gemma3nForCausalLM"]), name="x").family == "gemma3n_text"


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("b,n", [(2, 9), (1, 3)])
def test_training_forward_and_step_matmul_flops(name, b, n):
    """FlopCounterMode over the class's training forward with its loss, and with the backward
    (fp32, eager): the AltUp projections, routers, coefficient linears and each token's
    (d, A) x (A, A) product, LAuReL, the per-layer inputs and the shared layers' missing k/v."""
    from costmodel import estimate
    from validate.hf_mamba1 import causal_lm_flops

    ours = estimate(dict(CONFIGS[name], name=name), seq_len=n, batch=b, dtype="fp32").to_dict()["flops"]
    assert ours["forward"] == causal_lm_flops(CONFIGS[name], b, n, backward=False)
    assert ours["training"] == causal_lm_flops(CONFIGS[name], b, n, backward=True)


def test_training_flops_exact_integers():
    """The tiny Gemma 3n at b 2, n 9: 3,503,088 forward matmul FLOPs, 10,509,264 for the step
    (every weight and both sides of the AltUp product train: 3 x the forward)."""
    from validate.hf_mamba1 import causal_lm_flops

    assert causal_lm_flops(BASE, 2, 9, backward=False) == 3_503_088
    assert causal_lm_flops(BASE, 2, 9, backward=True) == 10_509_264 == 3 * 3_503_088


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_and_prefill_flops(name):
    """A cached decode step (three batch, prompt, generated points) and a prefill that fills the cache."""
    from tests.family_configs import assert_decode_flops_exact, assert_prefill_flops_exact

    assert_decode_flops_exact(CONFIGS[name], name)
    assert_prefill_flops_exact(CONFIGS[name], name)


@pytest.mark.parametrize("keep", [1, 0])
def test_generate_prefill_runs_the_shared_layers_on_every_position(keep):
    """Unlike Gemma 4 (_maybe_slice_kv_shared_inputs), Gemma3nTextModel runs the K/V-sharing layers on
    every position when generate's prefill keeps one position's logits: only the head shrinks."""
    import dataclasses

    import torch

    from costmodel.config import Workload
    from costmodel.evaluate import exact, values
    from costmodel.tree import CostModel, profile_for
    from tests.golden.hf_families import built
    from validate.measure import matmul_flops

    fields = CONFIGS["gemma3n-kv-shared"]
    cfg = from_hf_config(fields, name="g")
    workload = Workload(seq_len=9, batch=2, dtype="bf16", attention="eager", impl="hf")
    tree = CostModel(cfg, dataclasses.replace(profile_for(cfg, workload), logits_to_keep=keep), phase="prefill")
    with built(dict(fields, _attn_implementation="eager"), torch.bfloat16) as model:
        model.eval()
        measured = matmul_flops(model, {"input_ids": torch.ones(2, 9, dtype=torch.long), "logits_to_keep": keep})
    assert measured.forward == exact(tree.total("flops_matmul"), values(cfg, workload))


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_cache_after_prefill(name, dtype):
    """Each own layer's keys and values (h_kv x d_h each per token); the K/V-sharing layers cache
    nothing (DynamicCache skips them: cache.update is not called)."""
    from tests.family_configs import assert_cache_after_prefill_exact

    assert_cache_after_prefill_exact(CONFIGS[name], name, dtype)


def test_cache_exact_integer():
    """gemma3n-kv-shared (5 layers, the last 2 sharing) in bf16 after a prompt of 9 at batch 2:
    3 own layers x 2 (K, V) x 2 KV heads x 10 x 9 tokens x 2 sequences x 2 bytes = 4,320 bytes."""
    from costmodel import estimate

    out = estimate(dict(CONFIGS["gemma3n-kv-shared"], name="g"), seq_len=9, batch=2, dtype="bf16").to_dict()
    assert out["memory"]["kv_cache"] == 3 * 2 * 2 * 10 * 9 * 2 * 2 == 4_320


@pytest.mark.parametrize("name", ["gemma3n", "gemma3n-kv-shared"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_validate_rows(name, attention):
    """validate's rows (validate/hf_gemma3n.py writes the config.json back; bf16 under FakeTensorMode,
    b 2, n 12, 2 generated tokens): parameters, forward and backward matmul FLOPs, softmax, log-softmax,
    GELU and tanh elements and the cache exact; the bytes saved for backward short by what AltUp and
    LAuReL keep, 282,762 bytes over these 5 layers whichever the kernel and the sharing (not modelled)."""
    from tests.family_configs import odd_config_rows

    rows = {row.quantity: row for row in odd_config_rows(CONFIGS[name], name, attention)}
    saved = rows.pop("bytes saved for backward")
    assert {"parameters", "forward matmul FLOPs", "backward matmul FLOPs", "KV-cache bytes"} <= set(rows)
    assert [row.quantity for row in rows.values() if row.difference != 0] == []
    assert saved.measured - saved.formula == 282_762


def test_estimate_says_what_it_leaves_out():
    """The estimate warns that Gemma 3n's activations leave out AltUp's and LAuReL's saved tensors."""
    from costmodel import estimate

    with pytest.warns(UserWarning, match="leave out what AltUp and LAuReL keep"):
        estimate(dict(BASE, name="g"), seq_len=4, batch=1)


def test_tensor_parallel_is_refused_and_plan_answers(tmp_path, capsys):
    """No tensor-parallel split of AltUp and LAuReL is modelled: one sentence; plan still answers
    (data parallel and sharded layouts)."""
    from costmodel.layout.spec import tensor_split_error

    cfg = from_hf_config(dict(BASE), "g")
    assert "AltUp" in tensor_split_error(cfg, 2, inference=False)
    assert tensor_split_error(cfg, 1, inference=False) is None
    path = tmp_path / "config.json"
    path.write_text(json.dumps(BASE))
    code, out, err = run_main(["plan", "--config", str(path), "--hardware", "h100-sxm", "--gpus", "8"], capsys)
    assert code == 0, err
    code, out, err = run_main(["estimate", "--config", str(path), "--json"], capsys)
    assert code == 0 and json.loads(out)["params"]["total"] == 96_224
