"""The seeds' claims, checked against the cost tree and, where they can be, against measurements.

Each claim states what the seeds (and Vaswani et al. 2017) say, the value the cost tree gives,
the measured value where one can be measured (validate/'s reference model under FlopCounterMode,
saved-tensor hooks or the KV cache), and whether it holds. A claim holds when the tree's value
says what the claim says and, where measured, the measurement equals the tree's value.

The comparison formulas of the papers are NOT the cost model: they live in one labelled section
below, each written once, and are used only to compare with the tree (recurrent and convolutional
layers, which the tree does not model, and the seeds' rules of thumb).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import sympy as sp

from costmodel import symbols as S
from costmodel.config import ModelConfig
from costmodel.evaluate import exact
from costmodel.tree import CostModel, model_values

from .measured import measure_by_module, measure_ffn_ratio, measure_square_saved
from .series import load_model
from .text import binary_bytes, count, si

# =============================================================================================
# The papers' comparison formulas (NOT the cost model). Each is written once, here.
# =============================================================================================

k = sp.Symbol("k", integer=True, positive=True)  # convolution kernel width (Vaswani et al.)
L = sp.Symbol("L", integer=True, positive=True)  # layers, in the seeds' rules of thumb
N_layers = sp.Symbol("N", integer=True, positive=True)  # layers holding a KV cache (the seeds' N)

#: A recurrent layer h_i = f(W x_i + U h_{i-1}): two d x d products per position, 2 FLOPs per
#: multiply-add (the cost tree's convention). Vaswani et al. 2017, Table 1: O(n d^2).
RECURRENT_LAYER_FLOPS = 2 * S.n * 2 * S.d**2
#: A convolution of width k from d to d channels over n positions. Table 1: O(k n d^2).
CONVOLUTION_LAYER_FLOPS = 2 * S.n * k * S.d**2
#: The seeds' rule of thumb for a Transformer's parameters: 12 L d^2 in the layers ...
SEEDS_LAYER_PARAMS = 12 * L * S.d**2
#: ... plus the embeddings: V d per V x d table (Llama: input and output tables, 2 V d).
tables = sp.Symbol("tables", integer=True, positive=True)
SEEDS_EMBEDDING_PARAMS = tables * S.V * S.d
#: The seeds: a KV cache holds 2 N t d numbers (keys and values, N layers, t tokens).
SEEDS_KV_NUMBERS = 2 * N_layers * S.n * S.d
#: Table 1's other columns, quoted (not costs): sequential operations and maximum path length.
TABLE1_QUOTED = {
    "self-attention": ("O(n^2 d)", "O(1)", "O(1)"),
    "recurrent": ("O(n d^2)", "O(n)", "O(n)"),
    "convolutional": ("O(k n d^2)", "O(1)", "O(log_k n)"),
}

# =============================================================================================

VASWANI_D = 512
TRANSLATION_N = 50  # the seeds' translation example: n ~ 50 tokens
LONG_N = 4096  # the seeds' long-context example
KERNEL = 3  # the convolution width used for Table 1's numbers

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Claim:
    """One claim and its check."""

    key: str
    statement: str
    source: str
    tree: str  # the cost tree's value, formatted
    measured: str  # the measured value, formatted ("" when not measurable, or not measured)
    holds: bool
    note: str = ""
    numbers: dict[str, Any] = field(default_factory=dict)  # exact values for --json

    def __post_init__(self) -> None:
        object.__setattr__(self, "holds", bool(self.holds))  # sympy's true/false -> bool

    @property
    def mark(self) -> str:
        return "\u2713" if self.holds else "\u2717"

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key, "holds": self.holds, "statement": self.statement,
            "source": self.source, "tree": self.tree, "measured": self.measured,
            "note": self.note, "numbers": self.numbers,
        }


def embedding_tables(cfg: ModelConfig) -> int:
    """V x d tables a config holds: the input table, an output table unless tied (LM head only),
    a second input table for an encoder-decoder that does not share one."""
    untied_head = cfg.head == "lm" and not cfg.tie_embeddings
    unshared = cfg.architecture == "encoder-decoder" and not cfg.share_embeddings
    return 1 + int(untied_head) + int(unshared)


def seeds_rule(cfg: ModelConfig) -> int:
    """The seeds' rule of thumb for a config: 12 L d^2 + (V x d tables) V d, L all layers."""
    return exact(SEEDS_LAYER_PARAMS + SEEDS_EMBEDDING_PARAMS,
                 {L: cfg.n_layers, S.d: cfg.d_model, S.V: cfg.vocab_size, tables: embedding_tables(cfg)})


# ---------------------------------------------------------------------------------------------
# The models the claims are about


def seeds_transformer(vocab: int = 32000) -> ModelConfig:
    """The seeds' Transformer (base: d 512, h 8, d_ff 2048, 6 + 6 layers) with |V| = vocab."""
    return load_model("transformer-base").replace(name=f"transformer-base-v{vocab}", vocab_size=vocab)


def twelve_layer_decoder() -> ModelConfig:
    """12 attention layers of h = 8 heads, d = 512 (the seeds' 6.0 GiB example), no dropout."""
    return load_model("transformer-base").replace(
        name="decoder-12x8", n_encoder_layers=0, n_decoder_layers=12, dropout=0.0
    )


def _at(cfg: ModelConfig, **workload: int) -> dict[sp.Symbol, int]:
    """Every symbol's value: the config's dimensions and b, n, s (= n), T, e."""
    subs = model_values(cfg)
    n = workload.get("n", 1)
    subs.update({S.b: workload.get("b", 1), S.n: n, S.s: workload.get("s", n),
                 S.T: workload.get("T", 0), S.e: workload.get("e", 2)})
    return subs


def _per_layer_attention(cfg: ModelConfig) -> sp.Expr:
    """The tree's attention core (scores + weighted sum) of one layer, b = 1, h d_h = d."""
    model = CostModel(cfg)
    layers = S.L_enc if cfg.n_encoder_layers else S.L_dec
    stack = "encoder" if cfg.n_encoder_layers else "decoder"
    core = model.total("flops_matmul", model.select(part="layer", stack=stack, sublayer="self_attention",
                                                    name=("scores", "weighted_sum")))
    return sp.expand((core / layers).xreplace({S.b: 1, S.s: S.n, S.d_h: S.d / S.h}))


def _per_layer_projections(cfg: ModelConfig) -> sp.Expr:
    """The tree's Q, K, V and output projections of one self-attention layer, b = 1."""
    model = CostModel(cfg)
    layers = S.L_enc if cfg.n_encoder_layers else S.L_dec
    stack = "encoder" if cfg.n_encoder_layers else "decoder"
    projections = model.total("flops_matmul", model.select(
        part="layer", stack=stack, sublayer="self_attention", name=("qkv", "out")))
    return sp.expand((projections / layers).xreplace({S.b: 1, S.s: S.n, S.d_h: S.d / S.h,
                                                      S.h_kv: S.h}))


# ---------------------------------------------------------------------------------------------
# Vaswani et al. 2017, Table 1 at d = 512


@dataclass(frozen=True)
class TableRow:
    layer: str
    complexity: str  # the paper's
    from_tree: str  # where the number comes from
    flops_translation: int  # per layer at n = 50, d = 512
    flops_long: int  # per layer at n = 4096, d = 512
    sequential: str
    path_length: str


def table1() -> list[TableRow]:
    """Per-layer FLOPs at d = 512 for n = 50 and n = 4096: self-attention from the cost tree,
    recurrent and convolutional layers from the comparison formulas above."""
    cfg = seeds_transformer()
    core = _per_layer_attention(cfg)
    sublayer = core + _per_layer_projections(cfg)
    at = lambda expr, n: exact(expr, {S.n: n, S.d: VASWANI_D, S.h: cfg.n_heads, k: KERNEL})  # noqa: E731
    rows = []
    for layer, key, expr, origin in (
        ("self-attention", "self-attention", core, "cost tree: scores + weighted sum"),
        ("  + Q, K, V and output projections", None, sublayer, "cost tree: the whole sublayer"),
        ("recurrent", "recurrent", RECURRENT_LAYER_FLOPS, "comparison formula: 2 n (2 d^2)"),
        (f"convolutional (k = {KERNEL})", "convolutional", CONVOLUTION_LAYER_FLOPS,
         "comparison formula: 2 n k d^2"),
    ):
        quoted = TABLE1_QUOTED[key] if key else ("O(n^2 d + n d^2)", "O(1)", "O(1)")
        rows.append(TableRow(layer, quoted[0], origin, at(expr, TRANSLATION_N), at(expr, LONG_N),
                             quoted[1], quoted[2]))
    return rows


# ---------------------------------------------------------------------------------------------
# The claims


def _claim_table1() -> Claim:
    cfg = seeds_transformer()
    core = _per_layer_attention(cfg)
    poly = sp.Poly(core, S.n, S.d)
    holds = poly.degree(S.n) == 2 and poly.degree(S.d) == 1 and len(poly.terms()) == 1
    return Claim(
        "table1-complexity",
        "A self-attention layer costs O(n^2 d); a recurrent layer O(n d^2), a convolutional one "
        "O(k n d^2) (Vaswani et al. 2017, Table 1).",
        "Vaswani et al. 2017, Table 1",
        f"scores + weighted sum per layer = {core} FLOPs (b = 1, h d_h = d): degree 2 in n, 1 in d",
        "",
        holds,
        f"the Q, K, V and output projections add {_per_layer_projections(cfg)} (see the table); "
        "Table 1 counts the attention operation itself",
        {"per_layer_attention": str(core)},
    )


def _claim_attention_vs_rnn() -> Claim:
    cfg = seeds_transformer()
    core = _per_layer_attention(cfg)
    subs = {S.n: TRANSLATION_N, S.d: VASWANI_D}
    attention, recurrent = exact(core, subs), exact(RECURRENT_LAYER_FLOPS, subs)
    (breakeven,) = sp.solve(sp.Eq(core.xreplace({S.d: VASWANI_D}),
                                  RECURRENT_LAYER_FLOPS.xreplace({S.d: VASWANI_D})), S.n)
    return Claim(
        "attention-vs-rnn",
        f"At d = {VASWANI_D}, self-attention is cheaper than a recurrent layer in raw FLOPs "
        f"for n of a few dozen (n = {TRANSLATION_N}).",
        "introductory articles; Vaswani et al. 2017, section 4",
        f"{si(attention, 'FLOP')} (tree) vs {si(recurrent, 'FLOP')} (recurrent, comparison "
        f"formula) at n = {TRANSLATION_N}; equal at n = {breakeven}",
        "",
        attention < recurrent and breakeven > TRANSLATION_N,
        f"cheaper while n < {breakeven} = d",
        {"attention_flops": attention, "recurrent_flops": recurrent, "breakeven_n": int(breakeven)},
    )


def _claim_output_projection(measure: bool, progress: Progress) -> list[Claim]:
    cfg = seeds_transformer()
    model = CostModel(cfg)
    per_token = exact(model.total("flops_matmul", model.select(part="head", name="lm_head")),
                      _at(cfg, n=1)) // 2
    layers = exact(model.total("flops_matmul", model.select(part="layer", stack="encoder")),
                   _at(cfg, n=TRANSLATION_N))
    layers_per_token = layers // TRANSLATION_N // 2
    measured_head = measured_layers = ""
    agree = True
    if measure:
        progress(f"[claims] FlopCounterMode on the reference {cfg.name} at n = {TRANSLATION_N}")
        by_module = measure_by_module(cfg, TRANSLATION_N)
        head = by_module["head"] // TRANSLATION_N // 2
        encoder = by_module["encoder"] // TRANSLATION_N // 2
        measured_head = f"{head:,} multiplications per token"
        measured_layers = f"{encoder:,} multiplications per token"
        agree = head == per_token and encoder == layers_per_token
    ratio = per_token / layers_per_token
    return [
        Claim(
            "output-projection",
            "The output projection (|V| = 32,000, d = 512) costs about 16.4M multiplications "
            "per token.",
            "introductory articles",
            f"{per_token:,} multiplications per token (head.lm_head: 2 FLOPs each)",
            measured_head,
            per_token == 16_384_000 and agree,
            numbers={"multiplications_per_token": per_token},
        ),
        Claim(
            "output-projection-vs-layers",
            f"... about as much as six layers at n = {TRANSLATION_N}.",
            "introductory articles",
            f"six encoder layers: {layers_per_token:,} multiplications per token; the output "
            f"projection is {ratio:.2f} of that",
            measured_layers,
            0.8 <= ratio <= 1.25 and agree,
            "'about as much': within a factor of 1.25",
            {"six_layers_multiplications_per_token": layers_per_token, "ratio": ratio},
        ),
    ]


def _claim_attention_matrices(measure: bool, progress: Progress) -> Claim:
    cfg = twelve_layer_decoder()
    model = CostModel(cfg)
    matrices = model.total("saved_bytes", model.select(name="softmax"))
    value = exact(matrices, _at(cfg, n=LONG_N, e=4))
    measured, agree = "", True
    if measure:
        progress(f"[claims] saved tensors of a 12-layer h=8 reference decoder at n = {LONG_N} "
                 "(FakeTensorMode)")
        got = measure_square_saved(cfg, LONG_N)
        measured, agree = f"{got:,} bytes ({binary_bytes(got)})", got == value
    return Claim(
        "attention-matrices",
        f"At n = {LONG_N}, h = 8 and 12 layers, the fp32 attention matrices take 6.0 GiB per "
        "example.",
        "introductory articles",
        f"{value:,} bytes = {binary_bytes(value)} (softmax outputs kept for backward, fp32, b = 1)",
        measured,
        round(value / 2**30, 1) == 6.0 and agree,
        numbers={"bytes": value},
    )


def _claim_backward(measure: bool, progress: Progress) -> list[Claim]:
    cfg = load_model("gpt2")
    model = CostModel(cfg)
    subs = _at(cfg, n=1024)
    forward = exact(model.total("flops_matmul"), subs)
    backward = exact(model.total("flops_matmul_backward"), subs)
    measured_ratio = measured_training = ""
    agree = True
    if measure:
        from .measured import measure_flops, tiny

        small = tiny(cfg)
        progress(f"[claims] FlopCounterMode forward and backward of {small.name}")
        fwd = measure_flops(small, 32, batch=2)
        total = measure_flops(small, 32, batch=2, backward=True)
        tree_small = exact(CostModel(small).total("flops_matmul"), _at(small, n=32, b=2))
        measured_ratio = f"{(total - fwd) / fwd:.4f} ({small.name}, n = 32, b = 2)"
        measured_training = f"{total / fwd:.4f} forwards"
        agree = fwd == tree_small and total == 3 * fwd
    return [
        Claim(
            "backward-2x",
            "The backward pass costs about 2x the forward pass.",
            "introductory articles; Kaplan et al. 2020",
            f"{backward / forward:.4f} ({cfg.name}, n = 1024: {si(backward, 'FLOP')} / "
            f"{si(forward, 'FLOP')})",
            measured_ratio,
            abs(backward / forward - 2) < 0.05 and agree,
            "matmuls: one product for each input's gradient",
            {"forward": forward, "backward": backward},
        ),
        Claim(
            "training-3x",
            "A training step costs about 3 forward passes.",
            "introductory articles",
            f"{(forward + backward) / forward:.4f} forwards",
            measured_training,
            abs((forward + backward) / forward - 3) < 0.05 and agree,
            numbers={"training": forward + backward},
        ),
    ]


def _claim_ffn(measure: bool, progress: Progress) -> Claim:
    cfg = load_model("gpt2")
    model = CostModel(cfg)
    ffn = model.layer_total("flops_matmul", ("mlp",))
    projections = model.layer_total("flops_matmul", ("qkv", "out"))
    ratio = sp.simplify((ffn / projections).xreplace({S.d_ff: 4 * S.d, S.h_kv: S.h, S.d_h: S.d / S.h}))
    llama = load_model("llama2-7b")
    llama_model = CostModel(llama)
    llama_ratio = (exact(llama_model.layer_total("flops_matmul", ("mlp",)), _at(llama))
                   / exact(llama_model.layer_total("flops_matmul", ("qkv", "out")), _at(llama)))
    value = exact(ffn, _at(cfg, n=1024)) / exact(projections, _at(cfg, n=1024))
    measured, agree = "", True
    if measure:
        from .measured import tiny

        small = tiny(cfg)
        small_model = CostModel(small)
        expected = (exact(small_model.layer_total("flops_matmul", ("mlp",)), _at(small, n=32))
                    / exact(small_model.layer_total("flops_matmul", ("qkv", "out")), _at(small, n=32)))
        progress(f"[claims] FFN and projection FLOPs of {small.name}")
        got = measure_ffn_ratio(small, 32)
        measured, agree = f"{got:.4f} ({small.name}, d_ff = 4d)", got == expected
    return Claim(
        "ffn-2x-projections",
        "With d_ff = 4d the FFN costs twice the attention projections (Q, K, V and output).",
        "introductory articles",
        f"FFN / projections = {ratio} for d_ff = 4d, non-gated ({cfg.name}: {value:.4f})",
        measured,
        ratio == 2 and agree,
        f"gated FFNs have three matrices: {llama.name} (d_ff = {llama.d_ff / llama.d_model:g} d) "
        f"gives {llama_ratio:.3f}",
        {"ratio": str(ratio)},
    )


def _claim_llama_params(measure: bool, progress: Progress) -> Claim:
    cfg = load_model("llama2-7b")
    layers = exact(SEEDS_LAYER_PARAMS, {L: cfg.n_decoder_layers, S.d: cfg.d_model})
    embeddings = exact(SEEDS_EMBEDDING_PARAMS, {tables: 2, S.V: cfg.vocab_size, S.d: cfg.d_model})
    tree = exact(CostModel(cfg).total("params"), model_values(cfg))
    measured, agree = "", True
    if measure:
        from .measured import measure_params

        progress("[claims] parameters of the reference llama2-7b (meta device)")
        got = measure_params(cfg)
        measured, agree = f"{got:,} ({count(got)})", got == tree
    rule = layers + embeddings
    model = CostModel(cfg)
    per_layer = exact(model.total("params", model.select(part="layer", stack="decoder")),
                      model_values(cfg)) / cfg.n_decoder_layers
    holds = (round(layers / 1e9, 2), round(embeddings / 1e9, 2), round(rule / 1e9, 2),
             round(tree / 1e9, 2)) == (6.44, 0.26, 6.70, 6.74)
    return Claim(
        "llama2-7b-params",
        "Llama-2-7B: 12 L d^2 = 6.44B plus 2 V d = 0.26B gives 6.70B, against the exact 6.74B.",
        "introductory articles",
        f"12 L d^2 = {layers:,}; 2 V d = {embeddings:,}; sum {count(rule)}; exact (tree) "
        f"{tree:,} = {count(tree)}",
        measured,
        holds and agree,
        f"the rule counts 12 d^2 per layer; the tree has {per_layer / cfg.d_model**2:.3f} d^2 "
        f"(a gated FFN with d_ff = {cfg.d_ff / cfg.d_model:g} d, and the norms)",
        {"rule_layers": layers, "rule_embeddings": embeddings, "exact": tree},
    )


def _claim_kv_cache(measure: bool, progress: Progress) -> list[Claim]:
    cfg = load_model("llama2-7b")
    gqa = load_model("llama2-70b")
    model = CostModel(cfg)
    subs = {key: v for key, v in _at(cfg).items() if key not in (S.n, S.e)}
    numbers = sp.simplify(model.total("kv_cache_bytes").xreplace(subs) / S.e)
    seeds = SEEDS_KV_NUMBERS.xreplace({N_layers: cfg.n_decoder_layers, S.d: cfg.d_model})
    from .generation import leading_terms

    lead = leading_terms(cfg)
    per_width = {key: sp.simplify(v["leading"].xreplace({S.d_h: S.d / S.h})) for key, v in lead.items()}
    degrees = (lead["without_cache"]["degree"], lead["with_cache"]["degree"])
    linear_in_d = all(sp.Poly(v, S.d).degree() == 1 for v in per_width.values())
    measured_cache = measured_generation = ""
    agree_cache = agree_generation = True
    if measure:
        from .generation import generation_curves
        from .measured import measure_generation, measure_kv_cache, tiny

        small = tiny(cfg)
        progress(f"[claims] KV cache and generation FLOPs of {small.name}")
        got = measure_kv_cache(small, 8, 8)
        expected = exact(SEEDS_KV_NUMBERS, {N_layers: small.n_decoder_layers, S.n: 16,
                                            S.d: small.d_model})
        measured_cache = f"{got // 4:,} numbers ({small.name}: 16 tokens, fp32); 2 N t d = {expected:,}"
        agree_cache = got // 4 == expected
        steps = measure_generation(small, 16)
        curves = generation_curves(small, 16)
        without, with_cache = sum(steps["without_cache"]), sum(steps["with_cache"])
        measured_generation = (f"{small.name}, T = 16: {without:,} FLOPs without a cache, "
                               f"{with_cache:,} with one")
        agree_generation = (without == int(curves.without_cache[-1])
                            and with_cache == int(curves.with_cache[-1]))
    return [
        Claim(
            "kv-cache-size",
            "The KV cache holds 2 N t d numbers (N layers, t tokens).",
            "introductory articles",
            f"{cfg.name}: kv_cache_bytes / e = {numbers} (n = t tokens, b = 1)",
            measured_cache,
            sp.simplify(numbers - seeds) == 0 and agree_cache,
            f"with grouped-query attention only h_kv of h heads are held: {gqa.name} keeps "
            f"{gqa.n_kv_heads}/{gqa.n_heads} of that",
            {"numbers": str(numbers)},
        ),
        Claim(
            "kv-cache-generation",
            "A KV cache turns generating T tokens from O(T^3 d) into O(T^2 d).",
            "introductory articles",
            f"summed over T steps: degree {degrees[0]} in T (leading {per_width['without_cache']}) "
            f"without a cache, {degrees[1]} (leading {per_width['with_cache']}) with one",
            measured_generation,
            degrees == (3, 2) and linear_in_d and agree_generation,
            numbers={"without_cache_leading": str(per_width["without_cache"]),
                     "with_cache_leading": str(per_width["with_cache"])},
        ),
    ]


# ---------------------------------------------------------------------------------------------


def check_claims(measure: bool = True, progress: Progress | None = None) -> list[Claim]:
    """Every claim, in the seeds' order."""
    progress = progress or (lambda message: None)
    return [
        _claim_table1(),
        _claim_attention_vs_rnn(),
        *_claim_output_projection(measure, progress),
        _claim_attention_matrices(measure, progress),
        *_claim_backward(measure, progress),
        _claim_ffn(measure, progress),
        _claim_llama_params(measure, progress),
        *_claim_kv_cache(measure, progress),
    ]


def render_claims(claims: list[Claim]) -> str:
    """The claims as text: a mark, the statement, the tree's value, the measured value."""
    out = []
    for index, claim in enumerate(claims, 1):
        out.append(f"{claim.mark} {index}. {claim.statement}  [{claim.source}]")
        out.append(f"     cost tree: {claim.tree}")
        if claim.measured:
            out.append(f"     measured:  {claim.measured}")
        if claim.note:
            out.append(f"     note:      {claim.note}")
    holding = sum(c.holds for c in claims)
    out.append("")
    out.append(f"{holding} of {len(claims)} claims hold.")
    return "\n".join(out)


def render_table1(rows: list[TableRow]) -> str:
    from .text import table

    return "\n".join([
        f"Vaswani et al. 2017, Table 1, at d = {VASWANI_D} (FLOPs per layer, b = 1)",
        table(
            ["layer", "complexity", f"n = {TRANSLATION_N}", f"n = {LONG_N}", "sequential ops",
             "max path", "from"],
            ([r.layer, r.complexity, si(r.flops_translation, "FLOP"), si(r.flops_long, "FLOP"),
              r.sequential, r.path_length, r.from_tree] for r in rows),
            align="llrrlll",
        ),
    ])
