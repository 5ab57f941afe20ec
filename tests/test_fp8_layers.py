"""costmodel/layout/fp8_layers.py: the layers and modules Nemotron 3 Super's NVFP4 perf recipe keeps in bf16
(Megatron-Bridge nemotron_3_super_bf16_with_nvfp4_mixed: the last 14 of 88 layers; te_quant.cfg: attention
projections, latent projections, MTP), each leaf's share of runs at the FP4 rate (session 44)."""

import pytest

from costmodel.config import ConfigError
from costmodel.layout import Layout
from costmodel.layout.fp8_layers import MIXED_PRECISION
from costmodel.layout.roofline_parts import fp8_share, runs_fp8
from reports.published_runs import other_runs_data, train_setup, train_tokens

SUPER_NVFP4 = "megatron-bridge-moe 26.04.01 nemotron-3-super nvfp4 64xgb200"
NAME = "nemotron_3_super_bf16_with_nvfp4_mixed"


def _row(run_id, drop_mixed=False):
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    if drop_mixed:
        run = {k: v for k, v in run.items() if k != "mixed_precision"}
    return run, data["sources"][run_id.split()[0]]


def test_the_configuration_as_megatron_bridge_states_it():
    mixed = MIXED_PRECISION[NAME]
    assert (mixed.recipe, mixed.first_layers, mixed.last_layers) == ("nvfp4", 0, 14)
    assert mixed.bf16_leaves == ("attention.qkv", "attention.out", "moe.latent_in", "moe.latent_out")
    assert mixed.bf16_prefixes == ("mtp.",)
    assert "num_layers_at_end_in_bf16 14" in mixed.source and "'*mixer.out_proj'" in mixed.source


def test_each_leafs_share_of_fp4_runs_on_super():
    """Super's pattern (88 layers: 40 Mamba, 40 MoE, 8 attention) ends 'EMEM*EMEMEMEME': its last 14 layers
    hold 6 Mamba, 7 MoE and 1 attention layer, so 34/40 of the mixers and 33/40 of the MoE layers run FP4."""
    estimate = train_setup(*_row(SUPER_NVFP4))[0]
    assert estimate.layout.mixed_precision == NAME
    shares = {w["path"]: fp8_share(w, estimate) for w in estimate.structure["work"] if runs_fp8(w, estimate)}
    assert shares == {"decoder.mamba_layer.mamba.mamba": 34 / 40, "decoder.attention_layer.attention.qkv": 0.0,
                      "decoder.attention_layer.attention.out": 0.0, "decoder.moe_layer.moe.latent_in": 0.0,
                      "decoder.moe_layer.moe.experts": 33 / 40, "decoder.moe_layer.moe.latent_out": 0.0,
                      "decoder.moe_layer.moe.shared_expert": 33 / 40, "mtp.layer.attention.qkv": 0.0,
                      "mtp.layer.attention.out": 0.0, "mtp.layer.moe.latent_in": 0.0, "mtp.layer.moe.experts": 0.0,
                      "mtp.layer.moe.latent_out": 0.0, "mtp.layer.moe.shared_expert": 0.0}
    # leaves the recipe does not run are 0, as without the configuration
    assert all(fp8_share(w, estimate) == 0.0 for w in estimate.structure["work"] if not runs_fp8(w, estimate))


def test_without_the_configuration_every_linear_leaf_runs_fp4():
    estimate = train_setup(*_row(SUPER_NVFP4, drop_mixed=True))[0]
    assert estimate.layout.mixed_precision is None
    assert {fp8_share(w, estimate) for w in estimate.structure["work"]} == {0.0, 1.0}


def test_the_rows_rate_before_and_after():
    """The kernel model (tokens/s a GPU): 12,723.9 with every linear in FP4, 11,832.5 with the recipe's bf16
    layers and modules (published 6,784: 1.88x -> 1.74x; 12,430.8 and 11,650.2, 1.83x -> 1.72x, when first
    computed); the roofline 16,004.4 -> 14,464.4."""
    after, before = _row(SUPER_NVFP4), _row(SUPER_NVFP4, drop_mixed=True)
    # session 45: the FP4 GEMMs read their operands at NVFP4's 0.5625 B an element, not bf16's 2 (the experts'
    # bytes-bound grouped GEMMs): 12452.1 and 11659.4 before; 12430.8 and 11650.2 before wt44_review's Megatron passes
    assert round(train_tokens(*before, "kernels"), 1) == 12723.9
    assert round(train_tokens(*after, "kernels"), 1) == 11832.5
    assert round(train_tokens(*before, "roofline"), 1) == 16004.4
    assert round(train_tokens(*after, "roofline"), 1) == 14464.4


@pytest.mark.parametrize("changes, words", [
    ({"mixed_precision": "bf16_with_nvfp4_mixed"}, "mixed_precision must be one of"),
    ({"fp8": "mxfp8"}, "is a --fp8 nvfp4 configuration; here --fp8 mxfp8"),
    ({"pp": 2, "dp": 32}, "without pipeline parallelism (pp 1); here pp 2"),
])
def test_a_configuration_it_cannot_apply_is_refused(changes, words):
    layout = {"tp": 1, "pp": 1, "dp": 64, "ep": 64, "fp8": "nvfp4", "mixed_precision": NAME} | changes
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(")", r"\)")):
        Layout(**layout)


@pytest.mark.parametrize("value", [["x"], {"a": 1}, 5])
def test_a_name_that_is_not_a_string_is_one_config_error(value):
    """A list or a dict raised TypeError (unhashable) from the dictionary lookup: a traceback through Layout, and
    make_layout's "layout: unhashable type: 'list'." through the API."""
    with pytest.raises(ConfigError, match="mixed_precision must be one of"):
        Layout(tp=1, dp=8, framework="megatron", fp8="nvfp4", mixed_precision=value)


@pytest.mark.parametrize("model", ["llama-3-8b", "mixtral-8x7b"])
def test_a_model_without_a_hybrid_layer_pattern_is_refused(model):
    """The configuration's layers are numbered along a hybrid pattern's Mamba, attention and MoE layers and its
    matchers named by their leaves; a model without a pattern ran every linear in FP4 with the name accepted
    (its leaves 'layer.decoder', 'self_attention.qkv' matched neither rule)."""
    from costmodel import api

    layout = Layout(tp=1, dp=8, framework="megatron", fp8="nvfp4", mixed_precision=NAME)
    with pytest.raises(ConfigError, match=f"mixed_precision {NAME} is modelled on a hybrid layer pattern"):
        layout.check(api.load_model(model))
    # and through the API's estimate, one ConfigError before any number
    with pytest.raises(ConfigError, match="hybrid layer pattern"):
        api.estimate(model, seq_len=4096, layout={"tp": 1, "dp": 8, "framework": "megatron", "fp8": "nvfp4",
                                                  "mixed_precision": NAME})


def test_userbuffers_overlap_refuses_the_configuration():
    """TE's userbuffers ops (layout/ub_overlap.py, through async_tp.stage_passes) time each leaf's GEMMs at one
    timer, runs_fp8's: under the configuration they priced its bf16 layers' overlapped GEMMs at the FP4 rate."""
    from costmodel.layout.overlap import Overlap
    from costmodel.layout.timing import step_time

    estimate, hardware, options = train_setup(*_row(SUPER_NVFP4))
    with pytest.raises(ConfigError, match="userbuffers .* mixed_precision"):
        step_time(estimate, hardware, time_model="kernels", **(options | {"overlap": Overlap(ub="te")})).step()
