"""The ops each leaf launches in eager PyTorch (costmodel/kernel_facts.json "eager_ops"), counted
again on the real transformers Llama inside transformers' continuous-batching engine
(validate/eager_op_counts.py: TorchDispatchMode, each op given to the leaf whose module or function
runs it) and checked as exact integers, step by step."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from costmodel.eager_ops import eager_op_counts  # noqa: E402
from costmodel.kernel_time import kernel_facts  # noqa: E402
from costmodel.presets import config_from_dict  # noqa: E402
from costmodel.serving.steptime import serving_profile  # noqa: E402
from costmodel.tree import CostModel  # noqa: E402
from validate.eager_op_counts import count_engine_steps  # noqa: E402
from validate.serving_engine import TINY_LLAMA, tiny_model  # noqa: E402

#: One request alone first (its first chunk with nothing cached, then its decode steps alone),
#: then four more at once (steps of several sequences: chunks and decodes mixed, then decodes).
TRACE = [(0, 6, 4), (5, 9, 3), (5, 5, 4), (5, 7, 2), (5, 3, 3)]


@pytest.fixture(scope="module")
def counted():
    import torch

    torch.set_num_threads(1)
    steps = count_engine_steps(TRACE, tiny_model(0), scheduler="fifo", block_size=4, num_blocks=32,
                               max_batch_tokens=16, max_requests=8)
    cfg = config_from_dict({**TINY_LLAMA, "model_type": "llama", "torch_dtype": "float32"}, "tiny", "tiny-llama")
    tree = CostModel(cfg, serving_profile(cfg, attention="sdpa"), phase="chunk")
    return steps, cfg, {leaf.path: type(leaf.block).__name__ for leaf in tree.leaves}


def _entry() -> dict:
    (entry,) = kernel_facts()["eager_ops"]["implementations"]
    return entry


def test_the_stated_counts_apply_to_the_engines_llama(counted):
    _, cfg, _ = counted
    assert eager_op_counts(cfg, "sdpa") == _entry()["ops"]
    assert eager_op_counts(cfg, "eager") is None  # another attention path launches other ops
    assert eager_op_counts(cfg, "sdpa", weight_format="int4") is None
    assert eager_op_counts(cfg.replace(qkv_bias=True), "sdpa") is None  # addmm, not mm
    assert eager_op_counts(cfg.replace(family="gpt2"), "sdpa") is None


def test_every_leaf_launches_its_stated_ops_in_every_step(counted):
    steps, _, blocks = counted
    ops = _entry()["ops"]
    cases = [case["ops"] for case in _entry()["cases"]["WeightedSum"].values() if isinstance(case, dict)]
    assert cases == [30, 28, 23] and cases[0] == ops["WeightedSum"]
    seen, cached = set(), {}
    for index, step in enumerate(steps):
        counted_leaves = {path: n for path, n in step["ops"].items() if path not in ("model", "engine")}
        # every leaf that launches an op is a leaf of the tree, with its block's stated count
        assert set(counted_leaves) <= set(blocks)
        # every tree leaf with a stated count above zero was counted; those stated 0 launched nothing
        assert {p for p, b in blocks.items() if ops[b]} == set(counted_leaves)
        mask = len(step["queries"]) > 1 or max(step["queries"]) > 1
        read = any(cached.get(r, 0) for r in step["requests"])
        case = 0 if mask and read else 1 if mask else 2
        assert not (not mask and not read)  # a one-token prompt alone: not in this trace
        seen.add(case)
        for path, n in counted_leaves.items():
            block = blocks[path]
            assert n == (cases[case] if block == "WeightedSum" else ops[block]), (index, path, n)
        assert step["ops"]["model"] == 1  # the logits' index: no leaf's
        for r, q in zip(step["requests"], step["queries"]):
            cached[r] = cached.get(r, 0) + q
    assert seen == {0, 1, 2}  # the trace ran every case


def test_the_counts_per_leaf_sum_to_a_steps_charged_ops(counted):
    """A step of several sequences on this 2-layer Llama: 1 + 8 + 2 x 90 + 6 + 4 = 199 ops charged."""
    steps, cfg, blocks = counted
    ops = _entry()["ops"]
    tree = CostModel(cfg, serving_profile(cfg, attention="sdpa"), phase="chunk")
    per_step = sum(ops[type(leaf.block).__name__] * int(leaf.count.subs(cfg_layers(cfg))) for leaf in tree.leaves)
    assert per_step == 199
    # the general case (a mask, keys read from the cache); the test above checks the other two
    several = [s for s in steps if s["ops"]["decoder.layer.self_attention.weighted_sum"] == ops["WeightedSum"]]
    assert several and all(sum(n * (cfg.n_decoder_layers if p.startswith("decoder.layer.") else 1)
                               for p, n in s["ops"].items() if p not in ("model", "engine")) == 199
                           for s in several)


def cfg_layers(cfg) -> dict:
    from costmodel import symbols as S

    return {S.L_dec: cfg.n_decoder_layers}


def test_the_copies_stated_are_the_bytes_the_engine_writes_in_each_case(counted):
    """kernel_facts.json eager_ops "copies", per case: the bytes index_select (the paged cache's
    gather) and clone (repeat_kv) write in each step, counted with TorchDispatchMode, are the
    stated parts' written halves for every key of the step (gather h_kv d_h e, repeat_kv h d_h e,
    K and V, per layer), where the step's case runs them (costmodel/serving/eager_step.py)."""
    from costmodel.serving.eager_step import EagerStep

    steps, cfg, _ = counted
    cases = _entry()["cases"]["WeightedSum"]
    e, d_h, layers = 4, cfg.d_model // cfg.n_heads, cfg.n_decoder_layers
    cached: dict = {}
    for step in steps:
        keys = [cached.get(r, 0) + q for r, q in zip(step["requests"], step["queries"])]
        case = EagerStep.case(step["queries"], keys)
        skips = cases[case].get("skips", [])
        gather = 0 if "gather" in skips else 2 * e * d_h * cfg.n_kv_heads * sum(keys) * layers
        repeat = 0 if "repeat_kv" in skips else 2 * e * d_h * cfg.n_heads * sum(keys) * layers
        assert step["written"].get("index_select", 0) == gather, (step["queries"], case)
        assert step["written"].get("clone", 0) == repeat, (step["queries"], case)
        for r, k in zip(step["requests"], keys):
            cached[r] = k
