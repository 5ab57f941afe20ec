"""The numbers behind the figures and tables, all taken from the cost tree.

Nothing here types a cost formula: every quantity is a CostModel leaf or total (grouped by path),
a costmodel.memory expression, or CostModel.crossover, evaluated exactly (costmodel.evaluate.exact)
or over arrays (costmodel.evaluate.Sweep). numpy is imported lazily; matplotlib never.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import sympy as sp

from costmodel import symbols as S
from costmodel.config import ConfigError, ModelConfig, Workload
from costmodel.evaluate import Sweep, exact, exact_rational, values
from costmodel.memory import memory
from costmodel.tree import CostModel, model_values, profile_for

from .output import ReportInputError

HERE = Path(__file__).resolve().parent
GPUS_FILE = HERE / "gpus.json"
CONTEXTS_FILE = HERE / "contexts.json"

# ---------------------------------------------------------------------------------------------
# Models


def load_model(name: str) -> ModelConfig:
    """A config file by path (a name ending in .json, or any path that exists: a file always wins
    over a preset alias of the same spelling), else a preset by name or alias, or a Hub id (org/name:
    its config.json from the local cache first), as every other command's --model
    (costmodel.api.load_model)."""
    from costmodel.api import load_model as load_named_or_path
    from costmodel.presets import load_config_file

    try:
        if name.endswith(".json") or Path(name).exists():
            return load_config_file(name)
        return load_named_or_path(name)
    except ConfigError as error:
        raise ReportInputError(str(error)) from None


def model_names(text: str) -> list[str]:
    """'gpt2,llama2-7b' -> ['gpt2', 'llama2-7b'] (duplicates and blanks rejected)."""
    names = [part.strip() for part in text.split(",")]
    if not names or any(not part for part in names):
        raise ReportInputError(f"--models {text!r}: give model names separated by commas.")
    if len(set(names)) != len(names):
        raise ReportInputError(f"--models {text!r}: a model is named twice.")
    return names


def make_workload(**options: Any) -> Workload:
    try:
        return Workload(**options)
    except ConfigError as error:
        raise ReportInputError(str(error)) from None


@lru_cache(maxsize=None)
def usual_contexts() -> dict[str, dict[str, Any]]:
    """Each preset's usual context length (data: reports/contexts.json)."""
    data = json.loads(CONTEXTS_FILE.read_text())
    return {k: v for k, v in data.items() if not k.startswith("_")}


def usual_context(cfg: ModelConfig) -> int:
    """The length a preset is usually run at; the config's max_positions for other models."""
    entry = usual_contexts().get(cfg.name)
    return int(entry["tokens"]) if entry else cfg.max_positions


@lru_cache(maxsize=None)
def gpus() -> list[dict[str, Any]]:
    """GPU memory capacities, largest first: the roofline presets (costmodel/hardware, one source
    for their capacity) plus the consumer cards of reports/gpus.json."""
    from costmodel.hardware import HARDWARE_DIR

    presets = []
    hidden = set(json.loads(GPUS_FILE.read_text()).get("hidden_presets", []))
    for path in sorted(HARDWARE_DIR.glob("*.json")):
        if path.stem in hidden:
            continue
        data = json.loads(path.read_text())
        label = data.get("description", data["name"]).removeprefix("NVIDIA ")
        presets.append({"name": label, "memory_gib": data["memory_bytes"] / 2**30,
                        "memory_bytes": data["memory_bytes"]})
    extra = json.loads(GPUS_FILE.read_text())["gpus"]
    return sorted(presets + extra, key=lambda g: (-g["memory_bytes"], g["name"]))


# ---------------------------------------------------------------------------------------------
# Grouping leaves


#: Where the FLOPs go: (label, last path names). Every leaf not named falls into the last group.
FLOP_GROUPS = (
    ("QKV projections", ("qkv", "mla")),
    ("attention output projection", ("out",)),
    ("attention scores QK^T", ("scores",)),
    ("weighted sum of values", ("weighted_sum",)),
    ("FFN", ("mlp", "router", "experts", "shared_expert", "shared_expert_gate")),
    ("output projection to the vocabulary", ("lm_head", "softcap")),
    ("norms, softmax, adds and the rest", ()),
)

PARAM_GROUPS = (
    ("embeddings", ()),  # paths under an embedding group
    ("attention", ("qkv", "mla", "out", "relative_bias")),
    ("FFN", ("mlp", "router", "experts", "shared_expert", "shared_expert_gate")),
    ("norms", ("norm", "final_norm")),
    ("output head", ("lm_head", "pooler")),
)

def flop_group_expressions(model: CostModel) -> dict[str, sp.Expr]:
    """Forward FLOPs (matmul + other ops) per FLOP_GROUPS label."""
    named = {name: label for label, names in FLOP_GROUPS for name in names}
    rest = FLOP_GROUPS[-1][0]
    out = {label: sp.Integer(0) for label, _ in FLOP_GROUPS}
    for leaf in model.leaves:
        label = named.get(leaf.name, rest)
        out[label] += leaf.total("flops_matmul") + leaf.total("flops_other")
    return out


def param_expressions(cfg: ModelConfig) -> dict[str, sp.Expr]:
    """Parameters per PARAM_GROUPS label (anything else lands in 'norms'), "total" and, for a
    mixture of experts, "active" (per token): the cost tree's expressions of the model's sizes."""
    model = CostModel(cfg)
    named = {name: label for label, names in PARAM_GROUPS for name in names}
    out: dict[str, sp.Expr] = {label: sp.Integer(0) for label, _ in PARAM_GROUPS}
    for leaf in model.leaves:
        embedding = leaf.part == "embedding" or leaf.name == "project_out"
        out["embeddings" if embedding else named.get(leaf.name, "norms")] += leaf.total("params")
    out["total"] = model.total("params")
    if cfg.moe:
        out["active"] = model.total("active_params")
    sizes = set(model_values(cfg))
    for name, expr in out.items():
        if not sp.sympify(expr).free_symbols <= sizes:
            raise ValueError(f"{cfg.name}: {name} parameters depend on more than the model's sizes: {expr}")
    return out


def param_numbers(cfg: ModelConfig) -> dict[str, int]:
    """param_expressions' exact values for the config. Compiled to plain Python once per model
    structure (costmodel/compiled.py, as estimate's numbers): `plot params` counts every preset's
    parameters, and building each one's cost tree with sympy took most of its ~4 s."""
    from costmodel import compiled

    key = {"model": cfg.structure(), "layers": cfg.n_layers}
    evaluate, _ = compiled.cached("params", key, lambda: (param_expressions(cfg), {}))
    dimensions = cfg.dimensions()
    # every argument must be given; the expressions hold none but the model's sizes (checked above)
    numbers = evaluate({**dict.fromkeys(compiled.ARGUMENTS, 1), **dimensions})
    for name, value in numbers.items():
        if type(value) is not int:
            raise ValueError(f"{cfg.name}: {name} parameters did not evaluate to an integer: {value}")
    return numbers


def param_groups(cfg: ModelConfig) -> dict[str, int]:
    """Exact parameters per PARAM_GROUPS label (anything else lands in 'norms')."""
    numbers = param_numbers(cfg)
    return {label: numbers[label] for label, _ in PARAM_GROUPS}


def total_params(cfg: ModelConfig) -> int:
    return param_numbers(cfg)["total"]


def kv_cache_per_token(cfg: ModelConfig, long_context: int) -> tuple[int, float, int]:
    """(bytes per token with every token cached, bytes per token averaged over a long context
    after one decode step, that context: long_context or the model's if shorter) of the KV
    cache in bf16, from the cost tree."""
    from costmodel.estimation import Estimate

    short = Estimate(cfg, Workload(seq_len=1, dtype="bf16")).memory_numbers()["kv_cache"]
    tokens = min(long_context, cfg.max_positions)
    held = Estimate(cfg, Workload(seq_len=tokens - 1, gen_tokens=1, dtype="bf16"))
    return short, held.memory_numbers()["kv_cache"] / tokens, tokens


def attention_kind(cfg: ModelConfig) -> str:
    """MHA, GQA (its KV heads), MQA or MLA, and its windows, as the figure labels them."""
    from costmodel.facts import facts_for

    if cfg.mla:
        kind = "MLA"
    elif cfg.n_kv_heads == cfg.n_heads:
        kind = "MHA"
    elif cfg.n_kv_heads == 1:
        kind = "MQA"
    else:
        kind = f"GQA {cfg.n_kv_heads}"
    if facts_for("hf", cfg.family).kv_cache_heads == "query" and cfg.n_kv_heads != cfg.n_heads:
        kind += ", cached as MHA"
    if cfg.n_window_layers:
        some = "" if cfg.n_window_layers == cfg.n_decoder_layers else \
            f" on {cfg.n_window_layers} of {cfg.n_decoder_layers} layers"
        kind += f", window {cfg.sliding_window:,}{some}"
    return kind


def active_params(cfg: ModelConfig) -> int | None:
    """A mixture of experts' parameters per token (None for a dense model)."""
    return param_numbers(cfg)["active"] if cfg.moe else None


def crossover(cfg: ModelConfig) -> tuple[sp.Expr, float]:
    """n* (symbolic, from CostModel.crossover) and its value for the config."""
    model = CostModel(cfg)
    if model.crossover == sp.oo:  # no attention layer: attention never dominates
        return model.crossover, float("inf")
    value = exact_rational(model.crossover, model_values(cfg))
    return model.crossover, float(value)


# ---------------------------------------------------------------------------------------------
# Sweeps over n


def geometric(start: int, stop: int, points: int) -> "np.ndarray":
    """Integer lengths spread evenly on a log axis from start to stop (inclusive, unique)."""
    import numpy as np

    return np.unique(np.rint(np.geomspace(start, stop, points)).astype(np.int64))


def flop_shares(cfg: ModelConfig, ns: "np.ndarray", batch: int = 1) -> dict[str, "np.ndarray"]:
    """Each FLOP group's share of the forward FLOPs at each n (source length = n)."""
    import numpy as np

    model = CostModel(cfg)
    sweep = Sweep(model, flop_group_expressions(model))
    groups = sweep(n=ns, b=batch)
    total = np.sum(list(groups.values()), axis=0)
    return {label: groups[label] / total for label in sweep.names}


@dataclass(frozen=True)
class MemoryCurves:
    """Bytes vs n for one model (b, dtype fixed): activations under three profiles, KV cache."""

    ns: Any
    activations: dict[str, Any]  # label -> bytes
    kv_cache: Any
    states: int  # weights + gradients + optimizer states (training)
    weights: int
    dtype: str
    batch: int


MEMORY_VARIANTS = (
    ("eager attention", {"attention": "eager", "recompute": "none"}),
    ("flash attention (no n x n term)", {"attention": "flash", "recompute": "none"}),
    ("flash + full recomputation", {"attention": "flash", "recompute": "full"}),
)


def memory_curves(cfg: ModelConfig, ns: "np.ndarray", batch: int = 1, dtype: str = "bf16",
                  impl: str = "hf") -> MemoryCurves:
    """Training activations per MEMORY_VARIANTS and the inference KV cache, over n."""
    activations = {}
    kv_cache = states = weights = None
    for label, options in MEMORY_VARIANTS:
        workload = Workload(batch=batch, dtype=dtype, impl=impl, **options)
        model = CostModel(cfg, profile_for(cfg, workload))
        mem = memory(cfg, workload, model)
        sweep = Sweep(model, {"activations": mem.activations, "kv_cache": mem.kv_cache})
        result = sweep(n=ns, b=batch, e=workload.bytes_per_element)
        activations[label] = result["activations"]
        kv_cache = result["kv_cache"]
        subs = values(cfg, workload)
        states = exact(mem.weights + mem.gradients + mem.optimizer, subs)
        weights = exact(mem.weights, subs)
    return MemoryCurves(ns, activations, kv_cache, states, weights, dtype, batch)


# ---------------------------------------------------------------------------------------------
# The regime map


def width_scaled(cfg: ModelConfig) -> dict[sp.Symbol, sp.Expr]:
    """The config's shape scaled in width: d free; every width that grows with it (d_ff, the
    experts', the shared experts', the latent ranks, the heads) kept in its ratio to d, so the
    config itself sits at d = d_model; head widths, windows, expert counts and layers kept."""
    fixed: dict[sp.Symbol, sp.Expr] = {symbol: sp.Integer(value) for symbol, value in model_values(cfg).items()}
    del fixed[S.d]
    for symbol in (S.d_ff, S.d_x, S.d_s, S.r_q, S.r_kv, S.d_e, S.h, S.h_kv):
        fixed[symbol] = fixed[symbol] / cfg.d_model * S.d
    return fixed


def attention_share_plane(cfg: ModelConfig) -> Any:
    """The layers' attention share of matmul FLOPs as a function f(n, d) over arrays, for the
    config's shape scaled in width (source length = n, b = 1).

    The expressions are the cost tree's (attention_flops, linear_flops); only the model symbols
    are replaced by their width-scaled values before lambdify.
    """
    model = CostModel(cfg)
    fixed = {**width_scaled(cfg), S.b: sp.Integer(1), S.s: S.n}
    attention = model.attention_flops().xreplace(fixed)
    linear = model.projection_ffn_flops().xreplace(fixed)
    return sp.lambdify((S.n, S.d), attention / (attention + linear), modules="numpy", cse=True)


def crossover_in_width(cfg: ModelConfig) -> sp.Expr:
    """CostModel.crossover for the config's shape scaled in width: n* as a multiple of d."""
    return sp.simplify(CostModel(cfg).crossover.xreplace(width_scaled(cfg)))


def multiple_of_d(expr: sp.Expr) -> str:
    """'6 d' or '193/32 d = 6.03 d' for an expression c*d, '47/4 d + 4 = 11.75 d + 4' for c*d + e
    (a router's or a latent's width that does not scale with d); the expression itself otherwise."""
    if expr == sp.oo:  # CostModel.crossover without an attention layer
        return "none (no attention layer)"
    expr = sp.expand(expr)
    if expr.free_symbols != {S.d} or not expr.is_polynomial(S.d) or sp.degree(expr, S.d) != 1:
        return str(expr)
    coefficient, constant = expr.coeff(S.d, 1), expr.coeff(S.d, 0)
    text, decimal = f"{coefficient} d", f"{float(coefficient):.2f} d"
    if constant:
        sign = "+" if constant > 0 else "-"
        text += f" {sign} {abs(constant)}"
        decimal += f" {sign} {float(abs(constant)):.3g}"
    return text if coefficient.is_Integer and constant.is_Integer else f"{text} = {decimal}"
