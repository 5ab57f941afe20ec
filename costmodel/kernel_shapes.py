"""The kernels a leaf runs, as shapes: a GEMM's (M, N, K), a fused attention call's heads and
lengths, a memory-bound kernel's bytes, FLOPs with no shape (costmodel/kernel_time.py times them on a hardware file;
docs/time.md, "The kernel-level model"). Plain integers: no torch, no sympy (the values a prefill or a
decode step evaluates the tree's leaves at are costmodel/kernel_subs.py's, apart: they need the tree).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Gemm:
    """count independent products (M x K) @ (K x N), as one launch (a batched GEMM)."""

    m: int
    n: int
    k: int
    count: int = 1
    weight_bytes: float | None = None  # a quantized weight as stored (None: e bytes per element)
    weight_dtype: str | None = None  # the quantized format's dtype (int8, int4, ...; None: unquantized)
    # fp8 weights: the first GEMM of its leaf to read this input, which a W8A8 kernel quantizes
    # once for all of them (quantization.py: Q, K and V; gate and up share theirs)
    quantizes_input: bool = False
    # the input is a norm's output (Q/K/V's, the FFN's first): a recipe may fuse its amax into the
    # norm (layout/fp8.py CAST_PASSES, "normed_input"); not part of the shape (equality, memo keys)
    normed_input: bool = field(default=False, compare=False)
    # routed experts' grouped GEMM (expert_kernels.grouped_gemms): the rows an expert of its forward,
    # which keys the grouped kernel's measured share (kernel_facts.json "grouped_gemm_efficiency")
    # in the forward and both backward GEMMs; 0: not a grouped GEMM
    grouped_rows: int = 0
    # the weight-only kernel its layout runs (QuantLayout.kernel; None: unquantized); last, as positional callers pass
    # the fields before it
    weight_kernel: str | None = None
    # the input is an FFN's activation output (its down projection): a recipe's module may write it in
    # FP8 in the activation's kernel (layout/fp8.py Casts.fused_activation); not part of the shape
    activated_input: bool = field(default=False, compare=False)

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k * self.count


def fused_gemm(gemms: list[Gemm]) -> Gemm:
    """The one GEMM that runs a leaf's products of one input where the code stores their weights
    as one matrix (kernel_facts.json "fused_projections": gpt-fast's wqkv): the rows, inner width
    and format of the first, their output features and stored bytes summed."""
    first = gemms[0]
    if any((g.m, g.k, g.count, g.weight_dtype) != (first.m, first.k, first.count, first.weight_dtype) for g in gemms):
        raise ValueError(f"only products of one input and format run as one GEMM: {gemms}")
    stored = None if first.weight_bytes is None else sum(g.weight_bytes or 0.0 for g in gemms)
    return Gemm(first.m, sum(g.n for g in gemms), first.k, first.count, stored, first.weight_dtype,
                any(g.quantizes_input for g in gemms), first.normed_input, weight_kernel=first.weight_kernel)


@dataclass(frozen=True)
class AttentionCall:
    """One fused attention call: batch x heads queries of n_q against n_kv keys of kv_heads heads
    (grouped-query: fewer than heads; absorbed latent attention: one shared head)."""

    batch: int
    heads: int
    n_q: int
    n_kv: int
    head_dim: int
    causal: bool = True
    window: int | None = None  # keys a query sees, itself included (None: all)
    value_dim: int | None = None
    kv_heads: int | None = None  # heads of K and V the kernel reads (None: heads)
    values_are_keys: bool = False  # the values are the keys' own first value_dim (not read again)
    # bytes of each key and value element read (None: the activations'): a quantized cache the
    # kernel reads as stored (blocks.AttentionCore.cache_element_bytes)
    kv_element_bytes: int | None = None
    # the window is a chunk: position p sees keys from (p // window) window (Llama 4); last, so
    # that positional construction and the disk cache's rows keep their order
    chunked: bool = False

    def moved_bytes(self, element_bytes: int) -> int:
        """What the call reads and writes, as the tree's fused scores and weighted sum state it:
        the queries and the output (heads) in the activations' dtype, the keys and, unless they are
        the keys, the values (kv_heads) in the cache's."""
        value_dim = self.value_dim or self.head_dim
        kv_heads = self.heads if self.kv_heads is None else self.kv_heads
        per_key = self.head_dim + (0 if self.values_are_keys else value_dim)
        kv_bytes = element_bytes if self.kv_element_bytes is None else self.kv_element_bytes
        return self.batch * (element_bytes * self.heads * self.n_q * (self.head_dim + value_dim)
                             + kv_bytes * kv_heads * self.n_kv * per_key)

    def dense_flops(self) -> int:
        """Q K^T and P V over every (query, key) pair: the FLOPs convention of the tree."""
        return 2 * self.batch * self.heads * self.n_q * self.n_kv * (self.head_dim + (self.value_dim or self.head_dim))

    def executed_pairs(self, block: int) -> int:
        """(query, key) pairs in the blocks the kernel computes: for each block of `block`
        queries, the key blocks from the first key any of them sees (a window) to the last (the
        causal diagonal; queries are the last n_q of the n_kv positions). Chunked: from the first
        query's chunk's first key."""
        offset, pairs = self.n_kv - self.n_q, 0
        for start in range(0, self.n_q, block):  # integers only (no numpy: plan imports neither)
            rows = min(start + block, self.n_q) - start
            last = self.n_kv if not self.causal else min(offset + start + rows, self.n_kv)
            if self.window is None:
                first = 0
            elif self.chunked:
                first = (offset + start) // self.window * self.window // block * block
            else:
                first = max(offset + start - self.window + 1, 0) // block * block
            last_block = min(-(-last // block) * block, self.n_kv)
            pairs += rows * max(last_block - first, 0)
        return self.batch * self.heads * pairs

    def executed_flops(self, block: int) -> int:
        return 2 * self.executed_pairs(block) * (self.head_dim + (self.value_dim or self.head_dim))

    def window_flops(self) -> int:
        """Q K^T and P V over the (query, key) pairs a causal window leaves unmasked, as cuDNN's
        benchmark counts them (benchmark_single_sdpa.py flops()): the query at position p (1-based,
        the last n_q of n_kv) sees min(p, window) keys; n_q = n_kv = S > W gives W(W+1)/2 + (S-W) W."""
        def seen(last: int) -> int:  # keys seen by the queries at positions 1..last
            w = self.window or last
            return last * (last + 1) // 2 if last <= w else w * (w + 1) // 2 + (last - w) * w
        pairs = self.batch * self.heads * (seen(self.n_kv) - seen(self.n_kv - self.n_q))
        return 2 * pairs * (self.head_dim + (self.value_dim or self.head_dim))


@dataclass(frozen=True)
class Pointwise:
    """A memory-bound kernel (norms, activations, adds, softmax): its bytes and FLOPs, and its
    backward's bytes where stated (Cost.backward_bytes_other) or measured (eager_ops.training_bytes;
    None: twice these)."""

    bytes: float
    flops: float = 0.0
    backward_bytes: float | None = None


@dataclass(frozen=True)
class PassKernel:
    """One hand-written kernel that runs in one pass only (mamba_ssm's Triton SSD kernels,
    causal_conv1d, its gated norm: costmodel/mamba_kernels.py): the batched products it computes
    on the tensor cores (Gemm shapes) and the bytes it reads and writes. backward: it runs in the
    backward pass (its own kernel there, none in the forward); else in the forward only."""

    name: str
    bytes: float
    products: tuple[Gemm, ...] = ()
    backward: bool = False

    def __post_init__(self) -> None:  # a disk cache's row (layout/rank_kernel_cache.py) gives dicts
        object.__setattr__(self, "products", tuple(g if isinstance(g, Gemm) else Gemm(**g) for g in self.products))

    @property
    def flops(self) -> int:
        return sum(g.flops for g in self.products)



@dataclass(frozen=True)
class MatmulCompute:
    """FLOPs with no shape the tree gives (timed at the large-GEMM rate)."""

    flops: float


Kernel = Gemm | AttentionCall | Pointwise | PassKernel
