"""The cost tree: a ModelConfig's blocks as an ordered list of leaves, with totals and selections.

A leaf (costmodel/leaf.py; costmodel/leaves.py places the blocks) is one block where it runs: its stack,
its part of the model (the embeddings, a repeated layer, a stack's own blocks, the head, the loss,
the optimizer), its sublayer inside a layer and its name, and how many times it runs (a layer leaf
L times). The path ("decoder.layer.self_attention.scores") is only for display: consumers select
leaves by these fields, never by parsing a path. A total is the sum over leaves of count x the
block's cost; the order of the leaves is the order the code registers its parameters, which is the
order an optimizer visits them.

Three phases: "train" (a forward with the loss, then the optimizer step), "prefill" (a forward over
the prompt, returning logits) and "decode" (one cached step: one new token per sequence attending
to c keys).
"""

from __future__ import annotations

import dataclasses
from functools import cached_property, lru_cache
from typing import Callable, Iterable

import sympy as sp

from . import blocks as B
from . import op_checkpoint
from . import symbols as S
from .config import ConfigError, ModelConfig, Workload
from .defaults import has_attention, sdpa_runs_math
from .leaf import ONE, Leaf
from .leaves import TreeBuilder
from .module_recompute import MODULE_NEEDS, check_recomputed_modules  # noqa: F401 (re-exported)
from .exl2 import head_bits as exl2_head_bits
from .quantization import check_whole_groups
from .spec import MLA_FORMS

PHASES = ("train", "prefill", "decode", "chunk")

# The names of the blocks in each regime, for the crossover n*.
ATTENTION_CORE = ("scores", "weighted_sum", "scores_2", "weighted_sum_2")  # _2: DiffLlama's second call
PROJECTIONS_AND_FFN = ("qkv", "mla", "out", "q_experts", "o_experts", "mlp", "router", "latent_in", "experts",
                       "latent_out", "shared_expert", "shared_expert_gate", "projections", "hyper",  # DeepSeek-V4's last two
                       "qkv_adapters", "gate_up_adapter", "linear")  # Zamba's shared blocks (costmodel/shared_block.py)


def profile_for(cfg: ModelConfig, workload: Workload | None = None, **changes) -> B.Profile:
    """The implementation profile a workload asks for (training forward: dropout if p > 0)."""
    workload = workload or Workload()
    attention_dropout = None if cfg.attention_dropout is None else cfg.attention_dropout > 0
    profile = B.Profile(
        impl=workload.impl, attention=workload.attention, dropout=cfg.dropout > 0,
        attention_dropout=attention_dropout, family=cfg.family, recompute=workload.recompute,
        recompute_layers=workload.recompute_layers,
        precision=workload.precision, optimizer=workload.optimizer, kv_dtype=workload.kv_dtype,
        kv_cache=workload.kv_cache, decode_code=workload.decode_code,
        mla=workload.mla,
        weight_format=workload.weight_format,
        logits_to_keep=workload.logits_to_keep,
        value_width_differs=sdpa_runs_math(cfg, workload, changes.get("device")),  # a layout's ranks' device
    )
    return dataclasses.replace(profile, **changes)



def generate_logits_to_keep(cfg: ModelConfig, impl: str) -> int:
    """The positions whose logits generate's prefill computes (Profile.logits_to_keep). transformers
    5.24's generate passes logits_to_keep=1 where the model's forward takes it: every causal LM
    class this project maps does (costmodel/hf.py ARCHITECTURE_TYPES), T5ForConditionalGeneration
    does not (its decoder prefill is the start token anyway). The reference model's decoding
    (validate/decoding.py) runs its head on every position and slices the last after: 0."""
    return int(impl == "hf" and cfg.architecture == "decoder" and cfg.head == "lm")


def check_weight_scope(cfg: ModelConfig, fmt) -> None:
    """A weight format that quantizes routed experts only (mxfp4) needs a model that has them."""
    if fmt is not None and fmt.scope == "experts" and not cfg.moe:
        raise ConfigError(f"weight_dtype {fmt.dtype} quantizes routed experts only, and model "
                          f"{cfg.name!r} has none.")


def weight_kind(leaf: Leaf) -> str | None:
    """The quantization.WEIGHT_KINDS entry of a leaf's weight matrices (None: another block: the
    embeddings, the head, a router, a norm): what a checkpoint's ignore list can keep unquantized."""
    if isinstance(leaf.block, B.Experts):
        return "routed_experts"
    if leaf.name == "shared_expert":
        return "shared_experts"
    if leaf.sublayer in ("self_attention", "cross_attention"):
        return "attention"
    return "dense_mlp" if leaf.sublayer == "ffn" and leaf.name == "mlp" else None


def _quantized_widths(cfg: ModelConfig, leaves: list[Leaf]) -> list[int]:
    """The input widths K of the quantized leaves' weight matrices, in the model's order, each once."""
    fixed = {symbol: sp.Integer(value) for symbol, value in model_values(cfg).items()}
    widths = (int(cols.xreplace(fixed)) for leaf in leaves if leaf.weight_format is not None
              for _, cols, _ in leaf.cost.matrices)
    return list(dict.fromkeys(widths))


def _norm_first(layer: list[Leaf]) -> list[Leaf]:
    """Each sublayer's norm before its other blocks, sublayers in their order."""
    sublayers = list(dict.fromkeys(leaf.sublayer for leaf in layer))
    return sorted(layer, key=lambda leaf: (sublayers.index(leaf.sublayer),
                                           not isinstance(leaf.block, B.Norm)))


#: Layer parameter orders (facts.parameter_order): one layer's leaves -> registration order.
_PARAMETER_ORDERS: dict[str, Callable[[list[Leaf]], list[Leaf]]] = {
    "tree": list,
    "norm_first": _norm_first,
    "norms_last": lambda layer: sorted(layer, key=lambda leaf: isinstance(leaf.block, B.Norm)),
}



@lru_cache(maxsize=64)
def shared_model(cfg: ModelConfig, profile: B.Profile, phase: str = "train") -> "CostModel":
    """One CostModel per (cfg, profile, phase), both frozen, shared by the callers that only read
    it (an inference simulation's trees): a warm `simulate` rebuilt its prefill and decode trees,
    their leaves and sympy sums, on every call."""
    return CostModel(cfg, profile, phase)


class CostModel:
    """The cost tree of one ModelConfig, with totals and selections as sympy expressions."""

    def __init__(self, cfg: ModelConfig, profile: B.Profile | None = None, phase: str = "train"):
        """phase "train": a forward over b sequences of n tokens (s source tokens) with the loss,
        then the optimizer step; "prefill": the same forward returning logits; "decode": one
        cached decoding step of b sequences whose new token attends to c keys; "chunk" (serving): the
        decode step with n new tokens per sequence (a prefill chunk), attending to c keys."""
        if phase not in PHASES:
            raise ValueError(f"phase must be one of {', '.join(PHASES)}, got {phase!r}.")
        self.cfg = cfg
        self.phase = phase
        self.profile = profile or profile_for(cfg)
        if phase != "train":  # inference: no dropout, nothing recomputed
            self.profile = dataclasses.replace(self.profile, dropout=False, recompute="none", recompute_layers=None)
        if self.profile.attention == "sdpa" and not self.profile.facts.sdpa_supported and has_attention(cfg):
            flash = ", or flash for a fused kernel" if self.profile.facts.flash_supported else ""
            code = (f"{cfg.family}'s Hugging Face class has no scaled_dot_product_attention path in transformers "
                    "5.24 (its _supports_sdpa is False: transformers refuses it)") if self.profile.impl == "hf" else (
                    f"--impl {self.profile.impl}'s code has no scaled_dot_product_attention path (facts.json)")
            raise ConfigError(f"attention 'sdpa': {code}; use --attention eager{flash}.")
        if self.profile.kv_dtype is not None and not self.profile.facts.kv_cache_held:
            raise ConfigError(f"kv_dtype {self.profile.kv_dtype}: {cfg.family}'s Hugging Face class holds no KV "
                              "cache to quantize (generate() reruns the whole prefix for every new token).")
        if phase in ("decode", "chunk") and not self.profile.facts.kv_cache_held:
            raise ConfigError(f"{cfg.family}'s Hugging Face class holds no KV cache (its forward takes no past "
                              "key values): generate() reruns the whole prefix for every new token, a "
                              "prefill of n + t tokens at step t, not a decode step against a cache "
                              "(estimate, and simulate on one GPU, size and time those reruns; a layout's or a serving engine's "
                              "decode steps are not modelled for it).")
        if self.profile.mla not in MLA_FORMS:
            raise ValueError(f"mla must be one of {', '.join(MLA_FORMS)}, got {self.profile.mla!r}.")
        if phase == "train" and self.profile.mla != "naive":  # the absorbed form has no backward here
            self.profile = dataclasses.replace(self.profile, mla="naive")
        if phase == "train":
            check_recomputed_modules(cfg, self.profile.recompute)
        if (phase == "train" and cfg.mla and self.profile.recomputes("up_projections")
                and self.profile.kernel().saves_as != "flash"):
            raise ConfigError(f"recompute {self.profile.recompute!r} recomputes latent attention's "
                              "up-projections around a fused attention kernel that keeps its own output and "
                              f"log-sum-exp, and attention {self.profile.attention!r} runs none here; use "
                              "--attention flash (or sdpa where it runs the flash kernel: torch's CPU sdpa "
                              "runs its math path when v_head_dim differs from the query and key width).")

    @cached_property
    def leaves(self) -> tuple[Leaf, ...]:
        per_param = self.profile.param_bytes
        # Quantized weights are an inference format: the training tree keeps them in its policy.
        fmt = self.profile.weight_format if self.phase != "train" else None
        check_weight_scope(self.cfg, fmt)
        sizes = {symbol: sp.Integer(value) for symbol, value in model_values(self.cfg).items()} \
            if fmt is not None and fmt.dtype == "exl2" else {}  # an EXL2 head's shape (leaf_format)
        leaves = [dataclasses.replace(leaf, per_param=per_param, weight_format=leaf_format(fmt, leaf, sizes)
                                      if fmt is None or fmt.quantizes(weight_kind(leaf)) else None)
                  for leaf in TreeBuilder(self.cfg, self.profile, self.phase).build()]
        check_whole_groups(fmt, _quantized_widths(self.cfg, leaves))
        leaves = [dataclasses.replace(leaf, recomputed=rerun is not None, rerun=rerun)
                  for leaf, rerun in ((leaf, self._rerun(leaf)) for leaf in leaves)]
        if self.phase == "train":
            step = B.OptimizerStep(self.parameter_runs(leaves), self.profile)
            leaves.append(Leaf(step, step.cost(), ONE, "optimizer", "optimizer", "step",
                               per_param=per_param))
        return tuple(leaves)

    def _rerun(self, leaf: Leaf) -> B.Cost | None:
        """What of this leaf's forward recomputation reruns in backward (None: nothing): all of
        it for every block of a layer under full recomputation (the leaves it checkpoints; the
        embedding, the final norm, the head and the loss run once, outside the checkpoints, and
        keep their saved tensors in the memory model: Megatron-LM's ParallelTransformer
        _checkpointed_forward wraps its layers only and runs the final LayerNorm after them,
        NVIDIA/Megatron-LM megatron/model/transformer.py at cbad126), for the attention core
        under selective (its kernel says so), for each norm and latent attention's RoPE under "deepseek"
        (spec.RECOMPUTED_PARTS); latent attention's up-projections and own norms, a part of its
        projections' leaf (LatentAttention.recomputed_part); the routed experts' SwiGLU under
        DeepSeek-V3's FP8 activations or their activation under "layernorm-moe-act", with the norm
        before them (Experts.recomputed_part, Norm.recomputed); under "torchtitan-op" all of a
        layer but its fused attention kernel and the matmuls it keeps (op_checkpoint.rerun)."""
        profile = self.profile
        if self.phase != "train":
            return None
        if profile.recompute in op_checkpoint.POLICIES:
            return op_checkpoint.rerun(leaf, profile.recompute)
        if profile.recompute == "full":
            return leaf.cost if leaf.checkpointed else None
        block = leaf.block
        if isinstance(block, B.AttentionCore) and block.kernel.recomputes_core:
            return leaf.cost
        if (isinstance(block, B.Norm) and block.recomputed) or (isinstance(block, B.HeadNorms)
                                                                and profile.recomputes("norms")):
            return leaf.cost
        if isinstance(block, B.RotaryEmbedding) and self.cfg.mla and profile.recomputes("up_projections"):
            return leaf.cost  # the RoPE applied to the up-projections' output, inside their checkpoint
        if (isinstance(block, (B.Router, B.Experts)) and profile.recomputes("moe_layer")) or \
                (isinstance(block, (B.LatentProjection, B.FeedForward)) and block.recomputed):
            return leaf.cost  # Megatron-Core's "moe" module: the MoE layer's forward again
        if isinstance(block, (B.LatentAttention, B.Experts)):
            return block.recomputed_part()
        return None

    def parameter_runs(self, leaves: Iterable[Leaf]) -> tuple[B.TensorRun, ...]:
        """The parameter tensors in registration order: leaves outside layers in tree order, each
        stack's layer in the implementation's order (facts.parameter_order), repeated L times (each
        kind of layer its count of times, one kind after the other)."""
        order = _PARAMETER_ORDERS[self.profile.facts.parameter_order]
        runs: list[B.TensorRun] = []
        outside: list[sp.Expr] = []
        layer: list[Leaf] = []

        def close_layer() -> None:
            if layer:
                tensors = tuple(t.elements for leaf in order(layer) for t in leaf.cost.tensors)
                runs.append(B.TensorRun(tensors, layer[0].count))
                layer.clear()

        for leaf in leaves:
            if leaf.in_layer:
                if outside:
                    runs.append(B.TensorRun(tuple(outside)))
                    outside = []
                if layer and (layer[0].stack, layer[0].kind) != (leaf.stack, leaf.kind):
                    close_layer()
                layer.append(leaf)
            else:
                close_layer()
                outside += [t.elements for t in leaf.cost.tensors] * int(leaf.copies)  # MTP depths: each its own
        close_layer()
        if outside:
            runs.append(B.TensorRun(tuple(outside)))
        return tuple(runs)

    def select(self, **fields) -> tuple[Leaf, ...]:
        """The leaves whose fields have these values; a tuple value means any of them
        (select(part="layer", name=("scores", "weighted_sum")))."""
        def matches(leaf: Leaf) -> bool:
            return all(getattr(leaf, k) in v if isinstance(v, tuple) else getattr(leaf, k) == v
                       for k, v in fields.items())
        return tuple(leaf for leaf in self.leaves if matches(leaf))

    def total(self, quantity: str, leaves: Iterable[Leaf] | None = None) -> sp.Expr:
        """Sum of one quantity over every leaf (or the leaves given)."""
        return sp.Add(*(leaf.total(quantity) for leaf in (self.leaves if leaves is None else leaves)))

    def variant_flops(self, name: str, leaves: Iterable[Leaf] | None = None) -> sp.Expr:
        """Forward matmul FLOPs with every block that has the variant `name` run that way."""
        return sp.Add(*(leaf.count * leaf.cost.variant_flops(name)
                        for leaf in (self.leaves if leaves is None else leaves)))

    def element_counts(self) -> dict[str, sp.Expr]:
        """Output elements of the non-matmul ops, per op kind, over the whole model."""
        out: dict[str, sp.Expr] = {}
        for leaf in self.leaves:
            for kind, count in leaf.cost.element_counts().items():
                out[kind] = out.get(kind, sp.Integer(0)) + leaf.count * count
        return out

    def layer_leaves(self) -> tuple[Leaf, ...]:
        return self.select(part="layer")

    def layer_total(self, quantity: str, names: tuple[str, ...]) -> sp.Expr:
        """A quantity summed over the layers' leaves of these names."""
        return self.total(quantity, self.select(part="layer", name=names))

    def attention_flops(self) -> sp.Expr:
        """The layers' attention matmuls (scores and weighted sum): the n^2 d term."""
        return self.layer_total("flops_matmul", ATTENTION_CORE)

    def projection_ffn_flops(self) -> sp.Expr:
        """The layers' Q/K/V, output and FFN matmuls: the n d^2 term."""
        return self.layer_total("flops_matmul", PROJECTIONS_AND_FFN)

    @cached_property
    def crossover(self) -> sp.Expr:
        """n* where the layers' attention matmuls (~n^2 d) equal their projections + FFN (~n d^2).

        Solved symbolically: attention = a n^2 and projections + FFN = c n (source length taken
        equal to the target length), so n* = c / a. DeepSeek-V4's compressed entries, floor(n / m)
        keys beside the n, are taken as n / m here (the remainder's keys left out).
        """
        difference = self.attention_flops() - self.projection_ffn_flops()
        difference = sp.expand(difference.xreplace({S.s: S.n}).replace(sp.floor, lambda x: x))
        quadratic, linear_coeff = difference.coeff(S.n, 2), difference.coeff(S.n, 1)
        if quadratic == 0:  # no attention layer (a pure Mamba-2 stack): attention never dominates
            return sp.oo
        return sp.factor(-linear_coeff / quadratic)


def model_values(cfg: ModelConfig) -> dict[sp.Symbol, int]:
    """The model dimensions' values."""
    return {getattr(S, symbol): value for symbol, value in cfg.dimensions().items()}


def workload_values(cfg: ModelConfig, workload: Workload) -> dict[sp.Symbol, int]:
    """The workload dimensions' values: n is the decoder (or only) side, s the encoder side."""
    return {getattr(S, symbol): value for symbol, value in workload.dimensions(cfg).items()}


def leaf_format(fmt: Any, leaf: Any, values: dict) -> Any:
    """The format a leaf's matrices are stored in: an EXL2 head's at its head_bits (values: the
    model's sizes, to give its matrix's shape); every other leaf the format as it is."""
    if fmt is None or fmt.dtype != "exl2" or not isinstance(leaf.block, B.LMHead) or not leaf.cost.matrices:
        return fmt
    out, inner, _ = leaf.cost.matrices[0]
    return dataclasses.replace(fmt, bits=exl2_head_bits(int(out.xreplace(values)), int(inner.xreplace(values))))
