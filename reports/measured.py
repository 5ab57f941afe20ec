"""Measured points for the reports: the reference model (validate/) run and counted with torch.

Every point pairs a measurement with the cost tree's value for the same model and workload:
parameters (the full-size model built on the meta device), forward matmul FLOPs (FlopCounterMode;
full size under FakeTensorMode, and a tiny member of the family on real CPU tensors), training
FLOPs (forward + backward), bytes saved for backward (fp32, the reference implementation profile),
KV-cache bytes after a prefill and decode steps, and the FLOPs of generating tokens with and
without a KV cache. torch is imported only when a measurement runs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable

from costmodel.config import ModelConfig, Workload
from costmodel.evaluate import exact, values
from costmodel.memory import memory
from costmodel.tree import CostModel, profile_for

from .output import progress as default_progress

TINY_WIDTH = 64  # d of the tiny member of a family
TINY_HEADS = 4
TINY_VOCAB = 101  # odd on purpose: a swapped dimension cannot hide
TINY_LAYERS = 2
TINY_POSITIONS = 256

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Point:
    """One quantity of one model and workload: the cost tree's value and the measured one."""

    quantity: str  # params | forward_flops | training_flops | activation_bytes | kv_cache_bytes ...
    model: str
    seq_len: int
    batch: int
    formula: int
    measured: int
    how: str  # what was run, in a few words

    @property
    def relative_error(self) -> float:
        return (self.measured - self.formula) / self.formula if self.formula else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "relative_error": self.relative_error}


def tiny(cfg: ModelConfig) -> ModelConfig:
    """A small member of the config's family: d 64, 4 heads (2 KV heads under GQA), the same
    d_ff/d ratio, 2 layers per stack (a layer of each mixer in a model of one-mixer layers),
    vocabulary 101, every other choice kept."""
    kv_heads = TINY_HEADS if cfg.n_kv_heads == cfg.n_heads else 1 if cfg.hyper_streams else TINY_HEADS // 2
    d_ff = max(8, round(TINY_WIDTH * cfg.d_ff / cfg.d_model))
    d_head = TINY_WIDTH // TINY_HEADS
    return cfg.replace(
        name=f"{cfg.name}-tiny",
        vocab_size=TINY_VOCAB,
        d_model=TINY_WIDTH,
        n_heads=TINY_HEADS,
        n_kv_heads=kv_heads,
        d_head=d_head,
        d_ff=d_ff,
        n_encoder_layers=TINY_LAYERS if cfg.n_encoder_layers else 0,
        max_positions=max(TINY_POSITIONS, min(cfg.max_positions, TINY_POSITIONS)),
        relative_buckets=min(cfg.relative_buckets, 8),
        **{"n_decoder_layers": TINY_LAYERS if cfg.n_decoder_layers else 0, **_tiny_newer_fields(cfg, d_head)},
    )


def _scaled(value: int | None, old: int, new: int, even: bool = False) -> int | None:
    """value * new / old, at least 2 (even when asked), None stays None."""
    if value is None:
        return None
    scaled = max(2, round(value * new / old))
    return scaled + scaled % 2 if even else scaled


def _first_of_each_mixer(pattern: tuple[str, ...], post_norm_mixers: tuple[str, ...]) -> tuple[str, ...]:
    """The layers that run each mixer of the pattern first, in order; a post-normed mixer (OLMo
    Hybrid's attention) with the "mlp" layer after it, which check_post_norm_mixers requires."""
    kept: list[str] = []
    i = 0
    while i < len(pattern):
        unit = pattern[i:i + 2] if pattern[i] in post_norm_mixers else pattern[i:i + 1]
        if any(kind not in kept for kind in unit):
            kept += unit
        i += len(unit)
    return tuple(kept)


def _tiny_newer_fields(cfg: ModelConfig, d_head: int) -> dict[str, Any]:
    """The newer families' sizes at the tiny member's scale, every choice kept: the rotary part
    of a head, the embedding width, windows, experts (one dense layer at most: one layer keeps
    its experts), layers without RoPE (one at most), MLA's ranks."""
    fields: dict[str, Any] = {
        "rotary_dim": _scaled(cfg.rotary_dim, cfg.d_head, d_head, even=True),
        "embedding_dim": _scaled(cfg.embedding_dim, cfg.d_model, TINY_WIDTH),
        "sliding_window": None if cfg.sliding_window is None else min(cfg.sliding_window, 16),
        "window_layers": None if cfg.window_layers is None else 1,
        "nope_layers": min(cfg.nope_layers, TINY_LAYERS - 1),  # the last layer without RoPE
    }
    if cfg.moe:
        fields.update(n_dense_layers=min(cfg.n_dense_layers, TINY_LAYERS - 1),
                      d_expert=_scaled(cfg.d_expert, cfg.d_model, TINY_WIDTH),
                      d_shared=_scaled(cfg.d_shared, cfg.d_model, TINY_WIDTH) if cfg.d_shared else 0)
    if cfg.mixer_layers:  # one layer of each mixer the model has, in the order it first runs them
        mixers = _first_of_each_mixer(cfg.layer_pattern, cfg.post_norm_mixers)
        mamba = "mamba" in mixers
        fields.update(n_decoder_layers=len(mixers), layer_pattern=mixers,
                      mamba_heads=TINY_HEADS if mamba else None, mamba_head_dim=d_head if mamba else None,
                      mamba_groups=2 if mamba else None, conv_kernel=cfg.conv_kernel,
                      # each size a mixer of the pattern gives (layer_pattern.check_mixer_layers), at this
                      # scale: Mamba-1's (Jamba) and Gated DeltaNet's or KDA's (Qwen3-Next, Kimi Linear) too
                      ssm_state=None if cfg.ssm_state is None else 16,
                      chunk_size=None if cfg.chunk_size is None else 16,
                      mamba1_inner=_scaled(cfg.mamba1_inner, cfg.d_model, TINY_WIDTH),
                      dt_rank=_scaled(cfg.dt_rank, cfg.d_model, TINY_WIDTH),
                      # RecurrentGemma's RG-LRU, a multiple of the tiny heads (its gates' blocks)
                      lru_width=None if cfg.lru_width is None
                      else TINY_HEADS * max(1, round(cfg.lru_width * TINY_WIDTH / cfg.d_model / TINY_HEADS)))
        if cfg.deltanet_k_heads is not None:  # the value heads a multiple of the key heads, as the model's
            fields.update(deltanet_k_heads=2, deltanet_v_heads=2 * (cfg.deltanet_v_heads // cfg.deltanet_k_heads),
                          deltanet_k_dim=_scaled(cfg.deltanet_k_dim, cfg.d_head, d_head, even=True),
                          deltanet_v_dim=_scaled(cfg.deltanet_v_dim, cfg.d_head, d_head, even=True))
    if cfg.hyper_streams:  # DeepSeek-V4 (one KV head, set in tiny): a layer of each kind, its ranks at scale
        kinds = tuple(dict.fromkeys(cfg.layer_pattern))
        fields.update(n_decoder_layers=len(kinds), layer_pattern=kinds, csa_layers=kinds.count("csa"),
                      hca_layers=kinds.count("hca"), output_rank=_scaled(cfg.output_rank, cfg.d_model, TINY_WIDTH),
                      q_lora_rank=_scaled(cfg.q_lora_rank, cfg.d_model, TINY_WIDTH))
        if cfg.index_n_heads:
            fields.update(index_n_heads=_scaled(cfg.index_n_heads, cfg.n_heads, TINY_HEADS),
                          index_head_dim=_scaled(cfg.index_head_dim, cfg.d_head, d_head, even=True))
    if cfg.mla:
        rotary = max(2, d_head // 4)
        fields.update(rotary_dim=rotary, v_head_dim=d_head,
                      kv_lora_rank=_scaled(cfg.kv_lora_rank, cfg.d_model, TINY_WIDTH),
                      q_lora_rank=_scaled(cfg.q_lora_rank, cfg.d_model, TINY_WIDTH))
    return fields


# ---------------------------------------------------------------------------------------------
# The cost tree's side of each point


def tree_values(cfg: ModelConfig, workload: Workload) -> dict[str, int]:
    """The tree's numbers a measurement is compared with, for one model and workload."""
    model = CostModel(cfg, profile_for(cfg, workload))
    subs = values(cfg, workload)
    forward = exact(model.total("flops_matmul"), subs)
    return {
        "params": exact(model.total("params"), subs),
        "forward_flops": forward,
        "training_flops": forward + exact(model.total("flops_matmul_backward"), subs),
        "activation_bytes": exact(memory(cfg, workload, model).activations, subs),
        "kv_cache_bytes": exact(model.total("kv_cache_bytes"), subs),
    }


# ---------------------------------------------------------------------------------------------
# The measured side


def model_inputs(cfg: ModelConfig, batch: int, seq_len: int, labels: bool) -> dict[str, Any]:
    """Deterministic token ids for the reference model's forward (source = target length)."""
    import torch

    def ids(offset: int) -> "torch.Tensor":
        index = torch.arange(batch * seq_len, dtype=torch.long).reshape(batch, seq_len)
        return (index * 7919 + offset) % cfg.vocab_size

    inputs = {"input_ids": ids(3)}
    if cfg.architecture == "encoder-decoder":
        inputs["decoder_input_ids"] = ids(5)
    if cfg.token_types:
        inputs["token_type_ids"] = torch.zeros(batch, seq_len, dtype=torch.long)
    if labels and cfg.head == "lm":
        inputs["labels"] = ids(11)
    return inputs


def probe_loss(output: Any) -> Any:
    """The reference model's loss, or mean squares of its outputs when it has no LM head."""
    if output.loss is not None:
        return output.loss
    loss = output.hidden.float().pow(2).mean()
    return loss + output.pooled.float().pow(2).mean() if output.pooled is not None else loss


def build_model(cfg: ModelConfig) -> Any:
    """The reference model, seeded; sets torch to one CPU thread for the process (its
    measurements' callers, reports/ and claims, count and time nothing else). They count FLOPs and
    bytes (the same at any thread count) on tiny tensors, where torch's default of a thread per core
    made `plot generation`'s 47 FlopCounterMode passes over gpt2-tiny 3.4-6.1 s on a 2-core
    machine under load against 0.34-0.39 s on one (validate/FINDINGS.md, wt32_speed)."""
    import torch

    from validate.reference import build_reference

    torch.set_num_threads(1)
    torch.manual_seed(0)
    return build_reference(cfg)


def measure_params(cfg: ModelConfig) -> int:
    """Parameters of the full-size reference model, built on the meta device (no memory)."""
    import torch

    from validate.measure import count_parameters

    with torch.device("meta"):
        model = build_model(cfg)
    return count_parameters(model)


def measure_flops(cfg: ModelConfig, seq_len: int, batch: int = 1, backward: bool = False,
                  fake: bool = False) -> int:
    """Forward (or forward + backward) matmul FLOPs of the reference model, FlopCounterMode."""
    import contextlib

    from validate.hf_models import fake_mode
    from validate.measure import matmul_flops

    with fake_mode() if fake else contextlib.nullcontext():
        model = build_model(cfg)
        inputs = model_inputs(cfg, batch, seq_len, labels=backward)
        result = matmul_flops(model, inputs, backward=backward, loss_fn=probe_loss)
    return result.total


def measure_saved_bytes(cfg: ModelConfig, seq_len: int, batch: int = 1) -> int:
    """Bytes saved for backward by a training forward with the loss (fp32, real tensors)."""
    from validate.measure import saved_activation_bytes

    model = build_model(cfg).train()
    return saved_activation_bytes(model, model_inputs(cfg, batch, seq_len, labels=True), probe_loss).total_bytes


def measure_kv_cache(cfg: ModelConfig, prompt: int, gen_tokens: int) -> int:
    """KV-cache bytes after a prefill of `prompt` tokens and gen_tokens decode steps (fp32)."""
    from validate.decoding import kv_cache_bytes

    model = build_model(cfg).eval()
    ids = model_inputs(cfg, 1, prompt, labels=False)["input_ids"]
    return kv_cache_bytes(model, ids, gen_tokens)["generated"]


def measure_generation(cfg: ModelConfig, max_tokens: int, source_len: int = 1) -> dict[str, list[int]]:
    """Matmul FLOPs of each generation step of the reference model (b = 1, no_grad).

    Step 1 is validate.decoding.prefill: a one-token prompt, or for an encoder-decoder the encoder
    over source_len tokens and the decoder's start token. Then, without a cache, step t re-runs
    the decoder over all t tokens (decoding.recompute_logits); with one, it feeds one token
    (decoding.step).
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from validate.decoding import prefill, recompute_logits, step

    model = build_model(cfg).eval()
    tokens = model_inputs(cfg, 1, max_tokens, labels=False)["input_ids"]  # (1, T): the tokens fed
    if cfg.architecture == "encoder-decoder":
        prompt = model_inputs(cfg, 1, source_len, labels=False)["input_ids"]  # (1, s): the source
    else:
        prompt = tokens[:, :1]

    def counted(run: Callable[[], Any]) -> int:
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            run()
        return counter.get_total_flops()

    states: list[Any] = []
    first = counted(lambda: states.append(prefill(model, prompt)[0]))
    uncached, cached = states[0], prefill(model, prompt)[0]
    without, with_cache = [first], [first]
    for position in range(1, max_tokens):
        token = tokens[:, position]  # (1,)
        uncached.tokens.append(token.reshape(1, 1))
        without.append(counted(lambda: recompute_logits(uncached)))
        with_cache.append(counted(lambda: step(cached, token)))
    return {"without_cache": without, "with_cache": with_cache}


# ---------------------------------------------------------------------------------------------
# The points of the formula-vs-measurement figure


TINY_LENGTHS = (8, 32, 96)
FULL_LENGTH = 256  # full-size forward under FakeTensorMode


def validation_points(cfgs: list[ModelConfig], progress: Progress = default_progress,
                      full_size: bool = True) -> list[Point]:
    """Measured points for each model: its full-size parameters (and forward FLOPs under fake
    tensors), and its tiny member's FLOPs, saved bytes and KV cache on real tensors."""
    from validate import reference_unsupported

    points: list[Point] = []
    for index, cfg in enumerate(cfgs, 1):
        small = tiny(cfg)
        prefix = f"[measure {index}/{len(cfgs)}] {cfg.name}"
        if reference_unsupported(cfg):  # the reference model does not implement it: no points
            progress(f"{prefix}: skipped (the reference model does not implement "
                     f"{', '.join(reference_unsupported(cfg))}; `validate --target hf` measures it)")
            continue
        progress(f"{prefix}: parameters (meta device)")
        full = Workload(seq_len=min(FULL_LENGTH, cfg.max_positions), batch=1, dtype="fp32",
                        impl="reference")
        tree = tree_values(cfg, full)
        points.append(Point("params", cfg.name, 0, 0, tree["params"], measure_params(cfg),
                            "reference model on the meta device"))
        if full_size:
            progress(f"{prefix}: forward FLOPs at n={full.seq_len} (FakeTensorMode)")
            points.append(Point("forward_flops", cfg.name, full.seq_len, 1, tree["forward_flops"],
                                measure_flops(cfg, full.seq_len, fake=True),
                                "FlopCounterMode, full size under FakeTensorMode"))
        progress(f"{prefix}: tiny member (d={small.d_model}) on CPU tensors")
        points.append(Point("params", small.name, 0, 0, tree_values(small, Workload(seq_len=8))["params"],
                            measure_params(small), "reference model on the meta device"))
        for length in TINY_LENGTHS:
            workload = Workload(seq_len=length, batch=2, dtype="fp32", impl="reference")
            tree = tree_values(small, workload)
            points.append(Point("forward_flops", small.name, length, 2, tree["forward_flops"],
                                measure_flops(small, length, batch=2), "FlopCounterMode, CPU"))
            points.append(Point("training_flops", small.name, length, 2, tree["training_flops"],
                                measure_flops(small, length, batch=2, backward=True),
                                "FlopCounterMode around forward + backward, CPU"))
            points.append(Point("activation_bytes", small.name, length, 2, tree["activation_bytes"],
                                measure_saved_bytes(small, length, batch=2),
                                "saved_tensors_hooks, fp32, reference profile"))
        if small.architecture == "decoder":
            prompt, generated = 8, 8
            # `generated` decode steps feed back all but the last token of a generation of generated + 1
            workload = Workload(seq_len=prompt, gen_tokens=generated + 1, batch=1, dtype="fp32")
            points.append(Point("kv_cache_bytes", small.name, prompt + generated, 1,
                                tree_values(small, workload)["kv_cache_bytes"],
                                measure_kv_cache(small, prompt, generated),
                                f"cache after a prefill of {prompt} and {generated} decode steps"))
    return points


# ---------------------------------------------------------------------------------------------
# Measurements reports/claims.py's claims need


def measure_by_module(cfg: ModelConfig, seq_len: int) -> dict[str, int]:
    """Forward matmul FLOPs by top-level module (FlopCounterMode, depth 1), one sequence of seq_len."""
    from validate.measure import matmul_flops

    return matmul_flops(build_model(cfg), model_inputs(cfg, 1, seq_len, labels=False), depth=1).forward_by_module


def measure_square_saved(cfg: ModelConfig, seq_len: int) -> int:
    """Bytes of the n x n tensors saved for backward (under FakeTensorMode: no memory used)."""
    from validate.hf_models import fake_mode
    from validate.measure import saved_activation_bytes

    with fake_mode():
        result = saved_activation_bytes(build_model(cfg), model_inputs(cfg, 1, seq_len, labels=True), probe_loss)
    return sum(t.bytes for t in result.tensors if t.shape[-2:] == (seq_len, seq_len))


def measure_ffn_ratio(cfg: ModelConfig, seq_len: int) -> float:
    """Measured FFN FLOPs over Q, K, V and output projection FLOPs (FlopCounterMode by module)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        build_model(cfg)(**model_inputs(cfg, 1, seq_len, labels=False))
    totals = {name: sum(ops.values()) for name, ops in counter.get_flop_counts().items()}
    ffn = sum(v for name, v in totals.items() if name.endswith(".ffn.block"))
    projections = sum(v for name, v in totals.items()
                      if ".self_attention.block." in name and name.endswith("_proj"))
    return ffn / projections
