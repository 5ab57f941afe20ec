"""What every block module shares: the cost record and the pieces formulas are built from.

Profile (which code runs, and how), Tensor (a parameter's shape), Cost (one block's expressions),
Block (the base class), OTHER_FLOPS_PER_ELEMENT (the stated convention that turns other ops'
elements into FLOPs), and the helpers several kinds of block use: make_cost, weight_matrix,
linear_flops, linear_bytes, weight_and_bias and quantized_bytes. The conventions these follow are
in the package's docstring (costmodel/blocks/__init__.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import sympy as sp

from .. import symbols as S
from ..decode_codes import cache_code, caches_kv_heads
from ..facts import Facts, facts_for
from ..kernels import Kernel, choose
from ..precision import ParamBytes, param_bytes
from ..spec import RECOMPUTED_PARTS
from ..terms import FP32, ZERO, Expr, dtype_bytes


OTHER_FLOPS_PER_ELEMENT = {
    "add": 1,
    "mul": 1,
    "softmax": 5,
    "log_softmax": 5,
    "logsumexp": 4,  # softmax's max, subtraction, exp and sum, without its division (the log is per row)
    "layernorm": 5,
    "layernorm_python": 5,  # the same arithmetic as separate Python ops (facts.layernorm_python_fp32)
    "rmsnorm": 4,
    "relu": 1,
    "gelu": 8,
    "gelu_tanh": 8,
    "silu": 4,
    "tanh": 1,
    "sigmoid": 4,
    "softplus": 3,  # exp, log1p and the threshold's compare (Laguna's output gate)
    "exp": 1,  # Doge's dynamic mask, exp(A * softplus(dt))
    "sqrt": 1,  # DeepSeek-V4's router scores, sqrt(softplus(logits))
    "rope": 3,
    "clamp": 2,  # a compare with each bound (OLMo's clip_qkv, gpt-oss's clamp of up)
    "clamp_max": 1,  # one bound only (gpt-oss's clamp of the gate: min None)
    # transformers' Python xIELU: x > 0, alpha_p x, (alpha_p x) x, beta x, their sum, min(x, eps),
    # expm1, minus x, times alpha_n, beta x, the sum, where: twelve pointwise ops, one each
    "xielu": 12,
}



@dataclass(frozen=True)
class Profile:
    """Which code runs, and how: everything about a run that is not the architecture.

    impl: "hf" (transformers 5.24's code for the family) or "reference" (validate/reference.py,
    which computes everything in the activation dtype); what each keeps, and in which dtype, is a
    row of the facts table (costmodel/facts.py), looked up by (impl, family). attention: the kernel
    choice (costmodel/kernels.py). dropout: whether dropout runs (a training forward with p > 0).
    kv_cache: "dynamic" appends each step's keys and values with torch.cat, copying the whole
    cache (Hugging Face's DynamicCache and the reference model), "static" writes them into a
    preallocated cache. recompute: none, selective (the attention core), full (every layer) or
    deepseek (every norm and latent attention's up-projections: recomputes(part)).
    precision and optimizer: the bytes per parameter (costmodel/precision.py). optimizer_impl and
    device: torch's AdamW variant (single-tensor, the CPU default; foreach, the CUDA default;
    fused) and where it runs, which set the optimizer step's temporaries and step counters.
    mla: how latent attention runs at inference: "naive" (transformers' code: every cached latent
    up-projected to keys and values at every step) or "absorbed" (inference engines: W_UK folded
    into the queries and W_UV applied after the weighted sum, attention over the cached latents).
    """

    impl: str = "hf"
    attention: str = "eager"
    dropout: bool = False
    attention_dropout: bool | None = None  # dropout on the attention probabilities (None: as dropout)
    family: str = "custom"
    kv_cache: str = "dynamic"
    recompute: str = "none"
    # recompute "full" of the first N layers only (Workload.recompute_layers; None: every layer)
    recompute_layers: int | None = None
    precision: str = "mixed"
    optimizer: str = "adamw"
    optimizer_impl: str = "single"
    device: str = "cpu"
    # whose aten kernels the tree follows where CUDA's and the CPU's keep different tensors
    # (dropout's mask, sdpa under dropout): "cuda" only where a peak is asked for a CUDA device
    # (peak.training_model, measured by benchmarks/gpu_check.py); estimate and the layouts keep the
    # CPU's, which every measurement here was taken on (validate/FINDINGS.md, "The first GPU check")
    kernel_device: str = "cpu"
    kv_dtype: str | None = None  # a quantized KV cache (fp8, int8): one byte per element + scales
    # The code that decodes (costmodel/decode_codes.py: spec.DECODE_CODES, a serve scheduler's
    # engine): which heads its KV cache holds (facts.kv_cache_heads applies to transformers' classes
    # only) and whether its attention reads a quantized cache as stored (kv_read_as_stored).
    decode_code: str = "transformers"
    weight_format: Any = None  # quantization.WeightFormat of the weights (inference), or None
    mla: str = "naive"  # latent attention's form: "naive" or "absorbed" (inference only)
    # DeepSeek-V3's low-precision activations (layout --fp8 blockwise; report section 3.3.3): the
    # linear layers' inputs kept for backward in FP8 (terms.tiled_bytes), the attention output
    # (the input of the linear after attention) in E5M6, the routed experts' SwiGLU input in FP8
    # and its output recomputed in backward.
    fp8_activations: bool = False
    # The loss code of the training framework a layout runs (Framework.loss): "vocab_parallel",
    # Megatron-LM's _VocabParallelCrossEntropy; None: not a framework's (one device, or a framework
    # that leaves the loss to the model's code). Its passes are timed where the model's code calls
    # it unfused (facts.loss_passes), or everywhere under "vocab_parallel_unfused" (a layout whose
    # model code calls it whatever the family: Layout.unfused_loss, layout/parts.layout_loss).
    framework_loss: str | None = None
    # Each norm reads an fp32 copy of its input in a checkpointed dropout-and-norm function
    # (InternLM's layer at c18bec93: norm(residual.float()) under dropout_selective_checkpoint;
    # Layout.fp32_norm_input, blocks/norms.py fp32_input_norm_bytes)
    fp32_norm_input: bool = False
    # A serving engine's or a training framework's MoE kernel (vLLM's fused_moe, Megatron's
    # grouped GEMM) runs each token through its top k experts only, whatever transformers' class
    # does: facts.experts_every_token (Llama 4's Llama4TextExperts) does not apply.
    routed_experts: bool = False
    # LongCat-Flash's zero-compute experts (ModelConfig.zero_experts): whether the routed experts'
    # gate_up tensor holds rows for them. transformers' LongcatFlashExperts allocates E + Z (never
    # run); vLLM's loader builds its FusedMoE over the E real experts only, the router alone having
    # E + Z outputs (vllm/model_executor/models/longcat_flash.py at 055e47c2: LongcatMoe's
    # FusedMoEFactory(num_experts=config.n_routed_experts)), so a served replica holds the checkpoint's.
    zero_experts_held: bool = True
    # Expert parallelism (layout --ep): a rank holds E / ep of the routed experts and runs the
    # slots that the ep ranks' tokens route to them, so it reads the experts of its own share
    # that ep times its tokens touch (blocks/experts.py Experts.cost).
    expert_parallel: int = 1
    # Hugging Face generate's prefill (transformers 5.24 GenerationMixin.generate sets
    # model_kwargs["logits_to_keep"] = 1 where the model's forward accepts it): the LM head, and
    # the logit scaling and soft-capping after it, run on the last logits_to_keep positions of each
    # sequence and return [b, logits_to_keep, V] logits; the final norm still runs on all n
    # (`self.lm_head(hidden_states[:, slice_indices, :])`). 0: every position (a plain forward).
    # tree.generate_logits_to_keep says which models generate that way.
    logits_to_keep: int = 0
    # The attention's value heads are narrower or wider than its query/key heads (latent attention,
    # ModelConfig.structure's value_width_differs) where that sends torch's sdpa to its math path:
    # on the CPU only (tree.sdpa_runs_math).
    value_width_differs: bool = False

    @cached_property
    def facts(self) -> Facts:
        """The (impl, family) facts; under a code whose cache is not transformers' class's
        (decode_codes.CacheCode.class_heads), the cache holds the KV heads (kv_cache_heads "kv")."""
        facts = facts_for(self.impl, self.family)
        if caches_kv_heads(self.decode_code, facts.kv_cache_heads):
            return dataclasses.replace(facts, kv_cache_heads="kv")
        return facts

    @property
    def kv_read_as_stored(self) -> bool:
        """Whether the attention reads a quantized KV cache as stored (one byte an element: vLLM's
        FlashAttention-3 on an FP8 cache, TensorRT-LLM's masked MHA), rather than handed it in the
        activations' dtype (transformers' QuantizedCache, torchao's dequantized copy): the decode
        code's (decode_codes.CacheCode.reads_as_stored)."""
        return cache_code(self.decode_code).reads_as_stored

    def kernel(self, bias_needs_grad: bool = False) -> Kernel:
        """The attention kernel that runs (a position bias that needs gradients can change it).
        Dropout sends sdpa to its math path on the CPU only: on CUDA its fused kernels (flash,
        memory-efficient) draw the mask inside the kernel from a Philox seed and keep none."""
        return choose(self.attention, self.probs_dropout and self.kernel_device != "cuda", bias_needs_grad,
                      self.recompute == "selective" or self.recomputes("core_attn"), self.value_width_differs)

    def recomputes(self, part: str) -> bool:
        """Whether the recomputation reruns this part in backward ("norms", "up_projections":
        spec.RECOMPUTED_PARTS), so that what it outputs is not kept."""
        return part in RECOMPUTED_PARTS[self.recompute]

    @property
    def probs_dropout(self) -> bool:
        """Whether dropout runs on the attention probabilities."""
        return "probs" in self.dropout_sites()

    @property
    def mask_bytes(self) -> Expr:
        """Bytes per element dropout keeps for backward. On CUDA aten's dropout runs the fused
        kernel (Dropout.cpp is_fused_kernel_acceptable: a CUDA input, 0 < p < 1), native_dropout,
        which keeps a bool mask; elsewhere _dropout multiplies the input by a noise tensor of its own
        dtype and keeps that (the facts' dropout_mask_dtype). Measured: benchmarks/gpu_check.py on an
        H200 (validate/FINDINGS.md, "the first GPU check")."""
        return dtype_bytes("bool" if self.kernel_device == "cuda" else self.facts.dropout_mask_dtype)

    def dropout_sites(self) -> tuple[str, ...]:
        """Where dropout runs, if it runs (the facts' dropout_sites): on the probabilities when the
        attention dropout is on, everywhere else when the dropout is."""
        probs = self.dropout if self.attention_dropout is None else self.attention_dropout
        return tuple(site for site in self.facts.dropout_sites
                     if (probs if site == "probs" else self.dropout))

    @property
    def param_bytes(self) -> ParamBytes:
        return param_bytes(self.precision, self.optimizer)


@dataclass(frozen=True)
class Tensor:
    """A parameter tensor's shape: `rows` along dim 0 (what FSDP2 and a Shard(0) split, padding
    to ceil(rows / world)), `cols` the product of the other dimensions."""

    rows: Expr
    cols: Expr = sp.Integer(1)

    @property
    def elements(self) -> Expr:
        return self.rows * self.cols


@dataclass(frozen=True)
class BackwardStep:
    """One moment of a block's backward (one run): `allocated` bytes come to life with `params`
    weight-gradient elements (their bytes: the precision policy's, added by the walk), the moment
    the walk takes, then `freed` bytes go."""

    allocated: Expr
    params: Expr = ZERO
    freed: Expr = ZERO


@dataclass(frozen=True)
class Backward:
    """How a block's backward allocates and frees, for the training peak's walk through backward
    (costmodel/peak.py backward_moments).

    steps: its moments in the order autograd runs them; the gradient it receives is freed after
    the first (the node that consumes it is done), unless a residual add also sends it along the
    skip. grad_input: bytes of the gradient it passes back (allocated in its steps, live after
    them; 0 when it passes a view). output_kept: its output, counted in its saved bytes and kept by
    the next block, which frees it when its step input_step is done (-1: its last). skip: a residual add, whose
    received gradient also flows along the skip until the branch's gradient reaches the
    sublayer's input, where the two are summed into a new tensor of `skip` bytes."""

    steps: tuple[BackwardStep, ...] = ()
    grad_input: Expr = ZERO
    output_kept: Expr = ZERO
    input_step: int = -1
    skip: Expr = ZERO


@dataclass(frozen=True)
class Cost:
    """The costs of one block, as sympy expressions (for a whole batch, one run of the block).

    Forward: parameters (tensors, in the order the code registers them), matmul FLOPs, other ops'
    elements, traffic. Backward: matmul FLOPs, and the traffic and other-op work by the stated
    convention (twice the forward's). Memory: bytes saved for backward, KV cache, buffers (non-
    parameter tensors the module holds), inputs (int64 ids the caller passes and holds), results
    (what the caller holds: the loss, inference logits) and the transients that set a peak: what
    the block's backward holds when it starts (less what it has freed by then) and what an
    optimizer step allocates. The optimizer leaf also holds its step counters and moves the
    optimizer step's traffic.
    """

    tensors: tuple[Tensor, ...] = ()  # parameter tensors, in registration order
    flops_matmul: Expr = ZERO
    elements: tuple[tuple[str, Expr], ...] = ()  # (op kind, output elements) of non-matmul ops
    flops_matmul_backward: Expr = ZERO
    saved_bytes: Expr = ZERO
    kv_cache_bytes: Expr = ZERO
    bytes_matmul: Expr = ZERO  # traffic of the matrix products: weights, their inputs and outputs
    bytes_other: Expr = ZERO  # traffic of the other ops (elementwise, reductions, gathers)
    # their backward's traffic where the block states the code's passes (Megatron's vocabulary-
    # parallel cross-entropy); None: the convention below, twice the forward's
    backward_bytes_other: Expr | None = None
    # False: its other ops run inside another kernel (a GEMM's epilogue, the next norm's fused kernel), so it
    # launches no memory-bound kernel of its own (tree_kernels.leaf_kernels); its elements still count as FLOPs
    own_kernel: bool = True
    buffer_bytes: Expr = ZERO
    input_bytes: Expr = ZERO
    saved_input_bytes: Expr = ZERO  # of saved_bytes, the caller's own inputs (the ids it passes and holds)
    result_bytes: Expr = ZERO
    backward_transient_bytes: Expr = ZERO
    step_transient_bytes: Expr = ZERO
    # what one run of the block holds at its largest moment in a no-grad forward beyond its
    # inputs and kept outputs (an eager softmax's n x n scores); one run at a time (memory.phase_bytes)
    forward_transient_bytes: Expr = ZERO
    step_state_bytes: Expr = ZERO
    bytes_optimizer: Expr = ZERO
    inactive_params: Expr = ZERO  # parameters a token does not use (routed experts it skips)
    # The weight matrices a quantized format stores quantized, as (rows, columns, how many): the
    # matrices a layer multiplies by (costmodel/quantization.py says which stay unquantized).
    matrices: tuple[tuple[Expr, Expr, Expr], ...] = ()
    # The rows (tokens) each of those matrices multiplies, in their order, where they differ
    # (latent attention's: the queries, the new latents, the keys up-projected); empty: every
    # matrix the same rows, the forward matmul FLOPs over 2 x the weights (quantized_matmul.matrix_rows).
    matrix_tokens: tuple[Expr, ...] = ()
    # The share of those matrices' weights one run reads (bytes_matmul's weight term over all of
    # them): 1, except routed experts, which read only the experts that get a token.
    matrix_read_share: Expr = sp.Integer(1)
    # Forward matmul FLOPs under a named variant of how the block runs, where it has one:
    # "windowed" (a kernel that computes only the keys in a sliding window) and "absorbed" (MLA
    # with its key/value up-projections folded into the query and the output).
    variants: tuple[tuple[str, Expr], ...] = ()

    @property
    def params(self) -> Expr:
        return sp.Add(*(t.elements for t in self.tensors))

    @property
    def active_params(self) -> Expr:
        """Parameters one token's forward uses (all but the routed experts it is not sent to)."""
        return self.params - self.inactive_params

    @property
    def matrix_params(self) -> Expr:
        """Elements of the weight matrices a quantized format quantizes."""
        return sp.Add(*(rows * cols * count for rows, cols, count in self.matrices))

    def variant_flops(self, name: str) -> Expr:
        """Forward matmul FLOPs under a variant (the block's own when it has none of that name)."""
        return dict(self.variants).get(name, self.flops_matmul)

    @property
    def bytes_moved(self) -> Expr:
        return self.bytes_matmul + self.bytes_other

    @property
    def flops_other(self) -> Expr:
        return sp.Add(*(OTHER_FLOPS_PER_ELEMENT[k] * x for k, x in self.elements))

    # Backward traffic and other-op work (a stated convention, not a measurement): a backward
    # reads and writes about twice what its forward does, and runs about twice its other ops;
    # a block that states its backward's passes (backward_bytes_other) moves those instead.
    @property
    def bytes_matmul_backward(self) -> Expr:
        return 2 * self.bytes_matmul

    @property
    def flops_other_backward(self) -> Expr:
        return 2 * self.flops_other

    @property
    def bytes_other_backward(self) -> Expr:
        return 2 * self.bytes_other if self.backward_bytes_other is None else self.backward_bytes_other

    def element_counts(self) -> dict[str, Expr]:
        out: dict[str, Expr] = {}
        for kind, count in self.elements:
            out[kind] = out.get(kind, ZERO) + count
        return out

    QUANTITIES = (
        "params", "flops_matmul", "flops_other", "flops_matmul_backward", "saved_bytes",
        "kv_cache_bytes", "bytes_matmul", "bytes_other", "bytes_moved",
    )
    #: Memory and traffic of a training step beyond the forward's (for the peak and the roofline).
    STEP_QUANTITIES = (
        "buffer_bytes", "input_bytes", "saved_input_bytes", "result_bytes", "backward_transient_bytes",
        "step_transient_bytes", "step_state_bytes", "bytes_optimizer", "bytes_matmul_backward",
        "flops_other_backward", "bytes_other_backward",
    )

    def get(self, quantity: str) -> Expr:
        return getattr(self, quantity)

    def is_active(self) -> bool:
        """Whether the block runs any op (what a per-block launch overhead is paid for)."""
        return any(self.get(q) != 0 for q in ("flops_matmul", "flops_other", "bytes_moved"))


def make_cost(**kwargs) -> Cost:
    """A Cost with every value made a sympy expression (zero elements and tensors dropped; a
    tensor given as an expression is one-dimensional)."""
    pairs = ("elements", "tensors", "matrices", "variants", "matrix_tokens")
    values = {k: v if k == "own_kernel" or v is None else sp.sympify(v) for k, v in kwargs.items() if k not in pairs}
    elements = tuple((k, sp.sympify(x)) for k, x in kwargs.get("elements", ()) if x != 0)
    tensors = tuple(t if isinstance(t, Tensor) else Tensor(sp.sympify(t))
                    for t in kwargs.get("tensors", ()) if t != 0)
    matrices = tuple(tuple(sp.sympify(x) for x in m) for m in kwargs.get("matrices", ()))
    variants = tuple((k, sp.sympify(x)) for k, x in kwargs.get("variants", ()))
    matrix_tokens = tuple(sp.sympify(x) for x in kwargs.get("matrix_tokens", ()))
    if matrix_tokens and len(matrix_tokens) != len(matrices):
        raise ValueError(f"matrix_tokens gives {len(matrix_tokens)} row counts for {len(matrices)} matrices.")
    return Cost(elements=elements, tensors=tensors, matrices=matrices, variants=variants,
                matrix_tokens=matrix_tokens, **values)


def weight_matrix(d_in: Expr, d_out: Expr, count: Expr = 1) -> tuple[Expr, Expr, Expr]:
    """A linear layer's weight as quantized: d_out rows (output features) of d_in columns."""
    return (d_out, d_in, count)


def quantized_bytes(matrices: tuple[tuple[Expr, Expr, Expr], ...], fmt: Any) -> dict[str, Expr]:
    """Bytes of quantized weight matrices by part (data, scales, zeros, tables) in a format of
    costmodel/quantization.py; R rows of C columns, N = R C values per matrix:

      row   data N bits/8, scales 4 R (one fp32 per output row)
      block data N bits/8, scales 4 ceil(R/g) ceil(C/g) (one fp32 per g x g block; fp8)
      gptq  data N bits/8, per group of g columns of a row (G = R ceil(C/g)): scales 2 G (fp16),
            zeros G bits/8 (packed); in gpt-fast's and torchao's layout (fmt.storage) a bf16
            (scale, zero) pair per group, 4 G, no zeros part; compressed-tensors' symmetric one a
            2-byte scale per group, 2 G, plus its 16-byte weight_shape a matrix, no zeros part
    R and C as the layout stores them (quantization.stored_shape: tinygemm's padding of int4), and
    int8's row scales of fmt.storage.row_scale_bytes (fp32 in LLM.int8, bf16 in gpt-fast and torchao),
    plus fmt.storage.matrix_scale_bytes a matrix (DeepSpeed's 32 x 3 fp32, no row scales).
      mx    data N bits/8, per block of g columns of a row (G = R ceil(C/g)): scales G (one E8M0
            byte each; mxfp4)
      nf4   data N/2; per block of g values (B = ceil(N/g)): scales 4 B, tables 64 (the code); with
            double quantisation scales B + 4 ceil(B/256), tables 64 + 1024 + 4 (the second code
            and the offset)
      exl2  data N bits/8 at the file's bits a weight (its scales and groups within them), tables 4 C
            (q_perm and q_invperm, a uint16 an input column each; costmodel/exl2.py)
    """
    from ..quantization import stored_shape

    parts = {"data": ZERO, "scales": ZERO, "zeros": ZERO, "tables": ZERO}
    for rows, cols, count in matrices:
        rows, cols = stored_shape(rows, cols, fmt)
        values = rows * cols
        parts["data"] += count * sp.ceiling(values * fmt.bits / 8)
        if fmt.layout == "row":
            parts["scales"] += count * ((FP32 if fmt.dtype == "fp8" else fmt.storage.row_scale_bytes) * rows
                                        + fmt.storage.matrix_scale_bytes)
        elif fmt.layout == "block":
            parts["scales"] += count * FP32 * sp.ceiling(rows / fmt.group) * sp.ceiling(cols / fmt.group)
        elif fmt.layout == "gptq" and fmt.storage.group_pair_bytes:
            parts["scales"] += count * (fmt.storage.group_pair_bytes * rows * sp.ceiling(cols / fmt.group)
                                        + fmt.storage.group_matrix_bytes)
        elif fmt.layout == "gptq":
            groups = rows * sp.ceiling(cols / fmt.group)
            parts["scales"] += count * 2 * groups
            parts["zeros"] += count * sp.ceiling(groups * fmt.bits / 8)
        elif fmt.layout == "exl2":
            parts["tables"] += count * 4 * cols
        elif fmt.layout == "mx":
            parts["scales"] += count * rows * sp.ceiling(cols / fmt.group)
        elif fmt.double_quant:
            blocks = sp.ceiling(values / fmt.group)
            parts["scales"] += count * (blocks + FP32 * sp.ceiling(blocks / 256))
            parts["tables"] += count * (16 * FP32 + 256 * FP32 + FP32)
        else:
            parts["scales"] += count * FP32 * sp.ceiling(values / fmt.group)
            parts["tables"] += count * 16 * FP32
    return parts


#: The phases a mixer with a recurrent state (Mamba, linear attention, RWKV, RG-LRU, mLSTM) is built
#: for: "train" (no cache), "prefill" (a cache filled from the prompt), "chunk" (n new tokens after a
#: cached prefix) or "decode" (one new token per sequence).
MIXER_PHASES = ("train", "prefill", "chunk", "decode")


class MixerPhases:
    """A mixer built for one of MIXER_PHASES (its dataclass's `phase` field): its tokens a sequence,
    one in a decode step; check_phase() refuses any other phase (the mixer's __post_init__)."""

    phase: str

    def check_phase(self) -> None:
        if self.phase not in MIXER_PHASES:
            raise ValueError(f"{type(self).__name__} phase {self.phase!r} is not train, prefill, chunk or decode.")

    @property
    def seq(self) -> Expr:
        return sp.Integer(1) if self.phase == "decode" else S.n


class Block:
    """A piece of the model with formulas; subclasses are frozen dataclasses."""

    #: A short description for tables and the formulas command.
    title = "block"

    def cost(self) -> Cost:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def linear_ops(self) -> tuple[LinearOp, ...]:
        """Its linear layers in the order its forward runs them (op recomputation counts them:
        costmodel/op_checkpoint.py); none but the blocks that say so."""
        return ()

    def activation_products(self) -> tuple[tuple[Expr, Expr, Expr, Expr], ...]:
        """Its products of two activations beyond its weight matrices, as (M, N, K, count) batched
        GEMMs (the time model's kernels: tree_kernels.leaf_kernels); none but the blocks that say so
        (DeepSeek-V3.2's indexer scores). The attention core's are its own leaves."""
        return ()

    def backward(self) -> Backward | None:
        """What its backward allocates and frees (one run), for the walk through backward
        (costmodel/peak.py); None where not stated: the walk stops there."""
        return None

    def dequantized_matrices(self) -> frozenset[int]:
        """Indices (into its Cost.matrices) of the weight matrices an inference engine multiplies
        dequantized, in the activations' dtype, though a quantized checkpoint stores them so
        (quantized_matmul.runs_quantized); none but absorbed latent attention's."""
        return frozenset()


def linear_flops(tokens: Expr, d_in: Expr, d_out: Expr) -> tuple[Expr, Expr]:
    """Forward and backward matmul FLOPs of tokens x (d_in -> d_out) with a trained weight."""
    forward = 2 * tokens * d_in * d_out
    return forward, 2 * forward


def linear_bytes(tokens: Expr, d_in: Expr, d_out: Expr) -> Expr:
    """Traffic of a linear layer: the weight once, the input read, the output written."""
    return S.e * (d_in * d_out + tokens * (d_in + d_out))


def projection_costs(tokens: Expr, projections: Sequence[tuple[Expr, Expr]]) -> tuple[Expr, Expr, dict[str, Any]]:
    """A mixer's linear projections over `tokens`, each (d_in, d_out): their forward and backward
    matmul FLOPs (linear_flops) and make_cost's matrices, matrix_tokens and bytes_matmul for them."""
    forward = backward = ZERO
    for d_in, d_out in projections:
        fwd, bwd = linear_flops(tokens, d_in, d_out)
        forward, backward = forward + fwd, backward + bwd
    return forward, backward, dict(
        matrices=[weight_matrix(d_in, d_out) for d_in, d_out in projections],
        matrix_tokens=[tokens] * len(projections),
        bytes_matmul=sum((linear_bytes(tokens, d_in, d_out) for d_in, d_out in projections), ZERO))


@dataclass(frozen=True)
class LinearOp:
    """One linear layer as a block runs it: tokens x (d_in -> d_out). Without a bias torch runs it
    as aten.mm (F.linear on a 3-d input: a view, mm, a view); with one, as aten.addmm."""

    name: str
    tokens: Expr
    d_in: Expr
    d_out: Expr
    biased: bool = False

    @property
    def output_bytes(self) -> Expr:
        return S.e * self.tokens * self.d_out


def linears_cost(ops: tuple[LinearOp, ...] | list[LinearOp], **others: Any) -> Cost:
    """The cost of running these linear ops of a block (a part of it: what op recomputation reruns),
    each its own matrix and rows, with the block's other work given in `others`."""
    return make_cost(
        matrices=[weight_matrix(op.d_in, op.d_out) for op in ops],
        matrix_tokens=[op.tokens for op in ops],
        flops_matmul=sp.Add(*(linear_flops(op.tokens, op.d_in, op.d_out)[0] for op in ops)),
        bytes_matmul=sp.Add(*(linear_bytes(op.tokens, op.d_in, op.d_out) for op in ops)),
        **others)


def weight_and_bias(d_in: Expr, d_out: Expr, bias: bool, transposed: bool = False) -> tuple[Tensor, ...]:
    """A linear layer's tensors as torch registers them: the weight (d_out x d_in, or d_in x
    d_out for a transposed one such as GPT-2's Conv1D), then the bias."""
    weight = Tensor(d_in, d_out) if transposed else Tensor(d_out, d_in)
    return (weight, Tensor(d_out)) if bias else (weight,)
