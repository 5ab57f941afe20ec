"""Megatron-FSDP (`--framework megatron --zero 3`, with `--dp-shard` its HFSDP): the bucket padding
of Megatron-LM 2a75ac12c's param_and_grad_buffer.py, ported (costmodel/layout/megatron_fsdp.py), and
one rank's state, buffers and collectives of the layout model, by hand from Megatron-FSDP's rules.

TINY (tests/distributed_cases.py) under Megatron's conventions: the vocabulary padded to 128, so the
embedding and the untied head are 128 x 48 = 6,144 each, the final norm 48, and each of the 2 layers
2,304 (q) + 2 x 768 (k, v: 2 groups of 8) + 2,304 (o) + 3 x 48 x 37 (gate, up, down) + 2 x 48 (norms)
= 11,568: 35,472 parameters. In bf16 Megatron keeps 2 bytes of weights, 4 of fp32 main gradients and
12 of fp32 master weights and Adam moments a parameter.
"""

from __future__ import annotations

import json
import math

import pytest

import cli
from costmodel.config import ConfigError, Workload
from costmodel.layout import Layout, ParallelEstimate
from costmodel.layout.megatron_fsdp import bucket_elements, chunk_size_factor, shard_elements
from tests.distributed_cases import TINY

BF16 = Workload(seq_len=8, batch=2, dtype="bf16", impl="megatron", attention="flash")
PARAMS, LAYER = 35_472, 11_568

# One of TINY's TransformerLayers as Megatron-Core builds it (Transformer Engine's fused modules):
# linear_qkv's layer_norm_weight (48) and weight (48 + 2 x 16 = 80 rows of 48), linear_proj (48 x 48),
# linear_fc1's layer_norm_weight (48) and weight (gate and up, 74 x 48), linear_fc2 (48 x 37).
LAYER_SHAPES = [(48,), (80, 48), (48, 48), (48,), (74, 48), (48, 37)]


def test_the_bucket_chunk_is_the_lcm_of_the_row_sizes_that_do_not_fit():
    """_get_parameter_groups, step 3: rows of 48 (the first after sorting by row size), then
    linear_fc2's 37 (48 % 37 != 0 and 1,776 elements not under 48): lcm(48, 37) = 1,776; the norms'
    rows of 1 divide it and are smaller than a chunk."""
    assert sum(math.prod(shape) for shape in LAYER_SHAPES) == LAYER
    assert chunk_size_factor(LAYER_SHAPES) == 48 * 37 == 1_776
    assert chunk_size_factor([(7, 5), (5,), (3, 7)]) == 35  # rows 7, 5 (lcm 35); (5,) is under a chunk


def test_the_bucket_is_padded_by_chunks_and_to_ranks_times_a_chunk():
    """build_data_parallel_buffer_index over the layer, in step 3's order (row size, largest first):
    linear_qkv's 3,840 = 2 chunks + 288 takes 3 chunks (5,328); linear_proj's 2,304 = 1 chunk + 528
    shares the gap (288 + 528 <= 1,776: its whole chunk after it, 7,104) and both norms (48 each) fill
    the rest of it; linear_fc1's 3,552 and linear_fc2's 1,776 are whole chunks: 12,432 = 7 chunks.
    Padded to a multiple of ranks x 1,776: 7 chunks whole on 1 rank or 7, 8 on 4 (3,552 a rank), 9 on 3
    (5,328 a rank); 2,892 = ceil(11,568 / 4) without the padding."""
    assert bucket_elements(LAYER_SHAPES, 1) == 12_432 == 7 * 1_776
    assert bucket_elements(LAYER_SHAPES, 7) == 12_432
    assert bucket_elements(LAYER_SHAPES, 4) == 14_208 and shard_elements(LAYER_SHAPES, 4) == 3_552
    assert shard_elements(LAYER_SHAPES, 3) == 5_328
    # every tensor smaller than the chunk is a fragment: (3, 7)'s 21 and (5,)'s 5 after (7, 5)'s 35
    assert bucket_elements([(7, 5), (5,), (3, 7)], 4) == 140


def _rank(**layout) -> tuple[dict, ParallelEstimate]:
    estimate = ParallelEstimate(TINY, BF16, Layout(framework="megatron", zero=3, **layout))
    return estimate.per_stage[0], estimate


def test_optim_grads_params_shards_weights_gradients_and_optimizer():
    """dp 4: each rank holds ceil(35,472 / 4) = 8,868 parameters of each: 17,736 bytes of weights,
    35,472 of fp32 main gradients, 106,416 of master weights and moments. Each micro-batch gathers
    the bf16 weights twice (forward, and again in backward: optim_grads_params reshards after
    forward) and reduce-scatters the fp32 gradients: 2 x 2 x 35,472 and 4 x 35,472 bytes. The buffers:
    the computing and the prefetched layer gathered (2 x 2 x 11,568) and the layer's unsharded fp32
    gradient the reduce-scatter reads (4 x 11,568), beside the model's own 32 bytes."""
    rank, estimate = _rank(dp=4)
    assert estimate.on_stage(estimate.stages[0], "params") == PARAMS
    assert (rank["weights"], rank["gradients"], rank["optimizer"]) == (2 * 8_868, 4 * 8_868, 12 * 8_868)
    assert rank["communication"]["dp"] == {"all_gather": 2 * 2 * PARAMS, "reduce_scatter": 4 * PARAMS}
    assert rank["buffers"] == 32 + 2 * 2 * LAYER + 4 * LAYER == 92_576
    two = _rank(dp=4, microbatches=2)[0]["communication"]["dp"]
    assert two == {"all_gather": 2 * 2 * 2 * PARAMS, "reduce_scatter": 2 * 4 * PARAMS}  # every micro-batch
    zero1 = ParallelEstimate(TINY, BF16, Layout(framework="megatron", zero=1, dp=4)).per_stage[0]
    assert (zero1["weights"], zero1["gradients"], zero1["optimizer"]) == (2 * PARAMS, 4 * PARAMS, 12 * 8_868)


def test_hfsdp_shards_the_optimizer_over_all_of_dp():
    """dp 8 as 2 replicas of a shard group of 4 (num_distributed_optimizer_instances 2, outer 'optim'):
    weights and gradients over the 4 (8,868 each), master weights and moments over all 8 (4,434 each);
    once a step the 8,868-element gradient shard is reduce-scattered over the 2 replicas in fp32 and
    the weights all-gathered back in bf16; the shard group's collectives as at dp 4."""
    rank, _ = _rank(dp=8, dp_shard=4)
    assert (rank["weights"], rank["gradients"], rank["optimizer"]) == (2 * 8_868, 4 * 8_868, 12 * 4_434)
    assert rank["communication"]["dp"] == {"all_gather": 2 * 2 * PARAMS, "reduce_scatter": 4 * PARAMS}
    assert rank["communication"]["dp_replicate"] == {"reduce_scatter": 4 * 8_868, "all_gather": 2 * 8_868}
    bf16 = _rank(dp=8, dp_shard=4, grad_reduce_dtype="bf16")[0]  # megatron_fsdp_main_grads_dtype bf16
    assert bf16["gradients"] == 2 * 8_868 and bf16["communication"]["dp_replicate"]["reduce_scatter"] == 2 * 8_868


def test_megatron_fsdp_casts_no_gradient_at_the_step():
    """With bf16 main gradients Megatron-Core's distributed optimizer keeps an fp32 copy of the
    gradients it updates (4 bytes each); under Megatron-FSDP it reads the shard as it is."""
    distributed = ParallelEstimate(TINY, BF16, Layout(framework="megatron", zero=1, dp=4, grad_reduce_dtype="bf16"))
    assert distributed.per_stage[0]["gradients"] == 2 * PARAMS + 4 * 8_868
    assert _rank(dp=4, grad_reduce_dtype="bf16")[0]["gradients"] == 2 * 8_868


def test_experts_shard_over_their_inner_group():
    """Nemotron 3 Ultra's recipe at 16 ranks instead of 256: TP 2 with SP, EP 8 folded (etp 1),
    dp 8 as 2 replicas of 4. The experts' data-parallel group is 2 x 8 / 8 = 2 ranks, 1 inside each
    replica: a rank's E / 8 experts whole, their optimizer state over the 2."""
    layout = Layout(framework="megatron", zero=3, tp=2, sp=True, dp=8, dp_shard=4, ep=8, etp=1)
    assert (layout.expert_data_parallel, layout.replicas, layout.expert_shard_ranks, layout.optimizer_ranks) == (2, 2, 1, 8)
    with pytest.raises(ConfigError, match="which must divide it"):
        Layout(framework="megatron", zero=3, tp=2, sp=True, dp=8, dp_shard=2, ep=8, etp=1)


@pytest.mark.parametrize("layout, words", [
    (dict(dp=4, pp=2), "with pipeline parallelism is not modelled"),
    (dict(dp=4, precision_aware_optimizer="fp32"), "under Megatron-FSDP, --zero 3, it is not modelled"),
    (dict(dp=4, zero=1, dp_shard=2), "--zero 3 is Megatron-FSDP, whose HFSDP --dp-shard models"),
])
def test_refusals(layout, words):
    with pytest.raises(ConfigError, match=words):
        Layout(**{"framework": "megatron", "zero": 3, **layout})


def test_the_cli_runs_megatron_fsdp(capsys):
    assert cli.main(["estimate", "--model", "llama2-7b", "--framework", "megatron", "--zero", "3", "--dp", "8",
                     "--dp-shard", "4", "--seq-len", "2048", "--json"]) == 0
    layout = json.loads(capsys.readouterr().out)["parallel"]["layout"]
    assert (layout["zero"], layout["dp_shard"], layout["dp_replicate"]) == (3, 4, 2)
    assert cli.main(["estimate", "--model", "llama2-7b", "--framework", "megatron", "--zero", "3", "--dp", "8",
                     "--dp-shard", "4", "--seq-len", "2048"]) == 0
    assert "(Megatron-FSDP HFSDP: 2 replicas of shard groups of 4)" in capsys.readouterr().out
    assert cli.main(["estimate", "--model", "llama2-7b", "--framework", "megatron", "--zero", "2", "--dp", "8"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "megatron supports --zero 0, 1, 3" in err


def test_hfsdp_with_experts_updates_the_dense_optimizer_shard_over_all_of_dp():
    """The optimizer pass under Megatron-FSDP's HFSDP beside expert parallelism: the dense
    parameters' master shard is over all of dp (Layout.optimizer_ranks, 8), not the shard group
    (4), and the rank's experts over their expert-data-parallel group; so the pass updates the
    same elements as plain Megatron-FSDP over the same dp (a merge of session 24 once divided by
    the shard group)."""
    from costmodel.hardware import load_hardware
    from costmodel.layout.time import StepTime
    from costmodel.presets import load_preset

    cfg = load_preset("qwen3-8b").replace(name="odd-moe", n_experts=8, top_k=2, d_expert=96, n_decoder_layers=2)
    plain, hfsdp = (ParallelEstimate(cfg, BF16, Layout(framework="megatron", zero=3, tp=2, sp=True, dp=8, ep=8, etp=1,
                                                        dp_shard=shard)) for shard in (None, 4))
    assert (plain.layout.optimizer_ranks, hfsdp.layout.optimizer_ranks, hfsdp.layout.shard_ranks) == (8, 8, 4)
    hw = load_hardware("h100-sxm")
    stage = plain.stages[0]
    assert StepTime(hfsdp, hw).optimizer(stage) == StepTime(plain, hw).optimizer(stage) > 0
