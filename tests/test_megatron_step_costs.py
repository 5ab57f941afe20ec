"""What Megatron-LM's code pays in a training step beyond the layers' kernels, as the Narayanan et
al. 2021 rows ran it (issue 18): the vocabulary-parallel cross-entropy's passes over the fp32
logits, full recomputation rerunning the layers only (not the embedding, final norm, head or
loss), and the fp16 optimizer's five passes. Exact numbers on a deliberately odd GPT, then on the
published rows."""

from __future__ import annotations

import pytest

from costmodel.blocks import CrossEntropy
from costmodel.config import ModelConfig, Workload
from costmodel.evaluate import exact, values
from costmodel.hardware import load_hardware
from costmodel.kernel_time import KernelTimer, Pointwise, kernels_seconds
from costmodel.layout import ParallelEstimate
from costmodel.layout.kernel_step import KernelStepTime, rank_kernels
from costmodel.layout.time import StepTime
from costmodel.precision import megatron_fp16_step_bytes
from costmodel.tree import CostModel, profile_for
from reports.published_runs import korthikanti_runs, narayanan_runs

ODD_GPT = ModelConfig(name="odd-gpt", family="gpt", vocab_size=99, d_model=40, n_heads=5, d_ff=148,
                      n_decoder_layers=3, max_positions=64, position="learned", norm="layernorm",
                      activation="gelu", dropout=0.1)


def _loss(impl: str, dtype: str, recompute: str = "none", framework_loss: str | None = "vocab_parallel"):
    workload = Workload(seq_len=37, batch=3, dtype=dtype, impl=impl, recompute=recompute)
    tree = CostModel(ODD_GPT, profile_for(ODD_GPT, workload, framework_loss=framework_loss), phase="train")
    (loss,) = [leaf for leaf in tree.leaves if isinstance(leaf.block, CrossEntropy)]
    return loss, values(ODD_GPT, workload)


def test_megatron_cross_entropy_moves_its_passes_over_the_fp32_logits():
    """mpu/cross_entropy.py on output.float() (gpt_model.py): forward cast 2 + 4, max 4, sub_ 8,
    exp 8, sum 4, div_ 8 = 38 bytes a logit; backward mul_ 8 and the cast back 4 + 2 = 14."""
    logits = 3 * 37 * 99
    loss, subs = _loss("megatron", "fp16")
    assert exact(loss.cost.bytes_other, subs) == 38 * logits
    assert exact(loss.cost.bytes_other_backward, subs) == 14 * logits  # not the convention's 76
    # In an fp32 model .float() is the tensor itself: no cast either way.
    loss, subs = _loss("megatron", "fp32")
    assert exact(loss.cost.bytes_other, subs) == 32 * logits
    assert exact(loss.cost.bytes_other_backward, subs) == 8 * logits
    # Other code (another model's code, or Megatron's GPT under a framework that leaves the loss to
    # the model: DeepSpeed, FSDP2, the FlashAttention-2 rows' flash_attn fused loss, or on one device)
    # moves a fused loss kernel's traffic, the least any code moves (blocks/head.py fused_loss_bytes):
    # the bf16 logits read forward (2 bytes a logit), read again and their gradient written backward (4).
    for impl, framework_loss in (("hf", "vocab_parallel"), ("megatron", None)):
        loss, subs = _loss(impl, "bf16", framework_loss=framework_loss)
        assert exact(loss.cost.bytes_other, subs) == 2 * logits
        assert exact(loss.cost.bytes_other_backward, subs) == 4 * logits


def test_a_stated_backward_is_timed_as_stated():
    timer = KernelTimer(load_hardware("a100-80gb"), "fp16", "eager")
    stated = Pointwise(38_000_000.0, 1_000.0, backward_bytes=14_000_000.0)
    convention = Pointwise(38_000_000.0, 1_000.0)
    assert kernels_seconds([stated], timer, training=True) == pytest.approx(52_000_000 / timer.bandwidth, rel=1e-12)
    assert kernels_seconds([convention], timer, training=True) == pytest.approx(3 * 38_000_000 / timer.bandwidth,
                                                                                rel=1e-12)


def test_full_recomputation_reruns_the_layers_only():
    """Megatron-LM's _checkpointed_forward wraps the transformer layers; the embedding, the final
    norm, the head and the loss run once (as the memory model keeps their saved tensors)."""
    loss, _ = _loss("megatron", "fp16", recompute="full")
    assert loss.rerun is None
    workload = Workload(seq_len=37, batch=3, dtype="fp16", impl="megatron", recompute="full")
    tree = CostModel(ODD_GPT, profile_for(ODD_GPT, workload), phase="train")
    rerun = {leaf.path for leaf in tree.leaves if leaf.rerun is not None}
    assert rerun == {leaf.path for leaf in tree.leaves if leaf.checkpointed}
    assert "head.lm_head" not in rerun and "decoder.final_norm" not in rerun
    assert "decoder.layer.ffn.mlp" in rerun


def test_narayanan_rows_execute_their_equation_3_exactly():
    """Narayanan et al. 2021, Eq. (3): F = 96 B s l h^2 (1 + s / 6h + V / 16 l h), the layers'
    matmuls four times (forward, recomputed forward, backward) and the head's three. Our executed
    and recomputed FLOPs of every row of Table 1 are that integer exactly (they were 0.03% to 1.6%
    more while the head and the loss were counted as recomputed)."""
    for row, cfg, workload, layout, _ in narayanan_runs():
        batch, s, layers, h, vocabulary = row[7], 2048, row[3], row[2], 51200
        equation_3 = 96 * batch * s * layers * h**2 + 16 * batch * s**2 * layers * h + 6 * batch * s * h * vocabulary
        numbers = ParallelEstimate(cfg, workload, layout).numbers
        ours = (numbers["executed_flops"] + numbers["recomputed_flops"]) * layout.microbatches * layout.dp
        assert ours == equation_3, row[0]


def test_megatron_fp16_optimizer_moves_its_five_passes():
    """FP16OptimizerWithFP16Params.step: copy the fp16 gradients to fp32 (2 + 4), unscale and
    check (4 + 4), the norm for clipping (4), FusedAdam (16 + 12), copy the parameters back
    (4 + 2): 52 bytes a parameter, where one fused pass would move 30."""
    assert megatron_fp16_step_bytes(2) == 52
    hardware = load_hardware("a100-80gb")
    row, cfg, workload, layout, overlap = next(run for run in narayanan_runs() if run[0][0] == 7.5)
    estimate = ParallelEstimate(cfg, workload, layout)
    step_time = StepTime(estimate, hardware, overlap=overlap)
    stage = estimate.stages[0]
    params = step_time.rank_params(stage)
    assert estimate.numbers["step_traffic"] == 30
    assert step_time.optimizer(stage) == pytest.approx(params * 52 / step_time.bytes_per_s, rel=1e-12)
    # bf16 (Korthikanti et al.'s rows) keeps the one pass of its precision: 2 + 4 + 4 + 8, + 2 + 12
    row, key, cfg, workload, layout = next(iter(korthikanti_runs()))
    estimate = ParallelEstimate(cfg, workload, layout)
    step_time = StepTime(estimate, hardware)
    stage = estimate.stages[0]
    assert step_time.optimizer(stage) == pytest.approx(step_time.rank_params(stage) * 32 / step_time.bytes_per_s,
                                                       rel=1e-12)


def test_the_loss_runs_on_the_ranks_vocabulary_shard():
    """The 7.5B row (tp 4): the loss leaf's kernel moves 38 and 14 bytes a logit of the rank's
    32,768 tokens x 12,800 vocabulary entries."""
    hardware = load_hardware("a100-80gb")
    row, cfg, workload, layout, overlap = next(run for run in narayanan_runs() if run[0][0] == 7.5)
    estimate = ParallelEstimate(cfg, workload, layout)
    timer = KernelStepTime(estimate, hardware, overlap=overlap).timer
    logits = 16 * 2048 * 51200 // 4
    losses = [kernels for key, _, _, kernels in rank_kernels(estimate, timer.fused_attention, timer.compiled)
              if key == "head" and kernels and isinstance(kernels[0], Pointwise)]
    assert [(k.bytes, k.backward_bytes) for k in losses[0]] == [(38 * logits, 14 * logits)]
