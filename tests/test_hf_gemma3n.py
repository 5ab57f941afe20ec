"""Gemma 3n's language model (costmodel/hf_gemma3n.py: gemma3n_text, and the gemma3n wrapper read as
its text_config; costmodel/blocks/altup.py) against transformers 5.24's Gemma3nForCausalLM built
from the same config dict: parameters and buffers on the meta device (odd AltUp stream counts,
LAuReL ranks, per-layer input widths, K/V sharing, a last layer that slides, an untied head, the
class default), the matmul FLOPs of the training forward and step, of a prefill (also generate's,
logits_to_keep 1) and of a cached decode step, the KV cache after a prefill (the sharing layers
holding none), the bytes saved for backward (validate's saved-tensor hooks: AltUp's streams,
routers, coefficients and rescales, LAuReL's norm) and the configs refused in one sentence. Not
compared: other ops' elements (AltUp's and the activation sparsity's elementwise work is stated, not
measured); activation sparsity's saved tensors are not modelled (its gap is asserted)."""

from __future__ import annotations

import json

import pytest

from costmodel.config import ConfigError
from costmodel.hf import from_hf_config
from tests.cli_run import run_main
from tests.family_checks import family_checks
from tests.family_configs import (assert_decode_flops_exact, assert_prefill_flops_exact, buffer_bytes_both,
                                  estimated_total, hf_meta_count)

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
                               hidden_activation="gelu", hidden_size_per_layer_input=6),
    # 5 streams (the active one the third), biases on q/k/v/o, intermediate_size as a per-layer list,
    # full layers first and fourth, a final soft cap of 20, activation sparsity on the first 2 layers
    "gemma3n-five-streams": dict(BASE, altup_num_inputs=5, altup_active_idx=2, attention_bias=True,
                                 intermediate_size=[37] * 5, final_logit_softcapping=20.0,
                                 layer_types=["full_attention", "sliding_attention", "sliding_attention",
                                              "full_attention", "sliding_attention"],
                                 activation_sparsity_pattern=[0.95, 0.9, 0.0, 0.0, 0.0]),
}


CHECKS = family_checks(CONFIGS)
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


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
    (dict(BASE, altup_coef_clip=None), "altup_coef_clip null"),  # Gemma3nTextConfig rejects it too
    # the class keeps one T x d copy fewer a layer (measured: 17,280 bytes over 5 layers, fp32 b 2 n 9)
    (dict(BASE, altup_correct_scale=False), "altup_correct_scale false"),
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
    from validate.hf_mamba1 import causal_lm_flops_both

    ours = estimate(dict(CONFIGS[name], name=name), seq_len=n, batch=b, dtype="fp32").to_dict()["flops"]
    assert (ours["forward"], ours["training"]) == causal_lm_flops_both(CONFIGS[name], b, n)


def test_training_flops_exact_integers():
    """The tiny Gemma 3n at b 2, n 9: 3,503,088 forward matmul FLOPs, 10,509,264 for the step
    (every weight and both sides of the AltUp product train: 3 x the forward)."""
    from validate.hf_mamba1 import causal_lm_flops_both

    forward, step = causal_lm_flops_both(BASE, 2, 9)
    assert (forward, step) == (3_503_088, 10_509_264) and step == 3 * forward


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_decode_and_prefill_flops(name):
    """A cached decode step (three batch, prompt, generated points) and a prefill that fills the cache:
    family_checks' decode_and_prefill_flops (the decode on real bf16 tensors, as every family's)."""
    pytest.importorskip("transformers")
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


# Each own layer's keys and values (h_kv x d_h each per token); the K/V-sharing layers cache nothing
# (DynamicCache skips them: cache.update is not called).
test_cache_after_prefill = CHECKS.cache_after_prefill


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
    GELU and tanh elements, the bytes saved for backward (282,762 short before AltUp's and LAuReL's
    were modelled) and the cache, all exact."""
    from tests.family_configs import assert_rows_exact, odd_config_rows

    rows = odd_config_rows(CONFIGS[name], name, attention)
    assert {"parameters", "forward matmul FLOPs", "bytes saved for backward", "KV-cache bytes"} <= {
        row.quantity for row in rows}
    assert_rows_exact(rows)


#: The configs whose saved bytes are exact: the five-stream one without its activation sparsity.
_SAVED = {**{k: v for k, v in CONFIGS.items() if k != "gemma3n-five-streams"},
          "gemma3n-five-streams-dense": {k: v for k, v in CONFIGS["gemma3n-five-streams"].items()
                                         if k != "activation_sparsity_pattern"}}


@pytest.mark.parametrize("name", sorted(_SAVED))
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("b,n", [(2, 9), (1, 5)])
def test_saved_bytes_equal_the_class(name, dtype, b, n):
    """The class's training forward with its loss (validate's saved-tensor hooks, eager) against the
    estimate's activations: AltUp's streams, router norms, routers, coefficients, innovation and
    scaled clone in each layer, the rescaled streams before and after the layers, LAuReL's norm, the
    per-layer table's own ids; one stream (nothing rescaled), five (the third active), K/V sharing."""
    from tests.family_configs import assert_saved_bytes_exact

    assert_saved_bytes_exact(_SAVED[name], name, dtype, b, n)


@pytest.mark.parametrize("name", ["gemma3n", "gemma3n-kv-shared"])
def test_saved_bytes_under_sdpa(name):
    from tests.family_configs import assert_saved_bytes_exact

    assert_saved_bytes_exact(CONFIGS[name], name, "bf16", 2, 9, attention="sdpa")


@pytest.mark.parametrize("dtype,saved", [("fp32", 834_160), ("bf16", 626_014)])
def test_saved_bytes_exact_integers(dtype, saved):
    """The tiny Gemma 3n at b 2, n 9 (T 18 tokens, d 48, A 3, r 7): the class keeps 834,160 bytes in
    fp32, 626,014 in bf16 (validate.measure.saved), and so does the estimate. In fp32 each layer's AltUp
    keeps 50,004 bytes (streams 3 x 18 x 48 x 4 = 10,368 twice, the innovation being the second; router
    norms 3,600 + 7,056; routers 2 x (3,456 + 216); coefficients 648 + 36 + 216; the scaled clone
    3,456; the rest of the predictions tensor 6,912) and LAuReL 504 + 7,056."""
    from costmodel import estimate

    ours = estimate(dict(BASE, name="g"), seq_len=9, batch=2, dtype=dtype).to_dict()["memory"]["activations"]
    assert ours == saved
    if dtype == "fp32":
        assert 2 * 10_368 + 3_600 + 7_056 + 2 * (3_456 + 216) + 648 + 36 + 216 + 3_456 + 6_912 == 50_004


def test_activation_sparsity_keeps_what_is_not_modelled():
    """activation_sparsity_pattern's Gaussian top-k keeps the gate's output (std's input), the standard
    deviation and the multiplier scalar on each layer that sets one: T (d_ff + 1) + 1 elements, here 2
    layers x (18 x 38 + 1) x 4 = 5,480 bytes in fp32 that the estimate leaves out (its warning says so)."""
    import torch
    import transformers

    from costmodel import estimate
    from validate.measure.saved import saved_activation_bytes

    fields = CONFIGS["gemma3n-five-streams"]
    config = transformers.AutoConfig.for_model(**fields, attn_implementation="eager")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32).train()
    ids = torch.randint(0, 99, (2, 9))
    measured = saved_activation_bytes(model, {"input_ids": ids, "labels": ids}, loss_fn=lambda out: out.loss)
    ours = estimate(dict(fields, name="g"), seq_len=9, batch=2, dtype="fp32").to_dict()["memory"]["activations"]
    assert measured.total_bytes - ours == 2 * (18 * 38 + 1) * 4 == 5_480


def test_estimate_says_what_it_leaves_out():
    """The estimate warns that activation sparsity's saved tensors are left out (nothing else is)."""
    from costmodel import estimate

    with pytest.warns(UserWarning, match="leave out what its Gaussian top-k keeps"):
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
