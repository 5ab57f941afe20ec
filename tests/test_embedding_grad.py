"""The embedding's dense weight gradient each training micro-batch (costmodel/embedding_grad.py): torch's
embedding backward writes a zeroed (rows x hidden) table gradient (Embedding.cu embedding_dense_backward_cuda,
EmbeddingBackwardKernel.cu: at::zeros({num_weights, hidden})), and Megatron-Core's DDP hook adds it into the
fp32 main_grad buffer (distributed_data_parallel.py line 224 at baf94af3: main_grad.add_(grad)): e + e + 4 + 4
bytes a table element on Megatron, e elsewhere, on the first pipeline stage only."""

from __future__ import annotations

import dataclasses

import pytest

from costmodel.layout import ParallelEstimate
from costmodel.embedding_grad import dense_grad_bytes
from tests.optimizer_step_runs import row_setup, row_steps

GPT_7B = ("megatron-core-r0.8.0 gpt-7.1b 96xh100", "megatron-core-r0.8.0")
TITAN_8B = ("torchtitan llama3.1-8b fsdp 8 GPUs", "torchtitan")
NANOTRON = ("nanotron-playbook llama-1.34b dp128 tp2 pp2 gas1 mbs2 zero1 512xh100", "nanotron-playbook")


def test_megatron_zero_and_main_grad_add():
    """TP 2: the vocabulary's shard 65,536 x 4,096 = 268,435,456 and the learned positions 4,096 x 4,096 =
    16,777,216 (both nn.Embedding lookups), 285,212,672 elements at bf16 zero 2 + add's read 2 + fp32 main_grad
    read 4 and write 4 = 12 bytes: 3,422,552,064 bytes a micro-batch; 4 micro-batches at 0.8 x 3.35 TB/s."""
    estimate, _, _ = row_setup(*GPT_7B)
    assert estimate.part("embedding", "params") == 285_212_672
    assert dense_grad_bytes(estimate, estimate.stages[0]) == 3_422_552_064
    step = row_steps(*GPT_7B, ("megatron-lm",))["megatron-lm"]
    assert step["gradient_accumulation_seconds"] == pytest.approx(4 * 3_422_552_064 / 2.68e12, rel=1e-9)


def test_fsdp2_pays_the_zero_only():
    """torchtitan's FSDP2 8B: the unsharded 128,256 x 4,096 table zeroed in bf16, 1,050,673,152 bytes a
    micro-batch at the row's 0.8 x 2.4 TB/s (0.547 ms); no main_grad add (FSDP2's own reduce-scatter path)."""
    estimate, _, _ = row_setup(*TITAN_8B)
    assert dense_grad_bytes(estimate, estimate.stages[0]) == 128_256 * 4_096 * 2
    step = row_steps(*TITAN_8B, ("fused",))["fused"]
    assert step["gradient_accumulation_seconds"] == pytest.approx(1_050_673_152 / 1.92e12, rel=1e-9)


def test_autocast_zeroes_fp32():
    """Under torch.autocast the parameters, so the table's gradient, are fp32: 4 bytes an element."""
    estimate, _, _ = row_setup(*TITAN_8B)
    assert dense_grad_bytes(estimate, estimate.stages[0], autocast=True) == 128_256 * 4_096 * 4


def test_first_stage_only_and_other_zero_optimizers():
    """nanotron's own ZeRO-1 (not Megatron-Core's buffers) on PP 2: the first stage zeroes its 65,536 x 2,048
    vocabulary shard (131,072 over TP 2) in bf16, the last stage holds no embedding."""
    estimate, _, _ = row_setup(*NANOTRON)
    assert estimate.layout.zero_optimizer == "nanotron"
    first, last = estimate.stages[0], estimate.stages[-1]
    assert dense_grad_bytes(estimate, first) == 134_217_728 * 2
    assert dense_grad_bytes(estimate, last) == 0


def test_megatron_bf16_buffer():
    """A bf16 gradient buffer (--grad-reduce-dtype bf16) halves the add's main_grad bytes: 2 + 2 + 2 + 2."""
    estimate, _, _ = row_setup(*GPT_7B)
    layout = dataclasses.replace(estimate.layout, grad_reduce_dtype="bf16")
    bf16 = ParallelEstimate(estimate.cfg, estimate.workload, layout)
    assert dense_grad_bytes(bf16, bf16.stages[0]) == 285_212_672 * 8
