"""Multi-query attention under tensor parallelism in training (costmodel/layout/replicated_kv.py): the one
key/value head replicated on every rank, as bigcode's Megatron-LM fork trains StarCoderBase (TP 4, PP 4),
its output gradient all-reduced over the tensor-parallel group in each attention layer's backward."""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from costmodel.layout import Layout, ParallelEstimate
from reports.published_runs import other_runs_data, train_setup

ROW = "gpu-hours-starcoder starcoderbase-15.5b 1T tokens"


def _starcoder(**changes):
    data = other_runs_data()
    run = {**next(r for r in data["runs"] if r["id"] == ROW), **changes}
    return train_setup(run, data["sources"]["gpu-hours-starcoder"])[0]


def test_each_rank_holds_the_whole_key_value_projection():
    """StarCoderBase (d 6,144, 48 heads of 128, one KV head, d_ff 24,576, V 49,152, 8,192 positions) at TP 4,
    the first of 4 stages (10 layers, the embeddings): a layer's rank holds q at 12 heads (6,144 x 1,536 +
    1,536), the whole k/v (6,144 x 256 + 256: bigcode's get_linear_layer), the output (1,536 x 6,144 + 6,144),
    two LayerNorms (24,576), fc1 and fc2 at 6,144 columns (37,754,880 each): 95,989,504; x 10, plus 12,288
    rows of the word embedding and the 8,192 positions whole: 1,085,724,160."""
    estimate = _starcoder()
    stage = estimate.stages[0]
    layer = (6144 * 1536 + 1536) + (6144 * 256 + 256) + (1536 * 6144 + 6144) + 4 * 6144 + 2 * (6144 * 6144 + 6144)
    assert layer == 95_989_504
    assert estimate.on_stage(stage, "params") == 10 * layer + 12288 * 6144 + 8192 * 6144 == 1_085_724_160


def test_the_key_value_gradient_is_all_reduced_each_attention_layer():
    """Without sequence parallelism (the row's sp false): Megatron's all-reduces of 8,192 tokens x 6,144 x 2 B
    (100,663,296: 20 row outputs, 20 column inputs, the embedding's), and bigcode's copy_to_tensor_model_parallel
    _region on the k/v output: [8,192, 1, 2 x 128] x 2 B = 4,194,304 bytes, once a layer (10 on the stage)."""
    estimate = _starcoder()
    assert estimate.tensor_parallel_collectives(estimate.stages[0]) == [("all_reduce", 41, 100_663_296),
                                                                         ("all_reduce", 10, 4_194_304)]


@pytest.mark.parametrize("changes, words", [
    (dict(sp=True), "no sequence or context parallelism"),
    (dict(framework="fsdp2", zero=3), "bigcode's Megatron-LM"),
])
def test_other_layouts_below_the_head_are_refused(changes, words):
    from dataclasses import replace

    estimate = _starcoder()
    with pytest.raises(ConfigError, match=words):
        ParallelEstimate(estimate.cfg, estimate.workload, replace(estimate.layout, **changes), phase="train")


def test_grouped_heads_below_tp_stay_refused_in_training():
    """Megatron-Core's num_query_groups < tp (linear_qkv split, its output all-gathered) is another rule:
    Llama 2 70B's 8 KV heads at TP 16 are refused in training (replicated in inference)."""
    from costmodel.config import Workload
    from costmodel.presets import load_preset

    cfg = load_preset("llama2-70b")
    workload = Workload(seq_len=4096, batch=1, dtype="bf16", precision="pure", attention="flash")
    with pytest.raises(ConfigError, match=r"does not divide the key/value heads \(8\).*num_query_groups < tp"):
        ParallelEstimate(cfg, workload, Layout(tp=16, framework="megatron", zero=1), phase="train")
    ParallelEstimate(cfg, workload, Layout(tp=16), phase="decode")
