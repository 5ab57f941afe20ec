"""The families of costmodel/hf_more_types.py and the training-only MoE input noise of PhiMoE
(input_jitter_noise) and DBRX (moe_jitter_eps), which their released configs set: every validate
row exact against the class in train mode on real tensors (seeded; the bytes do not depend on the
noise's values), nothing of it at inference, and the released shapes accepted."""

from __future__ import annotations

import pytest

from tests.family_configs import assert_rows_exact
from tests.test_hf_moe_extra import CONFIGS as MOE_CONFIGS
from tests.test_hf_moe_extra import DBRX

#: PhiMoE's and DBRX's odd configs (tests/test_hf_moe_extra.py) with the released noise, 0.01.
NOISY = {
    "phimoe": dict(MOE_CONFIGS["phimoe"], input_jitter_noise=0.01),
    "dbrx": dict(DBRX["dbrx"], ffn_config=dict(DBRX["dbrx"]["ffn_config"], moe_jitter_eps=0.01)),
    # 0.0 is not null: DbrxRouter still multiplies by uniform_(1, 1)
    "dbrx-zero": dict(DBRX["dbrx-mqa"], ffn_config=dict(DBRX["dbrx-mqa"]["ffn_config"], moe_jitter_eps=0.0)),
}


def _cfg(name):
    from costmodel.presets import config_from_dict

    return config_from_dict(dict(NOISY[name]), source=name, name=name)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("name", ["dbrx", "dbrx-zero"])
def test_dbrx_noise_every_validate_row_is_exact(name, dtype):
    """DbrxRouter multiplies the MoE input in place by its noise once a layer: the multiply keeps
    the noise (n d elements in the model's dtype) for backward."""
    pytest.importorskip("transformers")
    import torch

    from costmodel.config import Workload
    from validate.compare import validate

    torch.manual_seed(0)
    rows = validate(_cfg(name), Workload(seq_len=12, batch=2, dtype=dtype, gen_tokens=2), target="hf",
                    device="cpu")
    assert_rows_exact(rows)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_phimoe_noise_rows_exact_and_its_bytes_by_liveness(dtype):
    """PhiMoE multiplies the MoE input twice (PhimoeSparseMoeBlock, then PhimoeTopKRouter on a
    reshape of it), each multiply keeping its noise. The second is an in-place op on a view, whose
    node autograd wraps in CopySlices, which validate's graph walk cannot read: the walk sees one
    noise a layer. Every other row is exact, and the bytes saved for backward equal what the graph
    holds by liveness (validate/hf_more_types.py live_saved_bytes); the walk is short by exactly
    the hidden noise, b n d elements a layer."""
    pytest.importorskip("transformers")
    import torch

    from costmodel.config import Workload
    from costmodel.estimation import Estimate
    from validate.compare import build, training_loss, validate
    from validate.hf_more_types import live_saved_bytes

    cfg = _cfg("phimoe")
    workload = Workload(seq_len=12, batch=2, dtype=dtype, gen_tokens=2)
    torch.manual_seed(0)
    rows = validate(cfg, workload, target="hf", device="cpu")
    saved = next(row for row in rows if row.quantity == "bytes saved for backward")
    assert [row for row in rows if row is not saved and row.difference != 0] == []
    element = 4 if dtype == "fp32" else 2
    assert saved.formula - saved.measured == cfg.n_decoder_layers * 2 * 12 * cfg.d_model * element
    torch.manual_seed(0)
    model, inputs, _ = build(cfg, workload, "hf")
    live = live_saved_bytes(model, inputs, training_loss(cfg, "hf"))
    assert live == Estimate(cfg, workload.replace(impl="hf", sdpa_device="cpu")).total("saved_bytes") == saved.formula


@pytest.mark.parametrize("name", sorted(NOISY))
def test_the_noise_is_training_only(name):
    """The noise adds a training leaf (its multiplies' elements and kept bytes) and nothing to a
    forward at inference, a decode step or the KV cache."""
    from costmodel.config import Workload
    from costmodel.estimation import Estimate

    noisy = _cfg(name)
    quiet = noisy.replace(moe_input_noise=None)
    workload = Workload(seq_len=12, batch=2, dtype="bf16", gen_tokens=2)
    ours, theirs = Estimate(noisy, workload), Estimate(quiet, workload)
    multiplies = 2 if name == "phimoe" else 1
    elements = multiplies * 2 * 12 * noisy.d_model * noisy.n_decoder_layers
    assert ours.total("saved_bytes") - theirs.total("saved_bytes") == 2 * elements
    assert ours.flops()["other_elements"]["mul"] - theirs.flops()["other_elements"].get("mul", 0) == elements
    assert ours.total("flops_matmul") == theirs.total("flops_matmul")
    assert ours.memory_numbers()["kv_cache"] == theirs.memory_numbers()["kv_cache"]
    for phase in ("prefill", "decode"):
        from costmodel.tree import CostModel, profile_for

        assert ([leaf.name for leaf in CostModel(noisy, profile_for(noisy), phase=phase).leaves]
                == [leaf.name for leaf in CostModel(quiet, profile_for(quiet), phase=phase).leaves])


def test_the_released_configs_are_accepted():
    """Phi-3.5-MoE's released config (input_jitter_noise 0.01 beside router_jitter_noise 0.01)
    and databricks/dbrx-instruct's (moe_jitter_eps 0.01) read, with the noise."""
    from costmodel.hf import from_hf_config

    phi = dict(model_type="phimoe", vocab_size=32064, hidden_size=4096, intermediate_size=6400,
               num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
               max_position_embeddings=131072, rms_norm_eps=1e-5, num_local_experts=16,
               num_experts_per_tok=2, attention_bias=True, lm_head_bias=True,
               input_jitter_noise=0.01, router_jitter_noise=0.01, sliding_window=131072)
    assert from_hf_config(phi, name="phi-3.5-moe").moe_input_noise == 0.01
    dbrx = dict(model_type="dbrx", d_model=6144, n_heads=48, n_layers=40, max_seq_len=32768,
                vocab_size=100352, attn_config=dict(kv_n_heads=8, clip_qkv=8, rope_theta=500000),
                ffn_config=dict(ffn_hidden_size=10752, moe_num_experts=16, moe_top_k=4,
                                moe_jitter_eps=0.01))
    assert from_hf_config(dbrx, name="dbrx-instruct").moe_input_noise == 0.01
    assert from_hf_config(dict(phi, input_jitter_noise=0.0), name="p").moe_input_noise is None
