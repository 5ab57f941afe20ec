"""A leaf of the cost tree: one block where it runs (its stack, its part of the model, its
sublayer inside a layer and its name), how many times it runs, and its cost for one run; the
totals a leaf gives for a quantity (its runs, or the copies of its weights it holds). Place: where
the builder (costmodel/leaves.py) stands when it makes a leaf, the fields its leaves share."""

from __future__ import annotations

from dataclasses import dataclass, replace

import sympy as sp

from . import blocks as B
from . import symbols as S
from .quantized_matmul import dequant_bytes
from .spec import RECOMPUTED_LAYERS

ONE = sp.Integer(1)
#: Quantities a leaf derives from its parameters and the precision policy (bytes per parameter).
STATE_QUANTITIES = ("weight_bytes", "gradient_bytes", "optimizer_bytes")
#: With quantized weights (inference phases): the weight bytes by part.
WEIGHT_PARTS = ("weight_data_bytes", "weight_scale_bytes", "weight_zero_bytes",
                "weight_table_bytes", "weight_unquantized_bytes")
#: A leaf's quantities that follow the weights it holds (Leaf.copies), not its runs (Leaf.count).
HELD_QUANTITIES = ("params", "matrix_params", "active_params", "inactive_params", "buffer_bytes")


@dataclass(frozen=True)
class Leaf:
    """A block where it runs, how many times, and its cost for one run."""

    block: B.Block
    cost: B.Cost
    count: sp.Expr  # runs per pass: its stack's layers for a layer leaf, else 1
    group: str  # the top-level group: embedding, encoder_embedding, encoder, decoder, head, optimizer
    part: str  # embedding, layer, stack (a stack's own blocks), head, loss, optimizer
    name: str
    stack: str | None = None  # encoder or decoder: the side it runs on (None: the optimizer)
    sublayer: str | None = None  # self_attention, cross_attention or ffn (layer leaves only)
    # The layers it runs in when a stack's layers differ (count says how many): "sliding" or "full"
    # (windows on some layers), "dense" or "moe", "rope" or "nope" (RoPE on some); None: every layer.
    kind: str | None = None
    recomputed: bool = False  # its forward, or part of it (rerun), runs again in backward (recomputation)
    rerun: B.Cost | None = None  # what recomputation reruns: its cost, or a part (CostModel._rerun)
    checkpointed: bool = False  # full or op recomputation: what it saves is rebuilt one layer at a time
    # recompute "torchtitan-op" (costmodel/op_checkpoint.py): its linear ops (Block.linear_ops) whose
    # outputs the policy keeps, and those that do not rerun (the kept ones, and the one the recompute
    # stops before)
    kept_outputs: tuple[str, ...] = ()
    not_rerun: tuple[str, ...] = ()
    per_param: object = None  # precision.ParamBytes of the tree (for STATE_QUANTITIES)
    weight_format: object = None  # quantization.WeightFormat of quantized weights (inference)
    # copies of its weights held when fewer than its runs (None: count): a multi-token-prediction
    # layer whose one set of weights runs at every depth (ModelConfig.mtp_repeated_layer)
    holds: sp.Expr | None = None

    @property
    def copies(self) -> sp.Expr:
        """How many copies of its weights the model holds."""
        return self.count if self.holds is None else self.holds

    @property
    def path(self) -> str:
        layer = f"{self.kind}_layer" if self.kind else "layer"
        inner = f"{layer}.{self.sublayer}." if self.sublayer else (f"{layer}." if self.part == "layer" else "")
        return f"{self.group}.{inner}{self.name}"

    @property
    def code_path(self) -> str:
        """The path of the code this leaf runs, what measurements of a family's code are keyed by
        (kernel_facts.json eager_training_bytes): its path, but a layer that full recomputation of
        N layers sets apart (spec.RECOMPUTED_LAYERS, Workload.recompute_layers) runs the plain
        layer's code, so it reads as "decoder.layer....", not "decoder.recomputed_layer...."."""
        return replace(self, kind=None).path if self.kind == RECOMPUTED_LAYERS else self.path

    @property
    def in_layer(self) -> bool:
        return self.part == "layer"

    def weight_part(self, quantity: str) -> sp.Expr:
        """One run's weight bytes by part: quantized matrices' data, scales, zeros and tables,
        and the rest in the precision policy's weight bytes (all of them when unquantized)."""
        unquantized = self.cost.params - (self.cost.matrix_params if self.weight_format else 0)
        parts = {"weight_unquantized_bytes": self.per_param.weights * unquantized}
        if self.weight_format:
            quantized = B.quantized_bytes(self.cost.matrices, self.weight_format)
            parts.update(weight_data_bytes=quantized["data"], weight_scale_bytes=quantized["scales"],
                         weight_zero_bytes=quantized["zeros"], weight_table_bytes=quantized["tables"])
        if quantity == "weight_bytes":
            return sp.Add(*parts.values())
        return parts.get(quantity, sp.Integer(0))

    def matmul_bytes_as_stored(self) -> sp.Expr:
        """One run's matrix-product traffic with its weights as stored: a quantized leaf reads its
        quantized matrices (data, scales, zeros, tables) instead of e bytes per weight. The
        dequantisation runs in the GEMM's registers (weight-only kernels: gpt-fast, Marlin,
        bitsandbytes): no traffic of its own, a stated convention; where the layout dequantizes into
        memory (DeepSpeed's, quantized_matmul.dequant_bytes) the GEMM reads e bytes a weight after a pass
        that reads the stored matrix and writes that copy. Routed experts read the share of
        their matrices that gets a token (Cost.matrix_read_share: each chosen expert's matrices with
        their scales, as gpt-fast's Mixtral gathers them, self.w1[expert_indices]). At a
        tensor-parallel rank's substitution (layout/split.py) the matrices are the rank's shards,
        each with its own scales and zeros."""
        moved = self.cost.bytes_matmul
        if self.weight_format is None or not self.cost.matrices:
            return moved
        stored = sp.Add(*B.quantized_bytes(self.cost.matrices, self.weight_format).values())
        if self.weight_format.storage.in_memory_dequant:  # DeepSpeed's: the unquantized GEMM's e bytes in `moved`
            return moved + self.cost.matrix_read_share * dequant_bytes(stored, self.cost.matrix_params, S.e)
        return moved - self.cost.matrix_read_share * (S.e * self.cost.matrix_params - stored)

    def total(self, quantity: str) -> sp.Expr:
        if quantity in WEIGHT_PARTS or (quantity == "weight_bytes" and self.weight_format):
            return self.copies * self.weight_part(quantity)
        if quantity in STATE_QUANTITIES:
            per_param = {"weight_bytes": self.per_param.weights, "gradient_bytes": self.per_param.gradients,
                         "optimizer_bytes": self.per_param.optimizer}[quantity]
            return self.copies * per_param * self.cost.params
        if quantity in HELD_QUANTITIES:
            return self.copies * self.cost.get(quantity)
        return self.count * self.cost.get(quantity)


@dataclass(frozen=True)
class Place:
    """Where the builder is: the fields every leaf made here shares."""

    group: str
    part: str
    stack: str | None = None
    sublayer: str | None = None
    count: sp.Expr = ONE
    kind: str | None = None

    def leaf(self, name: str, block: B.Block) -> Leaf:
        return Leaf(block, block.cost(), self.count, self.group, self.part, name, self.stack,
                    self.sublayer, kind=self.kind)


Leaves = list[Leaf]
