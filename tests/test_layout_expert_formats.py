"""A weight format that quantizes only some leaves (mxfp4: the routed experts) in a layout: every
other leaf (attention, embeddings, head, norms, the router) still holds its weights, in the
dtype's bytes, on each rank that holds it (costmodel/layout/parts.py adds every leaf's
Leaf.weight_part when the workload quantizes). At tp 1 the rank's weights are the one-device
tree's, to the byte; at tp 2 the ranks together hold at least the whole (the parts tensor
parallelism replicates are counted on each rank)."""

from __future__ import annotations

import pytest
import sympy as sp

from costmodel.config import Workload
from costmodel.layout.rank import ParallelEstimate
from costmodel.layout.serving_memory import serving_memory
from costmodel.layout.spec import Layout
from costmodel.presets import load_preset
from costmodel.tree import CostModel, model_values, profile_for


def _workload(weight_dtype: str) -> Workload:
    # int4 in groups of 64: gpt-oss's hidden width, 2,880, is no multiple of the default 128, which
    # GPTQ and AWQ refuse (quantization.check_whole_groups).
    return Workload(seq_len=5, gen_tokens=20, batch=1, attention="flash", precision="pure",
                    kv_cache="static", weight_dtype=weight_dtype, weight_group=64 if weight_dtype == "int4" else None)


def _one_device(cfg, workload: Workload) -> tuple[int, int]:
    """The one-device decode tree's weight bytes, and the part of them in the routed experts."""
    from costmodel import blocks as B
    from costmodel import symbols as S

    tree = CostModel(cfg, profile_for(cfg, workload), phase="decode")
    subs = {**{k: sp.Integer(v) for k, v in model_values(cfg).items()}, S.e: sp.Integer(2)}
    whole = int(tree.total("weight_bytes").xreplace(subs))
    experts = sum(int(leaf.total("weight_bytes").xreplace(subs)) for leaf in tree.leaves
                  if isinstance(leaf.block, B.Experts))
    return whole, experts


def _rank_weights(cfg, workload: Workload, tp: int) -> int:
    estimate = ParallelEstimate(cfg, workload, Layout(tp=tp, framework="deepspeed"), phase="decode")
    return serving_memory(estimate)["weights"]


@pytest.mark.parametrize("model", ["gpt-oss-20b", "mixtral-8x7b"])
@pytest.mark.parametrize("weight_dtype", ["mxfp4", "int4"])
def test_a_tp1_layout_holds_the_one_device_weights_to_the_byte(model, weight_dtype):
    cfg, workload = load_preset(model), _workload(weight_dtype)
    whole, experts = _one_device(cfg, workload)
    assert 0 < experts < whole  # the experts are not all of it: the rest must be counted too
    assert _rank_weights(cfg, workload, 1) == whole


@pytest.mark.parametrize("model", ["gpt-oss-20b", "mixtral-8x7b"])
def test_tp2_ranks_hold_at_least_the_whole_mxfp4_model(model):
    cfg, workload = load_preset(model), _workload("mxfp4")
    whole, experts = _one_device(cfg, workload)
    rank = _rank_weights(cfg, workload, 2)
    assert 2 * rank >= whole
    assert rank > experts / 2  # more than its half of the experts: its share of the rest as well
