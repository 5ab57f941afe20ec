"""Attention kernels, one object each: what the attention core keeps for backward, and how it moves.

The attention core is three blocks of the cost tree: the scores (Q K^T), the softmax and the
weighted sum of the values. Their forward FLOPs are the same whatever runs them; what a kernel
decides is what they keep for backward, the backward's FLOPs and whether the n_q x n_k matrix
goes through memory. Each kernel below owns those formulas; the blocks ask the kernel.

  eager   the Python code: Q and K^T copies, the probabilities (softmax dtype), V; writes scores
  flash   a fused kernel: q, k, v (h_kv heads), its output and an fp32 log-sum-exp per query row;
          its backward recomputes Q K^T (torch's sdpa FLOP formula counts it). Latent attention
          whose up-projections are recomputed (recompute "deepseek") keeps no q, k, v; DeepSeek-V3's
          FP8 activations keep the output in E5M6 (Profile.fp8_activations)
  sdpa    torch's scaled_dot_product_attention choosing that flash kernel, as transformers calls
          it: flash's tensors, plus a mask the call hands it (a sliding-window layer's, with K/V
          repeated to h heads; Falcon's on every layer) and, where the query reaches it
          contiguous, a copy of its output for the output projection (facts sdpa_mask,
          sdpa_query_contiguous)
  math    sdpa's fallback on the CPU (dropout, a position bias that needs gradients, or value
          heads of another width than the query/key heads: latent attention): q, k, v (h heads),
          softmax, mask and dropped probabilities all in fp32
  recomputed(k)  selective recomputation (Korthikanti et al. 2022) around kernel k: the core is
          rerun in backward, so it keeps what a fused kernel keeps; FLOPs and traffic are k's

ATTENTIONS maps the workload's --attention to the kernel that runs: "sdpa" is the sdpa kernel
unless dropout runs, a position bias needs gradients or the value heads' width is not the query and
key heads' (the math path). `core` below is the block asking (blocks.AttentionCore): lengths,
heads kept, profile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from . import symbols as S
import sympy as sp

from .terms import FP32, ZERO, Expr, dtype_bytes, if_batch_of_one, tiled_bytes, unless_fp32


@dataclass(frozen=True)
class Kernel:
    """The eager kernel; the others override what differs."""

    name: str = "eager"
    dense: bool = True  # the n_q x n_k scores go through memory (traffic of every pointwise op)
    keeps_output: bool = False  # its saved output is the output projection's input
    recomputes_core: bool = False  # selective recomputation reruns the core in backward

    @property
    def saves_as(self) -> str:
        """Whose saved bytes apply (a recomputed core keeps what a fused kernel keeps)."""
        return self.name

    def keeps_projection_input(self, core: Any) -> bool:
        """Whether the output it keeps is the output projection's input (no copy between)."""
        return self.keeps_output

    def scores_backward(self, forward: Expr) -> Expr:
        """Backward FLOPs of Q K^T: one product for each input's gradient."""
        return 2 * forward

    def scores_saved(self, core: Any) -> Expr:
        """Q and K^T copies (GQA keys repeated to the heads kept), in fp32 where the code casts
        them first (facts.eager_scores_fp32, GPT-J)."""
        size = FP32 if core.profile.facts.eager_scores_fp32 else S.e
        return size * S.b * core.qk_dim * (S.h * core.q_len + core.own_kv_heads(core.kv_heads_kept) * core.k_len)

    def query_view_saved(self, extra: Expr) -> Expr:
        """A projection's whole output, kept when the query (or value) the kernel keeps is a view
        of it: at b = 1 the eager reshape makes no copy."""
        return if_batch_of_one(extra)

    def value_view_saved(self, extra: Expr) -> Expr:
        """The same for a value the kernel keeps as a view of a wider projection output (latent
        attention's V, a slice of kv_b_proj's output with the keys' non-rotated part)."""
        return self.query_view_saved(extra)

    def softmax_saved(self, core: Any) -> Expr:
        """The probabilities in the softmax's dtype, and dropout's mask when dropout runs."""
        facts, pairs = core.profile.facts, core.pairs
        saved = dtype_bytes(facts.softmax_dtype) * pairs
        if core.profile.probs_dropout:
            saved += core.profile.mask_bytes * pairs
        return saved

    def scores_live_no_grad(self, core: Any) -> Expr:
        """The n_q x n_k tensors an eager no-grad forward holds at once (its largest moment in the
        scores and softmax): the product and its scaled (or masked) copy, or the softmax's input and
        output, two in the activation dtype; where the class takes the softmax in fp32 below fp32,
        the masked scores, their fp32 cast and the fp32 output. Measured to the byte on the CPU
        (tests/test_inference_peak.py: Llama 10 B a pair in bf16, GPT-2 4; 8 in fp32)."""
        if not self.dense:
            return ZERO
        if core.profile.facts.softmax_dtype == "activation":
            return 2 * S.e * core.pairs
        return (S.e + dtype_bytes(core.profile.facts.softmax_dtype) + unless_fp32(FP32)) * core.pairs

    def weighted_sum_saved(self, core: Any) -> Expr:
        """V (heads kept) and the probabilities in the activation dtype: dropout's output, the
        softmax output itself, or the cast of an fp32 softmax output."""
        facts, pairs = core.profile.facts, core.pairs
        values = S.e * S.b * core.own_kv_heads(core.kv_heads_kept) * core.k_len * core.value_dim
        if core.profile.probs_dropout:
            probs = S.e * pairs
        elif facts.softmax_dtype == "activation":
            probs = ZERO
        else:
            probs = unless_fp32(S.e * pairs)
        return values + probs


@dataclass(frozen=True)
class Flash(Kernel):
    name: str = "flash"
    dense: bool = False
    keeps_output: bool = True

    def scores_backward(self, forward: Expr) -> Expr:
        return 3 * forward  # Q K^T is recomputed in backward

    def scores_saved(self, core: Any) -> Expr:
        if core.inputs_rebuilt:  # q and k rebuilt by the recomputed up-projections
            return ZERO
        return S.e * S.b * core.qk_dim * (S.h * core.q_len + core.own_kv_heads(self.kv_heads_saved(core)) * core.k_len)

    def kv_heads_saved(self, core: Any) -> Expr:
        """Heads of the K and V it keeps: those that reach it (h_kv: grouped heads natively)."""
        return core.kv_heads

    def query_view_saved(self, extra: Expr) -> Expr:
        return extra

    def softmax_saved(self, core: Any) -> Expr:
        return FP32 * S.b * S.h * core.q_len  # the log-sum-exp per query row

    def weighted_sum_saved(self, core: Any) -> Expr:
        heads = core.own_kv_heads(self.kv_heads_saved(core))
        values = ZERO if core.inputs_rebuilt else S.e * S.b * core.value_dim * heads * core.k_len
        return values + self.output_saved(core)  # v (unless rebuilt) and out

    def output_saved(self, core: Any) -> Expr:
        """The kernel's output (b, h, q_len, value_dim), the output projection's input; with
        DeepSeek-V3's FP8 activations in E5M6 (12 bits) tiles."""
        if core.profile.fp8_activations:
            return tiled_bytes(S.b * core.q_len, S.h * core.value_dim, bits=12)
        return S.e * S.b * core.value_dim * S.h * core.q_len


@dataclass(frozen=True)
class Math(Kernel):
    name: str = "math"
    dense: bool = False  # modelled as fused traffic, as sdpa is (not measured)

    def scores_saved(self, core: Any) -> Expr:
        return FP32 * S.b * S.h * core.qk_dim * (core.q_len + core.k_len)

    def query_view_saved(self, extra: Expr) -> Expr:
        return ZERO  # the fp32 path copies q: no view is kept

    def value_view_saved(self, extra: Expr) -> Expr:
        """V goes into its product as it comes: a copy in fp32 where the activations are narrower
        (the CPU path upcasts), else reshaped to (b h, n_k, width), a view only for one sequence
        (measured on latent attention, whose V is a slice of kv_b_proj's output)."""
        return sp.Piecewise((if_batch_of_one(extra), sp.Eq(S.e, FP32)), (ZERO, True))

    def softmax_saved(self, core: Any) -> Expr:
        saved = FP32 * core.pairs * (2 if core.profile.probs_dropout else 1)  # softmax and mask in fp32
        if core.profile.facts.sdpa_causal_bool_mask and core.causal:
            saved += core.q_len * core.k_len
        return saved

    def weighted_sum_saved(self, core: Any) -> Expr:
        dropped = FP32 * core.pairs if core.profile.probs_dropout else ZERO
        return FP32 * S.b * S.h * core.k_len * core.value_dim + dropped


FLASH = Flash()


@dataclass(frozen=True)
class Sdpa(Flash):
    """torch's scaled_dot_product_attention on its (CPU) flash kernel, called as transformers 5.24's
    sdpa_attention_forward calls it. The kernel keeps what flash keeps, and what the call adds
    (measured op by op, validate/FINDINGS.md "sdpa's saved bytes"):

    - a mask (facts.sdpa_mask): transformers lets the kernel mask causally (is_causal, no mask)
      unless a sliding-window layer's keys reach its window (masking_utils._ignore_causal_mask_sdpa
      skips the mask only while kv_length < window) or the code always builds one (Falcon:
      create_causal_mask(allow_is_causal_skip=False)). The kernel converts the bool mask to the
      query's dtype and keeps that, (b, 1, n_q, n_k), each layer. With a window's mask, grouped
      K/V reach the kernel through repeat_kv (use_gqa_in_sdpa wants no mask): h heads kept, not
      h_kv (one KV head's repeat is a view of it), each copied by a clone (repeat_copy_bytes).
      A single query (a decode step) is packed instead (sdpa_attention_forward's pack_gqa: the
      query (b, h, 1, d) viewed as (b, h_kv, h / h_kv, d)): h_kv heads, no copy, whatever the mask.
    - the output's layout follows the query's (torch's kernel and its meta function allocate it
      like the query): a query made by torch.cat (partial rotary) is contiguous in
      (b, h, n, d_h), so the transpose back to (b, n, h d_h) copies, and the output projection
      keeps that copy (facts.sdpa_query_contiguous); a query transposed from the projection's
      (b, n, h, d_h) output gives an output whose transpose is a view, the projection's input.
    """

    @staticmethod
    def mask_kind(core: Any) -> str | None:
        """The mask transformers hands this core's sdpa call: "always" (every causal layer of a
        family that always builds one), "window" (a sliding-window layer's, once its keys reach
        the window: k_len >= w), None (is_causal, no mask). The memory model keeps it
        (mask_saved, kv_heads_saved); the kernel model computes every block under it
        (tree_kernels._sdpa_mask)."""
        kind = core.profile.facts.sdpa_mask
        if kind == "always" and core.causal:
            return "always"
        if kind == "window" and core.windowed:
            return "window"
        return None

    def mask_saved(self, core: Any) -> Expr:
        """The mask the kernel keeps, in the activation dtype."""
        mask, kind = S.e * S.b * core.q_len * core.k_len, self.mask_kind(core)
        if kind == "always":
            return mask
        if kind == "window":
            return sp.Piecewise((mask, sp.Ge(core.k_len, S.w)), (ZERO, True))
        return ZERO

    def kv_heads_saved(self, core: Any) -> Expr:
        """h once the window's mask reaches the kernel (repeat_kv's expand and reshape copy),
        except for one KV head, whose repeat stays a view of it at any batch."""
        if self.mask_kind(core) == "window":
            repeated = sp.Piecewise((core.kv_heads, sp.Eq(core.kv_heads, 1)), (S.h, True))
            return sp.Piecewise((repeated, sp.Ge(core.k_len, S.w)), (core.kv_heads, True))
        return core.kv_heads

    def repeat_copy_bytes(self, core: Any) -> tuple[Expr, Expr]:
        """What repeat_kv's clones of K and of V move where the heads reaching the kernel are
        repeated (kv_heads_saved above h_kv): each reads the h_kv heads and writes h, e b k_len
        (h_kv + h) elements of its width; zero where they are not (no mask yet, one KV head)."""
        repeated = sp.Piecewise((ZERO, sp.Eq(self.kv_heads_saved(core), core.kv_heads)), (sp.Integer(1), True))
        heads = core.kv_heads + self.kv_heads_saved(core)
        return tuple(repeated * S.e * S.b * core.k_len * heads * width for width in (core.qk_dim, core.value_dim))

    def softmax_saved(self, core: Any) -> Expr:
        return super().softmax_saved(core) + self.mask_saved(core)

    def keeps_projection_input(self, core: Any) -> bool:
        return not core.profile.facts.sdpa_query_contiguous


SDPA = Sdpa()


@dataclass(frozen=True)
class Recomputed(Kernel):
    """Selective recomputation around `base`: FLOPs and traffic of base, saved bytes of flash."""

    base: Kernel = Kernel()
    keeps_output: bool = True
    recomputes_core: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", f"recomputed {self.base.name}")
        object.__setattr__(self, "dense", self.base.dense)

    @property
    def saves_as(self) -> str:
        return FLASH.name

    def scores_backward(self, forward: Expr) -> Expr:
        return self.base.scores_backward(forward)

    def scores_saved(self, core: Any) -> Expr:
        return FLASH.scores_saved(core)

    def query_view_saved(self, extra: Expr) -> Expr:
        return FLASH.query_view_saved(extra)

    def softmax_saved(self, core: Any) -> Expr:
        return FLASH.softmax_saved(core) if core.profile.facts.selective_keeps_logsumexp else ZERO

    def weighted_sum_saved(self, core: Any) -> Expr:
        return FLASH.weighted_sum_saved(core)


EAGER, MATH = Kernel(), Math()


def _sdpa(dropout: bool, bias_needs_grad: bool, value_width_differs: bool) -> Kernel:
    """torch's scaled_dot_product_attention on the CPU: its flash kernel, except with dropout, a
    position bias that needs gradients, or value heads of another width than the query and key
    heads, when it falls back to its math path in fp32. The last is torch 2.13's CPU dispatch
    (sdp_utils_cpp.cpp check_head_dim_size_cpp: the flash kernel wants one last dimension for q, k
    and v): latent attention's q and k of d_h against v of d_v run
    _scaled_dot_product_attention_math, measured op by op (validate/FINDINGS.md "Latent attention
    under sdpa")."""
    return MATH if dropout or bias_needs_grad or value_width_differs else SDPA


#: --attention -> the kernel that runs, given (dropout runs, a position bias needs gradients,
#: the value heads' width differs from the query and key heads').
ATTENTIONS: dict[str, Callable[[bool, bool, bool], Kernel]] = {
    "eager": lambda dropout, bias_needs_grad, value_width_differs: EAGER,
    "sdpa": _sdpa,
    "flash": lambda dropout, bias_needs_grad, value_width_differs: FLASH,
}


def choose(attention: str, dropout: bool, bias_needs_grad: bool, selective: bool = False,
           value_width_differs: bool = False) -> Kernel:
    """The kernel one attention runs; under selective recomputation, its recomputed variant."""
    kernel = ATTENTIONS[attention](dropout, bias_needs_grad, value_width_differs)
    return Recomputed(base=kernel) if selective else kernel

