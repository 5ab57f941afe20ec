"""One model + one workload -> every number `estimate` reports, as exact Python integers.

This is the library behind `python cli.py estimate` and costmodel.estimate(): parameters, FLOPs,
memory and the regime, in total and per block. Every value is a cost-tree expression evaluated
exactly; nothing here adds a formula of its own. The expressions are compiled to plain Python
once per model structure and cached (costmodel/compiled.py), so a later run needs no sympy;
`model`, `values` and `number()` give the symbolic side when asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

from . import compiled
from .json_units import JSON_UNITS
from .config import ModelConfig, Workload
from .defaults import has_attention
from .facts import facts_for
from .workload import logits_kept

#: What each row of the per-block table holds, and the cost quantity it sums.
ROW_QUANTITIES = (
    ("params", "params"),
    ("flops_forward", "flops_matmul"),
    ("flops_backward", "flops_matmul_backward"),
    ("flops_other", "flops_other"),
    ("saved_bytes", "saved_bytes"),
    ("kv_cache_bytes", "kv_cache_bytes"),
)
TOTALS = ("params", "flops_matmul", "flops_other", "flops_matmul_backward", "saved_bytes",
          "kv_cache_bytes", "bytes_matmul", "bytes_other", "bytes_moved")
MEMORY = ("weights", "gradients", "optimizer", "activations", "kv_cache", "buffers", "training_total",
          "inference_total", "generate_total")


#: The paths of the multi-token-prediction depths' leaves (leaves.py: the group "mtp").
MTP_PREFIX = "mtp."


@dataclass(frozen=True)
class BlockRow:
    """One leaf of the cost tree with its numbers summed over its repetitions."""

    path: str
    count: int
    params: int
    flops_forward: int
    flops_backward: int
    flops_other: int
    saved_bytes: int
    kv_cache_bytes: int
    part: str = ""  # the leaf's place (costmodel.leaf.Leaf): embedding, layer, stack, head, loss
    stack: str | None = None
    sublayer: str | None = None
    kind: str | None = None  # the layers it runs in when they differ (dense, moe, sliding, full)

    @property
    def empty(self) -> bool:
        return not any(getattr(self, field) for field, _ in ROW_QUANTITIES)


def _expressions(cfg: ModelConfig, workload: Workload) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every expression an Estimate reports, by name, and the constants beside them (paths,
    the crossover's formula and LaTeX, notes): what compiled.cached compiles once."""
    import sympy as sp

    from . import symbols as S
    from .memory import memory
    from .precision import param_bytes_note
    from .published import korthikanti_activation_bytes
    from .tree import CostModel, generate_logits_to_keep, profile_for

    model = CostModel(cfg, profile_for(cfg, workload))
    leaves = [leaf for leaf in model.leaves if leaf.part != "optimizer"]
    mem = memory(cfg, workload, model)
    exprs: dict[str, Any] = {}
    for i, leaf in enumerate(leaves):
        exprs[f"leaf{i}.count"] = leaf.count
        for field, quantity in ROW_QUANTITIES:
            exprs[f"leaf{i}.{field}"] = leaf.total(quantity)
    for quantity in TOTALS:
        exprs[f"total.{quantity}"] = model.total(quantity, leaves)
    from .layout.fp8 import fp8_blocks, fp8_weights  # what --fp8-param-gather holds in FP8 (Estimate.fp8_parameter_saving)

    exprs["total.fp8_params"] = sp.Add(*(leaf.copies * sum(rows * cols for rows, cols in fp8_weights(leaf.block, leaf.cost))
                                         for leaf in leaves if isinstance(leaf.block, fp8_blocks())))
    if cfg.moe:
        exprs["total.active_params"] = model.total("active_params", leaves)
        experts = next(leaf for leaf in leaves if leaf.name == "experts")
        exprs["moe.expert_flops_per_token"] = experts.block.expert_flops(1)
        exprs["moe.routed_slots"] = experts.block.tokens * S.k
    if cfg.n_window_layers:
        exprs["flops.windowed_kernel_forward"] = model.variant_flops("windowed", leaves)
    if any(leaf.rerun is not None for leaf in leaves):  # what --recompute reruns in backward (as layout/parts.py)
        exprs["flops.recomputed_forward"] = sp.Add(*(leaf.count * leaf.rerun.flops_matmul for leaf in leaves
                                                     if leaf.rerun is not None))
    if cfg.mla:
        decode = CostModel(cfg, model.profile, phase="decode")
        last_step = {S.c: S.LAST_CONTEXT}  # the step that brings the cache to n + T - 1 (as memory's)
        exprs["decode.flops_matmul"] = decode.total("flops_matmul").xreplace(last_step)
        exprs["decode.flops_absorbed"] = decode.variant_flops("absorbed").xreplace(last_step)
    if workload.weight_dtype:
        from .leaf import WEIGHT_PARTS

        prefill = CostModel(cfg, model.profile, phase="prefill")
        for part in WEIGHT_PARTS:
            exprs[f"quantized.{part}"] = prefill.total(part)
    for kind, count in model.element_counts().items():
        exprs[f"elements.{kind}"] = count
    for name in MEMORY:
        exprs[f"memory.{name}"] = getattr(mem, name)
    per_param = mem.param_bytes
    for name in ("weights", "gradients", "optimizer"):
        exprs[f"per_param.{name}"] = getattr(per_param, name)
    korthikanti, variant = korthikanti_activation_bytes(cfg.n_layers, workload.recompute,
                                                        workload.attention if has_attention(cfg) else "none")
    exprs["memory.korthikanti"] = korthikanti
    exprs["regime.attention"] = model.attention_flops()
    exprs["regime.linear"] = model.projection_ffn_flops()
    # n* = numerator / denominator; no attention layer: 1 / 0, an n* that never comes
    numerator, denominator = ((sp.Integer(1), sp.Integer(0)) if model.crossover == sp.oo
                              else sp.fraction(sp.together(model.crossover)))
    exprs["regime.crossover_numerator"] = numerator
    exprs["regime.crossover_denominator"] = denominator
    constants = {
        "leaves": [{"path": leaf.path, "part": leaf.part, "stack": leaf.stack,
                    "sublayer": leaf.sublayer, "kind": leaf.kind,
                    "checkpointed": leaf.checkpointed} for leaf in leaves],
        "crossover_formula": str(model.crossover),
        "crossover_latex": S.latex(model.crossover),
        "param_note": param_bytes_note(workload.precision, workload.optimizer, workload.dtype),
        "korthikanti_variant": variant,
        "generate_logits_to_keep": generate_logits_to_keep(cfg, workload.impl),
    }
    return exprs, constants


def structure_key(cfg: ModelConfig, workload: Workload) -> dict[str, Any]:
    """What the expressions depend on besides the symbols' values (the compiled cache's key)."""
    from .decode_codes import tree_options

    return {"model": cfg.structure(), "workload": {**workload.options(), **tree_options(cfg, workload)},
            "layers": cfg.n_layers}


class Estimate:
    """All numbers of one model and workload; evaluated on construction, without sympy when the
    compiled cache holds this structure."""

    def __init__(self, cfg: ModelConfig, workload: Workload, layout: Any = None):
        """layout: a costmodel.layout.Layout, for per-rank memory and communication ("parallel"
        in to_dict); None: one device, and no "parallel" key."""
        self.warnings = workload.check_fits(cfg)
        workload.check_expert_load(cfg)
        self.cfg = cfg
        self.workload = workload
        self.layout = layout
        evaluate, self.constants = compiled.cached(
            "estimate", structure_key(cfg, workload), lambda: _expressions(cfg, workload))
        self.numbers = evaluate({**cfg.dimensions(), **workload.dimensions(cfg)})

    def __repr__(self) -> str:
        memory = self.memory_numbers()
        from .config import show

        gib = 2**30
        return (f"<Estimate {show(self.cfg.name)}: {self.total('params'):,} parameters; seq_len "
                f"{self.workload.seq_len}, batch {self.workload.batch}, {self.workload.dtype}; training "
                f"{memory['training_total'] / gib:.2f} GiB, inference {memory['inference_total'] / gib:.2f} GiB, "
                f"forward {self.total('flops_matmul'):,} FLOPs>")

    def _repr_html_(self) -> str:
        """The `estimate` command's text, for notebooks."""
        import html

        from .tools_path import tool

        return f"<pre>{html.escape(tool('reports.text').render_estimate(self.to_dict(), self.held_rows))}</pre>"

    # The symbolic side, built only when asked for.
    @cached_property
    def model(self) -> Any:
        """The cost tree (costmodel.tree.CostModel): every block's sympy expressions, by path."""
        from .tree import CostModel, profile_for

        return CostModel(self.cfg, profile_for(self.cfg, self.workload))

    @cached_property
    def values(self) -> dict[Any, Any]:
        """Each symbol of the tree -> its value in this model and workload (sympy Integers)."""
        import sympy as sp

        from .evaluate import values

        return {k: sp.Integer(v) for k, v in values(self.cfg, self.workload).items()}

    @cached_property
    def memory(self) -> Any:
        """The memory's sympy expressions (costmodel.memory); memory_numbers() gives their values."""
        from .memory import memory

        return memory(self.cfg, self.workload, self.model)

    def number(self, expr: Any) -> int:
        """A sympy expression of the tree's symbols, evaluated exactly at this model and workload."""
        from .evaluate import exact

        return exact(expr, self.values)

    # Numbers.
    def total(self, quantity: str) -> int:
        """The whole model's value of one Cost field ("params", "flops_matmul", "saved_bytes", ...)."""
        return self.numbers[f"total.{quantity}"]

    @cached_property
    def tokens(self) -> int:
        """Tokens per batch on the decoder (or only) side: the per-token denominator."""
        dims = self.workload.dimensions(self.cfg)
        return dims["b"] * dims["n"]

    @cached_property
    def all_rows(self) -> list[BlockRow]:
        """One row per leaf of the tree (the optimizer aside), in tree order."""
        n = self.numbers
        return [
            BlockRow(leaf["path"], n[f"leaf{i}.count"],
                     *(n[f"leaf{i}.{field}"] for field, _ in ROW_QUANTITIES),
                     part=leaf["part"], stack=leaf["stack"], sublayer=leaf["sublayer"],
                     kind=leaf["kind"])
            for i, leaf in enumerate(self.constants["leaves"])
        ]

    @cached_property
    def rows(self) -> list[BlockRow]:
        """The rows with something to show (a buffer-only or loss-scalar leaf has nothing)."""
        return [row for row in self.all_rows if not row.empty]

    @property
    def held_rows(self) -> list[BlockRow]:
        """The rows with their saved bytes replaced by what they hold (held_bytes): the per-block
        table, whose saved column then sums to the activations."""
        import dataclasses

        return [row for row in (dataclasses.replace(row, saved_bytes=held)
                                for row, held in zip(self.all_rows, self.held_bytes()))
                if not row.empty]

    def held_bytes(self) -> list[int]:
        """What each row (of all_rows) holds for backward, summing to the activations: its saved
        bytes, except under full recomputation, where a layer's leaves are rebuilt one layer at a
        time: only the largest layer's (costmodel.memory.activation_bytes) counts, once."""
        leaves = self.constants["leaves"]
        layers: dict[tuple[Any, Any], int] = {}
        for row, leaf in zip(self.all_rows, leaves):
            if leaf.get("checkpointed") and row.count:
                key = (row.stack, row.kind)
                layers[key] = layers.get(key, 0) + row.saved_bytes // row.count
        rebuilt = max(layers, key=layers.__getitem__) if layers else None
        return [row.saved_bytes if not leaf.get("checkpointed") else
                row.saved_bytes // row.count if (row.stack, row.kind) == rebuilt and row.count else 0
                for row, leaf in zip(self.all_rows, leaves)]

    def _rows_where(self, **fields: Any) -> list[BlockRow]:
        return [row for row in self.all_rows if all(getattr(row, k) == v for k, v in fields.items())]

    def params(self) -> dict[str, Any]:
        """Totals and per layer; where a stack's layers differ, one entry per kind of layer
        ("decoder.dense", "decoder.moe", ...). A mixture of experts adds `active`: the parameters
        one token's forward uses (every routed expert it is not sent to left out)."""
        per_layer = {}
        for stack in ("encoder", "decoder"):
            layer = self._rows_where(part="layer", stack=stack)
            kinds = list(dict.fromkeys(r.kind for r in layer))
            for kind in kinds:
                rows = [r for r in layer if r.kind == kind]
                key = stack if kind is None else f"{stack}.{kind}"
                per_layer[key] = sum(r.params for r in rows) // rows[0].count if rows[0].count else 0
        out = {"total": self.total("params")}
        if "total.active_params" in self.numbers:
            out["active"] = self.numbers["total.active_params"]
        # the multi-token-prediction depths sit on the head's part (the last pipeline stage,
        # leaves.py) but are not the output head: their own entry
        head = self._rows_where(part="head")
        mtp = sum(r.params for r in head if r.path.startswith(MTP_PREFIX))
        if mtp:
            out["mtp"] = mtp
        return {
            **out,
            "embeddings": sum(r.params for r in self._rows_where(part="embedding")),
            "head": sum(r.params for r in head) - mtp,
            "per_layer": per_layer,
            "by_block": {r.path: r.params for r in self.rows if r.params},
        }

    def flops(self) -> dict[str, Any]:
        """to_dict()'s "flops": forward, backward and training FLOPs, per token and by block."""
        forward = self.total("flops_matmul")
        backward = self.total("flops_matmul_backward")
        return {**self._flops(forward, backward), **self._flop_variants(),
                "logits": logits_kept(self.workload.logits_to_keep)}

    def _flop_variants(self) -> dict[str, Any]:
        """What a windowed kernel would compute, and MLA's decode step computed and absorbed."""
        n, out = self.numbers, {}
        if "flops.recomputed_forward" in n:
            out["recomputed_forward"] = n["flops.recomputed_forward"]
            out["recomputed_note"] = (
                f"the matmuls --recompute {self.workload.recompute} reruns in backward: not in training above "
                "(the model FLOPs MFU divides by); the executed FLOPs (HFU's) are training plus these")
        if "flops.windowed_kernel_forward" in n:
            out["windowed_kernel_forward"] = n["flops.windowed_kernel_forward"]
            out["windowed_kernel_note"] = (
                "forward above: eager computes every score of a sliding layer and masks; this is "
                "what a causal kernel with the window computes (query i attends min(i, w) keys)")
        if "decode.flops_matmul" in n:
            out["decode_step"] = {
                "context": self.workload.dimensions(self.cfg)["c"],
                "forward": n["decode.flops_matmul"],
                "forward_absorbed": n["decode.flops_absorbed"],
                "note": "forward: as transformers computes it, every cached latent up-projected by "
                        "kv_b_proj each step; forward_absorbed: W_UK folded into the queries and "
                        "W_UV after the weighted sum (inference engines; stated, not measured)",
            }
        return out

    def _flops(self, forward: int, backward: int) -> dict[str, Any]:
        return {
            "forward": forward,
            "backward": backward,
            "training": forward + backward,
            "forward_per_token": forward // self.tokens,
            "training_per_token": (forward + backward) // self.tokens,
            "other_forward": self.total("flops_other"),
            "by_block": {r.path: r.flops_forward for r in self.rows if r.flops_forward},
            "other_by_block": {r.path: r.flops_other for r in self.rows if r.flops_other},
            "other_elements": {name.split(".", 1)[1]: value for name, value in self.numbers.items()
                               if name.startswith("elements.")},
        }

    def quantized_weights(self) -> dict[str, Any]:
        """The inference weights by part when --weight-dtype quantizes them."""
        n = self.numbers
        w = self.workload
        parts = {name: n[f"quantized.weight_{key}_bytes"] for name, key in (
            ("data", "data"), ("scales", "scale"), ("zeros", "zero"), ("tables", "table"),
            ("unquantized", "unquantized"))}
        return {"format": w.weight_format.label,
                **parts, "total": sum(parts.values())}

    @property
    def fp8_parameter_saving(self) -> int:
        """Bytes of the whole model's weights not held under the layout's --fp8-param-gather (its FP8
        layers' parameters one byte each, no bf16 copy: layout/fp8.py); 0 without it. The training
        lines (weights, training total) subtract it; inference is served without the training layout."""
        if self.layout is None or not self.layout.fp8_param_gather or self.layout.framework == "fsdp2":
            return 0  # (FSDP2's float8 all-gather keeps its shards as they were: layout/fp8_options.py)
        from .layout.fp8 import fp8_parameter_saving

        return fp8_parameter_saving(self.numbers["per_param.weights"], self.numbers["total.fp8_params"])

    def memory_numbers(self) -> dict[str, Any]:
        """to_dict()'s "memory": weights, gradients, optimizer state, activations, KV cache, in bytes."""
        n = self.numbers
        out = {name: n[f"memory.{name}"] for name in MEMORY}
        out["bytes_per_param"] = {
            "weights": n["per_param.weights"],
            "gradients": n["per_param.gradients"],
            "optimizer": n["per_param.optimizer"],
            "note": self.constants["param_note"],
        }
        saving = self.fp8_parameter_saving
        if saving:
            from .layout.fp8 import FP8_PARAM_BYTES

            out["weights"] -= saving
            out["training_total"] -= saving
            out["bytes_per_param"]["fp8_weights"] = FP8_PARAM_BYTES
            out["fp8_parameters"] = n["total.fp8_params"]
        # which positions' logits each inference figure holds (validate/FINDINGS.md, session 19)
        out["logits"] = {"inference_total": logits_kept(self.workload.logits_to_keep),
                         "generate_total": logits_kept(self.constants["generate_logits_to_keep"])}
        out["korthikanti_2022_activations"] = n["memory.korthikanti"]
        out["korthikanti_2022_variant"] = self.constants["korthikanti_variant"]
        out["activations_by_block"] = {}
        for row, held in zip(self.all_rows, self.held_bytes()):
            if held:
                out["activations_by_block"][row.path] = out["activations_by_block"].get(row.path, 0) + held
        if self.workload.weight_dtype:
            out["quantized_weights"] = self.quantized_weights()
        if self.workload.kv_dtype and self.cfg.n_decoder_layers:  # an encoder keeps no cache (a warning says so)
            out["kv_cache_dtype"] = f"{self.workload.kv_dtype}: one byte per element and two fp32 scales per layer"
        if self.cfg.n_decoder_layers and not facts_for(self.workload.impl, self.cfg.family).kv_cache_held:
            out["kv_cache_note"] = (
                "the class holds none: generation reruns the decoder over the prompt and the tokens so far "
                "at every step, and the generation line is its last step's, a prefill of n + T - 1 tokens")
        elif self.cfg.n_window_layers:
            out["kv_cache_note"] = (
                "sliding-window layers hold what Hugging Face's cache holds: the whole prompt after "
                "the prefill (T <= 1, no decode step: the w - 1 tokens it keeps are a view whose storage is the prefill's "
                "keys and values), min(n + T - 1, w) tokens once decoding has begun")
        return out

    @property
    def crossover(self) -> Fraction | float:
        """n*, or infinity where no attention layer makes one (a pure Mamba-2 stack)."""
        n = self.numbers
        if not n["regime.crossover_denominator"]:
            return float("inf")
        return Fraction(n["regime.crossover_numerator"], n["regime.crossover_denominator"])

    def regime(self) -> dict[str, Any]:
        """to_dict()'s "regime": the crossover sequence length, and whether attention or the
        projections dominate."""
        value = self.crossover
        attention, linear = self.numbers["regime.attention"], self.numbers["regime.linear"]
        return {
            "crossover_seq_len": float(value),
            "crossover_seq_len_exact": str(value),
            "crossover_formula": self.constants["crossover_formula"],
            "crossover_latex": self.constants["crossover_latex"],
            "attention_flops": attention,
            "projection_ffn_flops": linear,
            "attention_share": attention / (attention + linear) if attention + linear else 0.0,  # mamba2: 0 + 0
            "dominant": ("attention (n^2 d)" if attention > linear else "projections and FFN (n d^2)" if linear
                         else "neither (only Mamba-1 mixers)" if self.cfg.n_mixer_layers("mamba1")
                         else "neither (only Mamba-2 mixers)"),  # mamba2: no attention, projection or FFN leaf
        }

    def moe(self) -> dict[str, Any]:
        """A mixture of experts' routing: tokens and forward FLOPs per expert in each expert layer
        (balanced, or the workload's expert_load), which the totals do not depend on."""
        cfg, w, n = self.cfg, self.workload, self.numbers
        slots = n["moe.routed_slots"]
        load = w.expert_load or (1,) * cfg.n_experts
        tokens = [Fraction(slots) * Fraction(x) / Fraction(sum(load)) for x in load]
        per_token = n["moe.expert_flops_per_token"]
        number = lambda x: int(x) if x.denominator == 1 else float(x)  # noqa: E731
        return {
            "experts": cfg.n_experts, "top_k": cfg.top_k, "expert_layers": cfg.n_moe_layers,
            "dense_layers": cfg.n_decoder_layers - cfg.n_moe_layers,
            "routed_slots_per_layer": slots,
            "load": "balanced" if w.expert_load is None else "given",
            "tokens_per_expert": [number(t) for t in tokens],
            "expert_flops_forward": [number(t * per_token) for t in tokens],
            "busiest_expert_flops_forward": number(max(tokens) * per_token),
            "note": "no capacity limit: every routed slot runs one expert, so the totals do not "
                    "depend on the routing; the load per expert does (time, expert parallelism)",
        }

    def inputs(self) -> dict[str, Any]:
        """to_dict()'s "inputs": the model and the workload's fields as they were used."""
        w = self.workload
        quantized = {k: getattr(w, k) for k in ("weight_dtype", "weight_group", "weight_bits", "weight_dtype_source", "kv_dtype")
                     if getattr(w, k) is not None}
        return {**self._inputs(), **quantized}

    def _inputs(self) -> dict[str, Any]:
        w = self.workload
        return {
            "model": self.cfg.name,
            "family": self.cfg.family,
            "architecture": self.cfg.architecture,
            "seq_len": w.seq_len,
            "tgt_len": w.decoder_len if self.cfg.architecture == "encoder-decoder" else None,
            "batch": w.batch,
            "dtype": w.dtype,
            "impl": w.impl,
            "attention": w.attention,
            "recompute": w.recompute,
            "gen_tokens": w.gen_tokens,
            "optimizer": w.optimizer,
            "precision": w.precision,
            "mtp": self.cfg.mtp_layers,  # multi-token prediction depths (--mtp), 0 without
        }

    @cached_property
    def parallel(self) -> Any:
        """The layout's per-rank numbers (costmodel.layout.ParallelEstimate), or None."""
        if self.layout is None:
            return None
        from .layout import ParallelEstimate

        # a training layout's ranks: in the training dtype beside the inference formats (Workload.for_training)
        return ParallelEstimate(self.cfg, self.workload.for_training(asked=True), self.layout)

    def to_dict(self) -> dict[str, Any]:
        """Every number, exactly as `estimate --json` prints it (a crossover that never comes, a pure
        Mamba-2 stack's n*, as null: JSON has no infinity)."""
        from .plain import finite

        data = {
            "inputs": self.inputs(),
            "params": self.params(),
            "flops": self.flops(),
            "memory": self.memory_numbers(),
            "regime": self.regime(),
            "units": JSON_UNITS["estimate"],
        }
        if self.cfg.moe:
            data["moe"] = self.moe()
        if self.parallel is not None:
            data["parallel"] = self.parallel.to_dict()
            if self.layout.offload != "none":
                from .offload import deepspeed_figures

                data["parallel"]["deepspeed_estimator"] = deepspeed_figures(
                    self.layout, self.total("params"), self.largest_module_params())
        return finite(data)

    def largest_module_params(self) -> int | None:
        """DeepSpeed's "largest layer": the most parameters one module holds itself. The tree
        knows it where it is the token embedding, the untied output projection (V x d), or an MoE
        layer's routed experts (transformers keeps them as one module's stacked tensors), and no
        other block of a layer (one or several modules) holds more: every real model here. None
        otherwise (a tiny vocabulary). tests/test_offload.py checks it on the classes transformers builds."""
        tables = [row.params for row in self.all_rows if row.part in ("embedding", "head")]
        experts = [row.params // row.count for row in self.all_rows
                   if row.path.endswith(".experts") and row.count]
        known = max(tables + experts, default=0)
        others = [row.params // row.count for row in self.all_rows
                  if row.part == "layer" and row.count and not row.path.endswith(".experts")]
        return known if all(value <= known for value in others) else None

    def blocks(self) -> Any:
        """One row per block (a pandas DataFrame): the CLI table's columns as exact integers."""
        import pandas as pd

        columns = ["path", "count", *(field for field, _ in ROW_QUANTITIES)]
        frame = pd.DataFrame([[getattr(r, c) for c in columns] for r in self.rows], columns=columns)
        forward = self.total("flops_matmul")
        frame.insert(frame.columns.get_loc("flops_forward") + 1, "flops_share",
                     frame["flops_forward"] / forward if forward else 0.0)
        return frame.astype({c: "int64" for c in columns[1:] if frame[c].max() < 2**63}
                            if len(frame) else {})
