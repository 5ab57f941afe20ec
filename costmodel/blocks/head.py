"""Blocks after the last layer: the LM head, Gemma 2's logit soft-capping, BERT's pooler, and
the losses (cross-entropy over the logits, or the sum of the outputs).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import symbols as S
from ..terms import FP32, INDEX, Expr, dtype_bytes, elementwise_bytes, if_batch_of_one, unless_fp32
from .base import (Backward, BackwardStep, Block, Cost, Profile, Tensor, linear_bytes, linear_flops, make_cost, weight_and_bias,
                   weight_matrix)


@dataclass(frozen=True)
class LMHead(Block):
    """Logits over the vocabulary for its tokens (every position, or the last of each sequence in
    generate's prefill: Profile.logits_to_keep): d -> V (weight tied or its own)."""

    tokens: Expr
    owns_weight: bool
    bias: bool
    scaled_input: bool = False  # the decoder output times a constant first (T5 with a tied head: d**-0.5)
    returns_logits: bool = False  # inference: the caller holds the logits
    width: Expr = S.d  # its input's width (OPT-350m's head reads the d_e-wide projection out)
    quantized: bool = False  # its matrix in the weight format (gpt-fast's, torchao's; quantization.py)
    title = "output projection to the vocabulary"

    def cost(self) -> Cost:
        forward, backward = linear_flops(self.tokens, self.width, S.V)
        tensors = ([Tensor(S.V, self.width)] if self.owns_weight else []) + ([S.V] if self.bias else [])
        return make_cost(
            tensors=tensors,
            matrices=[weight_matrix(self.width, S.V)] if self.quantized else [],
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=[("mul", self.tokens * S.d if self.scaled_input else 0)],
            bytes_matmul=linear_bytes(self.tokens, self.width, S.V),  # the weight is read, tied or not
            result_bytes=S.e * self.tokens * S.V if self.returns_logits else 0,
        )


@dataclass(frozen=True)
class LogitSoftcap(Block):
    """Gemma 2's final soft-capping, logits -> cap * tanh(logits / cap): two multiplies and a tanh
    over the logits. It keeps tanh's result, in the activation dtype (the loss upcasts after). Its
    own block because tensor parallelism runs it on the gathered logits unless the loss is
    vocabulary-parallel (measured: FINDINGS 10.7)."""

    tokens: Expr
    title = "logit soft-capping"

    def cost(self) -> Cost:
        logits = self.tokens * S.V
        return make_cost(
            elements=[("mul", 2 * logits), ("tanh", logits)],
            saved_bytes=S.e * logits,
            bytes_other=3 * elementwise_bytes(logits),
        )


@dataclass(frozen=True)
class LogitScale(Block):
    """Granite's logits / logits_scaling: one pointwise op over the logits by a Python number,
    which keeps nothing for backward (the loss keeps what it reads)."""

    tokens: Expr
    title = "logit scaling"

    def cost(self) -> Cost:
        logits = self.tokens * S.V
        return make_cost(elements=[("mul", logits)], bytes_other=elementwise_bytes(logits))


@dataclass(frozen=True)
class Pooler(Block):
    """BERT's pooler: dense d -> d with bias and tanh on the first ([CLS]) token of each sequence
    of the last hidden state (tokens x d)."""

    tokens: Expr = S.b * S.n
    title = "pooler (CLS head)"

    def cost(self) -> Cost:
        forward, backward = linear_flops(S.b, S.d, S.d)
        # The dense layer keeps hidden[:, 0], a view of the whole last hidden state: the last
        # norm's output, counted there. tanh keeps its output.
        saved = S.e * S.b * S.d
        return make_cost(
            tensors=weight_and_bias(S.d, S.d, True),
            flops_matmul=forward,
            flops_matmul_backward=backward,
            elements=[("tanh", S.b * S.d)],
            saved_bytes=saved,
            bytes_matmul=linear_bytes(S.b, S.d, S.d),
            bytes_other=elementwise_bytes(S.b * S.d),
        )

    def backward(self) -> Backward:
        """tanh's backward (b x d), after which its kept output goes; the dense layer's input
        gradient and weight gradients, after which tanh's gradient goes; select's backward (zeros
        of the last hidden state's shape, b x len x d, the first token's rows filled) summed with
        the loss's gradient of the last hidden state into a new tensor, after which the dense
        layer's input gradient and select's output go. The last norm's output, which the dense
        layer kept through its view, goes with the dense layer's step (that norm's output_kept)."""
        pooled, hidden = S.e * S.b * S.d, S.e * self.tokens * S.d
        return Backward(steps=(BackwardStep(pooled, freed=pooled),
                               BackwardStep(pooled, params=self.cost().params, freed=pooled),
                               BackwardStep(2 * hidden, freed=pooled + hidden)),
                        grad_input=hidden, input_step=1)


@dataclass(frozen=True)
class CrossEntropy(Block):
    """The training loss over the logits: log-softmax and the negative log-likelihood.

    Kept for backward: the log-softmax output and a scalar total weight in the loss dtype
    (facts.loss_dtype), the int64 targets (shifted labels: one more id at b = 1). The caller passes
    and holds the labels and holds the scalar loss. When its backward starts it holds the gradient
    of the log-softmax output and of the logits at once (2 * tokens * V elements in the loss
    dtype), and has freed the two int64 target tensors (measured with MemTracker: FINDINGS 7).
    """

    tokens: Expr
    profile: Profile = Profile()
    title = "cross-entropy loss"

    def cost(self) -> Cost:
        facts = self.profile.facts
        width = dtype_bytes(facts.loss_dtype)
        saved = width * (self.tokens * S.V + 1) + INDEX * self.tokens
        if facts.shifted_labels:
            saved += if_batch_of_one(INDEX)
        # the passes' traffic where the model's code calls Megatron's loss unfused (facts.loss_passes)
        # and the framework runs it (Profile.framework_loss), or the layout says its code calls it
        # whatever the family ("vocab_parallel_unfused": layout/parts.layout_loss); else a fused
        # loss kernel's, the least any code moves (fused_loss_bytes)
        loss = self.profile.framework_loss
        megatron = loss == "vocab_parallel_unfused" or facts.loss_passes == loss == "vocab_parallel"
        forward, backward = (vocab_parallel_loss_bytes if megatron else fused_loss_bytes)(self.tokens * S.V)
        return make_cost(
            elements=[("log_softmax", self.tokens * S.V)],
            bytes_other=forward,
            backward_bytes_other=backward,
            saved_bytes=saved,
            input_bytes=INDEX * self.tokens,
            result_bytes=width,
            backward_transient_bytes=2 * self.tokens * S.V * width - 2 * INDEX * self.tokens,
        )


def vocab_parallel_loss_bytes(logits: Expr) -> tuple[Expr, Expr]:
    """Traffic of Megatron-LM's vocabulary-parallel cross-entropy over a rank's `logits` elements
    (its tokens x its share of V), forward and backward: gpt_model.py passes output.float(), and
    mpu/cross_entropy.py's _VocabParallelCrossEntropy makes one pass per op over the fp32 copy
    (the gathers of the target logits and the per-token reductions' outputs are a token's, not a
    logit's: left out).
      forward   the cast to fp32 (read e, write 4; none in an fp32 model, where .float() is the
                tensor itself), max (read 4), sub_ (read 4, write 4), exp(out=) (read 4, write 4),
                sum (read 4), div_ (read 4, write 4): e + 36 bytes a logit (38 in fp16/bf16);
      backward  grad_input.mul_ on the kept softmax (read 4, write 4), the cast's backward to the
                logits' dtype (read 4, write e; none in fp32): 12 + e bytes a logit (14)."""
    cast = unless_fp32(S.e + FP32)
    forward = cast + FP32 + 2 * FP32 + 2 * FP32 + FP32 + 2 * FP32
    backward = 2 * FP32 + cast
    return forward * logits, backward * logits


def fused_loss_bytes(logits: Expr) -> tuple[Expr, Expr]:
    """Traffic of a fused cross-entropy over `logits` elements (in the activation dtype, as the
    head's GEMM writes them), forward and backward: the least any loss code moves, since the loss
    reads every logit and its gradient writes one value per logit. FlashAttention's Triton loss
    (Dao-AILab/flash-attention flash_attn/ops/triton/cross_entropy.py at 058ad35a, the fused loss
    TinyLlama and llm-foundry call): cross_entropy_fwd_kernel reads each row of logits and writes a
    loss and a log-sum-exp per token; CrossEntropyLoss.backward saves the logits and
    cross_entropy_bwd_kernel reads them again and writes dlogits (a token's values left out):
      forward   e bytes a logit; backward 2 e bytes a logit.
    An unfused loss (torch's F.cross_entropy over logits.float(), torch.compile's, which keeps the
    normalized logits) moves more: not counted here, this being a lower bound."""
    return S.e * logits, 2 * S.e * logits


@dataclass(frozen=True)
class SumLoss(Block):
    """A model without an LM head trained on the sum of its outputs (how validate/ trains
    BertModel and bare encoders): a scalar in the activation dtype, nothing kept."""

    title = "sum of the outputs (loss)"

    def cost(self) -> Cost:
        return make_cost(result_bytes=S.e)

    def backward(self) -> Backward:
        """The loss's gradient, a scalar (ones_like), live through the walk; the outputs'
        gradients are views of it (expand)."""
        return Backward(steps=(BackwardStep(S.e),))
