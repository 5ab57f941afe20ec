"""Nemotron 3 Super and Ultra (nemotron_h with moe_latent_size, LatentMoE): the presets against
transformers 5.24's NemotronHForCausalLM on the meta device and against the Megatron-Bridge card's
checkpoint count; a training step's matmul FLOPs (forward and backward, FlopCounterMode) of small
latent configs; where the layout model reads the experts' width (Megatron-Core's all-to-all in the
latent width, the latent projections replicated like the router). The forward and decode FLOPs,
parameters and caches of small latent configs are tests/test_hf_nemotron_h.py's ("latent")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import costmodel
from tests.family_configs import hf_meta_count
from tests.test_hf_nemotron_h import MOE, _forward_flops


def _fields(name: str) -> dict:
    path = Path(costmodel.__file__).parent / "presets" / f"{name}.json"
    return {k: v for k, v in json.loads(path.read_text()).items() if not k.startswith("_")}


def _params(name: str) -> dict:
    from costmodel import estimate

    with pytest.warns(UserWarning, match="Mamba-2 layers"):
        return estimate(name, seq_len=16).to_dict()["params"]


def test_nemotron_3_super_preset_equals_the_class():
    """88 layers (40 Mamba-2, 40 latent MoE, 8 attention) of 4,096: 120,668,687,360 parameters (the
    name's "120B"), 12,770,216,960 active (22 of 512 experts a token; 12.23B without the input
    embedding table, the name's "A12B")."""
    params = _params("nemotron-3-super")
    assert params["total"] == hf_meta_count(_fields("nemotron-3-super")) == 120_668_687_360
    assert params["active"] == 12_770_216_960
    assert params["active"] - params["embeddings"] == 12_233_346_048


def test_nemotron_3_super_with_its_mtp_module_is_the_released_checkpoint():
    """Megatron-Bridge's verification card (examples/model_verification_cards/nemotron-3-super-120b-
    a12b/card.yaml at 067f987df, NVIDIA-Nemotron-3-Super-120B-A12B-BF16 at d51eab0d): its export
    "exactly reproduces all 42,683 source tensors and 123,611,033,088 elements, including the 41
    FP32 router correction-bias tensors". The class (no MTP) plus the 40 layers' and the MTP
    layer's e_score_correction_bias (512 each, a buffer in transformers) plus the MTP module
    (Nemotron3SuperProvider's mtp_hybrid_override_pattern '*E': one attention and one latent MoE
    layer as the decoder's, eh_proj 2d -> d, and enorm, hnorm and its final norm of d)."""
    params, d = _params("nemotron-3-super"), 4096
    mtp = params["per_layer"]["decoder.attention"] + params["per_layer"]["decoder.moe"] + 2 * d * d + 3 * d
    assert params["total"] + 41 * 512 + mtp == 123_611_033_088


def test_nemotron_3_5_lightning_with_its_mtp_module_is_the_released_checkpoint():
    """Megatron-Bridge trains Nemotron 3.5 Lightning from Nemotron 3 Nano's provider with
    mtp_num_layers 2 of '*E', mtp_use_repeated_layer True (src/megatron/bridge/recipes/nemotronh/h100/
    nemotron_3_nano.py nemotron_3_5_lightning_pretrain_config at 067f987df): Nano's 31,577,937,344,
    plus the 23 MoE layers' and the MTP layer's e_score_correction_bias (128 each) and the MTP
    module (attention, MoE, eh_proj 2d -> d, three norms of d) is the verification card's count
    (examples/model_verification_cards/nemotron-3.5-lightning/card.yaml at 067f987df: "all 6,513
    tensors and 32,913,266,240 parameters match the pinned source")."""
    params, d = _params("nemotron-3.5-lightning"), 2688
    assert params["total"] == hf_meta_count(_fields("nemotron-3.5-lightning")) == 31_577_937_344
    mtp = params["per_layer"]["decoder.attention"] + params["per_layer"]["decoder.moe"] + 2 * d * d + 3 * d
    assert params["total"] + 24 * 128 + mtp == 32_913_266_240


def test_nemotron_3_ultra_preset_equals_the_class():
    """108 layers (48 Mamba-2, 48 latent MoE, 12 attention) of 8,192: 549,308,968,960 parameters
    (the name's "550B"), 56,058,818,560 active (54.99B without the input embedding table, the
    name's "A55B")."""
    params = _params("nemotron-3-ultra")
    assert params["total"] == hf_meta_count(_fields("nemotron-3-ultra")) == 549_308_968_960
    assert params["active"] - params["embeddings"] == 54_985_076_736


@pytest.mark.parametrize("fields", [dict(MOE, moe_latent_size=24, hybrid_override_pattern="*E-E"),
                                    dict(MOE, moe_latent_size=24, mlp_bias=True, hybrid_override_pattern="E*E")],
                         ids=["latent", "latent_biases"])
def test_training_step_flops_equal_the_class(fields):
    """Forward and backward of the loss (2 x forward for each product: every weight trains). Without
    Mamba-2 layers: their backward is not the tree's (tests/test_mamba_mixer.py)."""
    from costmodel import estimate

    flops = estimate(dict(fields, name="latent"), seq_len=9, batch=2, dtype="fp32").to_dict()["flops"]
    assert flops["training"] == 3 * flops["forward"] == _forward_flops(fields, 2, 9, backward=True)


def _latent_estimate(dispatcher: str, latent: int | None = 24):
    from costmodel.config import Workload
    from costmodel.hf import from_hf_config
    from costmodel.layout import Layout, ParallelEstimate

    cfg = from_hf_config(dict(MOE, hybrid_override_pattern="*E-E", moe_latent_size=latent), name="latent")
    layout = Layout(dp=5, ep=5, framework="megatron", zero=1, ep_dispatcher=dispatcher)
    return ParallelEstimate(cfg, Workload(seq_len=12, batch=1, dtype="bf16", impl="megatron", attention="flash"),
                            layout)


def test_expert_parallel_payloads_are_latent_wide():
    """A rank's 12 tokens, top 2 of 5 experts, in the latent width 24 (48 bf16 bytes, not d's 96):
    the all-to-all dispatches and combines the 24 slots forward and backward (4 x 24 x 48 = 4,608 a
    layer) beside the 5 experts' int64 counts (40); the flex dispatcher each token once (4 x 12 x 48
    = 2,304 a layer). Two MoE layers. Without the latent, d's twice as many bytes."""
    for dispatcher, expected, wide in (("alltoall", {"all_to_all": 2 * (40 + 4_608)}, {"all_to_all": 2 * (40 + 9_216)}),
                                       ("hybridep", {"all_to_all": 80, "flex": 2 * 2_304},
                                        {"all_to_all": 80, "flex": 2 * 4_608})):
        latent, full = _latent_estimate(dispatcher), _latent_estimate(dispatcher, latent=None)
        assert latent.communication(latent.stages[0])["ep"] == expected
        assert full.communication(full.stages[0])["ep"] == wide


def test_latent_projections_run_unsplit_like_the_router():
    """Megatron-Core's fc1/fc2_latent_proj are TELinear "duplicated": tensor parallelism splits
    nothing of them; under parallel folding they run on the rank's sequence-parallel tokens."""
    from costmodel import blocks as B
    from costmodel import symbols as S
    from costmodel.layout.split import column_inputs, row_outputs, substitution

    block = B.LatentProjection(S.b * S.n, S.d, S.d_l)
    common = dict(sp_on=True, vocabulary="pad128", loss_parallel=False, encoder=False)
    assert substitution(block, **common) == {}
    assert substitution(block, expert_split="folded", **common) == {S.n: S.n / S.tp}
    assert column_inputs(block, "fused", False) == row_outputs(block) == 0


def test_latent_experts_refusals():
    """d_latent needs routed experts, and is not modelled beside Llama 4's every-token experts
    (transformers' Llama4TextExperts bmm over all E experts: the hf profile's experts_every_token)."""
    from costmodel import estimate
    from costmodel.config import ConfigError
    from costmodel.presets import load_preset

    with pytest.raises(ConfigError, match="d_latent applies only with n_experts"):
        load_preset("llama3-8b").replace(d_latent=1024)
    with pytest.raises(ConfigError, match="every-token experts"):
        estimate(load_preset("llama4-scout").replace(d_latent=1024), seq_len=8)


def test_the_super_rows_build_their_recipes_layouts():
    """Megatron-Bridge's Nemotron 3 Super rows (BASE_NEMOTRON_3_SUPER_CONFIG: EP 64, etp 1, hybridep):
    on GB200 TP 2 folded with SP, 32 data-parallel ranks, one rank of expert data parallelism (tp x
    dp / ep), 8 of the 512 experts a rank; on B200 MXFP8 TP 1 with recompute ['moe_act', 'layernorm']."""
    from reports.published_runs import other_runs_data, train_setup

    data = other_runs_data()
    runs, source = {r["id"]: r for r in data["runs"]}, data["sources"]["megatron-bridge-moe"]
    gb200, _, _ = train_setup(runs["megatron-bridge-moe 26.04.01 nemotron-3-super mxfp8 64xgb200"], source)
    layout = gb200.layout
    assert gb200.cfg.d_latent == 1024 and gb200.cfg.n_mixer_layers("moe") == 40
    assert (layout.tp, layout.dp, layout.ep, layout.etp, layout.folded, layout.sp) == (2, 32, 64, 1, True, True)
    assert layout.ep_dispatcher == "hybridep" and layout.microbatches == 16
    assert gb200.experts()["experts_per_rank"] == 8 and gb200.experts()["expert_data_parallel"] == 1
    b200, _, _ = train_setup(runs["megatron-bridge-moe 26.04.01 nemotron-3-super mxfp8 64xb200"], source)
    assert (b200.layout.tp, b200.layout.dp, b200.layout.folded) == (1, 64, False)
    assert b200.workload.recompute == "layernorm-moe-act"
