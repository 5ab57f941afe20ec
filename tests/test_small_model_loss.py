"""The loss over the vocabulary in a training step (wt31_small, session 31; validate/FINDINGS.md "Small
models' training rows (wt31_small, session 31)"): every loss reads each logit forward and writes each
logit's gradient backward, so a loss the model does not time as Megatron's passes moves at least a
fused kernel's traffic (blocks/head.py fused_loss_bytes: FlashAttention's Triton cross-entropy,
e bytes a logit forward, 2 e backward); nanotron's sharded loss is Megatron's passes over fp32
logits (nanotron c2528430 models/llama.py Loss.forward, parallel/tensor_parallel/functional.py)."""

from __future__ import annotations

import pytest

from reports.published_runs import other_runs_data, train_run, train_setup

NANOTRON_1B_128 = "nanotron-playbook llama-1.34b dp64 tp2 pp1 gas1 mbs4 zero0 128xh100"
NANOGPT = "nanogpt gpt2-124m ddp compile 8xa100-40gb"


def _loss_kernel(run_id: str):
    from costmodel.kernel_time import Pointwise
    from costmodel.layout.kernel_step import rank_kernels

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    estimate, _, _ = train_setup(run, data["sources"][run_id.split()[0]])
    head = [k for key, _, _, kernels in rank_kernels(estimate, True, False) if key == "head" for k in kernels]
    return [k for k in head if isinstance(k, Pointwise)][-1]


def test_a_fused_loss_reads_the_logits_and_writes_their_gradient():
    # nanoGPT (torch.compile's loss: not Megatron's passes): a micro-batch of 12 x 1,024 tokens over
    # the 50,304-word vocabulary in bf16: 2 bytes a logit forward, 4 backward (a lower bound)
    logits = 12 * 1024 * 50304
    kernel = _loss_kernel(NANOGPT)
    assert (kernel.bytes, kernel.backward_bytes) == (2 * logits, 4 * logits)


def test_nanotron_runs_megatrons_loss_passes_on_its_fp32_logits():
    # 4 sequences of 4,096 tokens over a TP 2 rank's half of the 131,072-word vocabulary: the cast
    # (2 + 4), max 4, the subtraction 8, exp 8, sum 4, div_ 8 = 38 bytes a logit; mul_ 8 and the
    # cast's backward 4 + 2 = 14 (blocks/head.py vocab_parallel_loss_bytes)
    data = other_runs_data()
    assert data["sources"]["nanotron-playbook"]["unfused_loss"] is True
    logits = 4 * 4096 * (131072 // 2)
    kernel = _loss_kernel(NANOTRON_1B_128)
    assert (kernel.bytes, kernel.backward_bytes) == (38 * logits, 14 * logits)


def test_the_nanotron_row_with_its_loss():
    # published 291.48 TFLOP/s a GPU (MFU over 989.4); the kernel model 427.6 (1.47x) before its loss
    # was timed, 384.5 (1.32x) with nanotron's passes over the fp32 logits
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == NANOTRON_1B_128)
    assert train_run(run, data["sources"]["nanotron-playbook"], "kernels") == pytest.approx(384.5, rel=0.005)
