"""Peak live tensor bytes over one training step: forward with the loss, backward, AdamW, zero_grad.

Where the peak is (measured with MemTracker, validate/FINDINGS.md section 7, and tests/test_peak.py):
in the **AdamW step**, not in backward, for every model measured (reference, HF Llama, HF GPT-2 at
d=64..256): by then the activations saved for backward are freed, but the gradients, the freshly
created moments m and v and the optimizer's own temporaries are all live at once. At that moment:

  weights              e * P        model.total("params"), e = bytes of the training dtype
  gradients            e * P        one per parameter (all train)
  adam_moments         2 * e * P    exp_avg and exp_avg_sq, torch.zeros_like(param): the param dtype
  adam_steps           4 * T        one fp32 scalar `step` per parameter tensor (T tensors, counted
                                    structurally by parameter_tensors()); on CUDA single-tensor and
                                    foreach AdamW keep it on the host (0 device bytes), fused keeps
                                    it on the device
  optimizer_temporaries             what the update allocates besides the state:
      single-tensor (the CPU default): `denom = (exp_avg_sq.sqrt() / c).add_(eps)` holds the sqrt
        and the quotient of tensor i (2 * s_i) while denom of tensor i-1 (s_{i-1}) is still bound:
        e * max_i (2 s_i + s_{i-1}) over the tensors in registration order
      foreach (the CUDA default): `torch._foreach_sqrt(exp_avg_sqs)`: one copy of every parameter,
        e * P
      fused: none
  loss                 the scalar loss, alive until _train_step returns: 4 bytes (HF upcasts the
                       logits to fp32 in its loss) or e (the reference model's cross-entropy; the
                       sum of the outputs that validate.compare uses for models without an lm head)
  inputs               int64 input tensors: ids, labels (lm head), token types: 8 * b * n each
  buffers              non-parameter tensors: RoPE tables (HF: inv_freq, original_inv_freq in fp32;
                       reference: cos, sin of P_max x d_h in e), sinusoid table, BERT's
                       position_ids / token_type_ids (int64)

MemTracker's categories match these: Parameter = weights, Gradient = gradients, Optstate = moments
+ steps + temporaries, Activation = loss, Other = inputs, Buffer = buffers.

A second candidate is the start of backward, when the activations are largest: weights +
activations (the tree's "saved_bytes", exact against measurement) + the loss + loss_gradients +
inputs + buffers, plus, in a steady-state step (m, v already exist, gradients were set to None),
the moments and steps. loss_gradients = 2 * b * n * V elements: the cross-entropy's backward holds
the gradient of its log-softmax output and of the logits at once (MemTracker "Temp" = exactly
that for HF Llama and GPT-2 in fp32; in fp32 because HF's loss upcasts the logits, in e for the
reference model). By then 16 * b * n bytes of what the forward saved (2 * b * n int64 elements:
the cross-entropy's targets) are already freed (freed_targets, measured: MemTracker's Activation
is saved_bytes + 4 - 16 * b * n for HF Llama, GPT-2 and the reference model). It wins when
the activations exceed gradients + moments + temporaries; `phase` says which candidate is larger.
MemTracker measures step one, which has no moments before the AdamW step. Without an lm head
(BERT, loss = sum of the outputs) the backward peak lies later, among backward's transients: this
candidate is then 4% low (bert d=64, b=4, n=256: 36,276,996 vs 37,720,584 measured).

Pure-dtype training is modelled (params, grads and moments in the same dtype e, as
`torch.optim.AdamW` does on a model built in that dtype); mixed precision with fp32 master weights
(costmodel.memory.param_bytes) is a different program and is not this module's subject.
"""

from __future__ import annotations

import sympy as sp

from . import symbols as S
from .config import ConfigError, ModelConfig, Workload
from .evaluate import exact, values
from .model import CostModel, profile_for

OPTIMIZER_IMPLS = ("single", "foreach", "fused")
INT64 = 8
FP32 = 4


def _linear(name: str, d_in, d_out, bias: bool) -> list[tuple[str, sp.Expr]]:
    out = [(f"{name}.weight", d_out * d_in)]
    return out + [(f"{name}.bias", d_out)] if bias else out


def _norm(name: str, cfg: ModelConfig) -> list[tuple[str, sp.Expr]]:
    out = [(f"{name}.weight", S.d)]
    return out + [(f"{name}.bias", S.d)] if cfg.norm == "layernorm" else out


def _ffn(prefix: str, cfg: ModelConfig) -> list[tuple[str, sp.Expr]]:
    out = []
    if cfg.gated:
        out += _linear(f"{prefix}.gate_proj", S.d, S.d_ff, cfg.ffn_bias)
    out += _linear(f"{prefix}.up_proj", S.d, S.d_ff, cfg.ffn_bias)
    return out + _linear(f"{prefix}.down_proj", S.d_ff, S.d, cfg.ffn_bias)


def _attention(prefix: str, cfg: ModelConfig, names=("q_proj", "k_proj", "v_proj", "out_proj")):
    q, k, v, o = names
    return (_linear(f"{prefix}.{q}", S.d, S.h * S.d_h, cfg.qkv_bias)
            + _linear(f"{prefix}.{k}", S.d, S.h_kv * S.d_h, cfg.qkv_bias)
            + _linear(f"{prefix}.{v}", S.d, S.h_kv * S.d_h, cfg.qkv_bias)
            + _linear(f"{prefix}.{o}", S.h * S.d_h, S.d, cfg.out_bias))


def parameter_tensors(cfg: ModelConfig, impl: str = "hf") -> list[tuple[str, sp.Expr]]:
    """The parameter tensors (name, elements) in registration order, which is the order AdamW
    visits them; a layer's tensors appear once as ("layers", (tensors, layer count)).
    Built from the config; the elements sum to CostModel(...).total("params").

    Supported: the reference model (decoder-only or encoder-only), Hugging Face Llama / Mistral /
    Qwen2, GPT-2 and BERT (with its pooler).
    """
    layers = S.L_dec if cfg.architecture == "decoder" else S.L_enc
    if cfg.architecture == "encoder-decoder":
        raise ConfigError(f"model {cfg.name!r}: parameter order of encoder-decoders is not modelled.")
    out: list[tuple[str, sp.Expr]] = []
    if impl == "reference":
        out.append(("tokens", S.V * S.d))
        if cfg.position == "learned":
            out.append(("positions", S.P * S.d))
        if cfg.token_types:
            out.append(("token_types", S.N_tt * S.d))
        if cfg.embedding_norm:
            out += _norm("embedding.norm", cfg)
        if cfg.position == "relative":
            out.append(("relative_bias", S.N_rb * S.h))
        layer = (_norm("attn.norm", cfg) + _attention("attn", cfg) + _norm("ffn.norm", cfg)
                 + _ffn("ffn", cfg))
        out.append(("layers", (layer, layers)))  # type: ignore[arg-type]
        if cfg.norm_position == "pre":
            out += _norm("final_norm", cfg)
        if cfg.head == "lm" and not cfg.tie_embeddings:
            out.append(("lm_head.weight", S.V * S.d))
        if cfg.head == "lm" and cfg.lm_head_bias:
            out.append(("lm_head.bias", S.V))
        if cfg.head == "pooler":
            out += _linear("pooler", S.d, S.d, True)
        return out
    family = cfg.family
    if family in ("llama", "mistral", "qwen2"):
        out.append(("embed_tokens", S.V * S.d))
        layer = (_attention("self_attn", cfg, ("q_proj", "k_proj", "v_proj", "o_proj"))
                 + _ffn("mlp", cfg) + _norm("input_layernorm", cfg)
                 + _norm("post_attention_layernorm", cfg))
        out.append(("layers", (layer, layers)))  # type: ignore[arg-type]
        out += _norm("norm", cfg)
        if not cfg.tie_embeddings:
            out.append(("lm_head.weight", S.V * S.d))
        return out
    if family == "gpt2":
        out += [("wte", S.V * S.d), ("wpe", S.P * S.d)]
        layer = (_norm("ln_1", cfg) + _linear("c_attn", S.d, 3 * S.d, cfg.qkv_bias)
                 + _linear("c_proj", S.d, S.d, cfg.out_bias) + _norm("ln_2", cfg)
                 + _linear("c_fc", S.d, S.d_ff, cfg.ffn_bias)
                 + _linear("mlp.c_proj", S.d_ff, S.d, cfg.ffn_bias))
        out.append(("h", (layer, layers)))  # type: ignore[arg-type]
        out += _norm("ln_f", cfg)
        return out  # lm_head is tied to wte
    if family == "bert":
        out += [("word_embeddings", S.V * S.d), ("position_embeddings", S.P * S.d),
                ("token_type_embeddings", S.N_tt * S.d)] + _norm("embeddings.LayerNorm", cfg)
        layer = (_attention("attention.self", cfg, ("query", "key", "value", "output.dense"))
                 + _norm("attention.output.LayerNorm", cfg)
                 + _linear("intermediate.dense", S.d, S.d_ff, cfg.ffn_bias)
                 + _linear("output.dense", S.d_ff, S.d, cfg.ffn_bias) + _norm("output.LayerNorm", cfg))
        out.append(("layer", (layer, layers)))  # type: ignore[arg-type]
        return out + _linear("pooler.dense", S.d, S.d, True)
    raise ConfigError(f"model {cfg.name!r}: parameter order of {family} ({impl}) is not modelled.")


def _flat_sizes(tensors, subs) -> list[int]:
    """Element counts of every tensor in order, the layers unrolled (needs the layer count)."""
    sizes: list[int] = []
    for _, x in tensors:
        if isinstance(x, tuple):
            layer, count = x
            one = [exact(e, subs) for _, e in layer]
            sizes += one * exact(count, subs)
        else:
            sizes.append(exact(x, subs))
    return sizes


def tensor_count(cfg: ModelConfig, impl: str = "hf") -> sp.Expr:
    """T: the number of parameter tensors (one AdamW `step` each)."""
    return sp.Add(*(len(x[0]) * x[1] if isinstance(x, tuple) else sp.Integer(1)
                    for _, x in parameter_tensors(cfg, impl)))


def single_tensor_temporary_elements(cfg: ModelConfig, subs, impl: str = "hf") -> int:
    """max_i (2 s_i + s_{i-1}) over the parameter tensors in the order AdamW visits them."""
    sizes = _flat_sizes(parameter_tensors(cfg, impl), subs)
    return max(2 * s + (sizes[i - 1] if i else 0) for i, s in enumerate(sizes))


def buffer_bytes(cfg: ModelConfig, impl: str = "hf") -> sp.Expr:
    """Bytes of the model's non-parameter tensors (see the module docstring)."""
    e = S.e
    if impl == "reference":
        if cfg.position == "rope":
            return 2 * S.P * S.d_h * e
        if cfg.position == "sinusoidal":
            return FP32 * S.P * S.d
        if cfg.position == "alibi":
            return FP32 * S.h
        return sp.Integer(0)
    if cfg.family in ("llama", "mistral", "qwen2"):
        return 2 * FP32 * (S.d_h / 2)
    if cfg.family == "bert":
        return 2 * INT64 * S.P
    return sp.Integer(0)


def input_bytes(cfg: ModelConfig) -> sp.Expr:
    """int64 ids, labels (lm head) and token types, b * n elements each."""
    tensors = 1 + (cfg.head == "lm") + (cfg.token_types > 0)
    return tensors * INT64 * S.b * S.n


def training_peak_expressions(cfg: ModelConfig, workload: Workload, optimizer_impl: str = "single",
                              device: str = "cpu") -> dict[str, sp.Expr]:
    """The terms as expressions (the single-tensor temporaries as a number: they take a max over
    the tensor order)."""
    if optimizer_impl not in OPTIMIZER_IMPLS:
        raise ConfigError(f"optimizer_impl must be one of {', '.join(OPTIMIZER_IMPLS)}.")
    impl = workload.impl
    model = CostModel(cfg, profile_for(cfg, workload))
    params = model.total("params")
    e = S.e
    T = tensor_count(cfg, impl)
    steps_on_device = device == "cpu" or optimizer_impl == "fused"
    subs = values(cfg, workload)
    lm, zero = cfg.head == "lm", sp.Integer(0)  # without an lm head the loss is a plain sum
    if optimizer_impl == "single":
        temporaries = e * single_tensor_temporary_elements(cfg, subs, impl)
    elif optimizer_impl == "foreach":
        temporaries = e * params
    else:
        temporaries = sp.Integer(0)
    return {
        "weights": e * params,
        "gradients": e * params,
        "adam_moments": 2 * e * params,
        "adam_steps": FP32 * T if steps_on_device else sp.Integer(0),
        "optimizer_temporaries": temporaries,
        "loss": sp.Integer(FP32) if impl == "hf" and lm else e,
        "inputs": input_bytes(cfg),
        "buffers": buffer_bytes(cfg, impl),
        "activations": model.total("saved_bytes"),
        "loss_gradients": 2 * S.b * S.n * S.V * (FP32 if impl == "hf" else e) if lm else zero,
        "freed_targets": 2 * INT64 * S.b * S.n if lm else zero,
    }


def training_peak_bytes(cfg: ModelConfig, workload: Workload, optimizer_impl: str = "single",
                        device: str = "cpu") -> dict[str, int | str]:
    """Every term as an exact integer, the candidate peaks and the larger one ("total").

    optimizer_step = weights + gradients + adam_moments + adam_steps + optimizer_temporaries
                     + loss + inputs + buffers      (where MemTracker finds the peak)
    forward_end    = weights + activations + loss + loss_gradients - freed_targets + inputs
                     + buffers
                     (the start of backward in step one, as MemTracker measures it: no moments
                     yet)
    total          = max(optimizer_step, forward_end), "phase" names the larger
    steady_forward_end = forward_end + adam_moments + adam_steps   (any later step)
    steady_total   = max(optimizer_step, steady_forward_end)
    """
    if cfg.architecture == "encoder-decoder":
        raise ConfigError(f"model {cfg.name!r}: the training peak of encoder-decoders is not modelled.")
    subs = values(cfg, workload)
    terms = {k: exact(v, subs) for k, v in
             training_peak_expressions(cfg, workload, optimizer_impl, device).items()}
    outside = terms["weights"] + terms["inputs"] + terms["buffers"]
    state = terms["adam_moments"] + terms["adam_steps"]
    step = outside + state + terms["gradients"] + terms["optimizer_temporaries"] + terms["loss"]
    forward = (outside + terms["activations"] + terms["loss"] + terms["loss_gradients"]
               - terms["freed_targets"])
    return {**terms, "optimizer_step": step, "forward_end": forward, "total": max(step, forward),
            "phase": "optimizer_step" if step >= forward else "forward_end",
            "steady_forward_end": forward + state, "steady_total": max(step, forward + state)}


def inference_peak_bytes(cfg: ModelConfig, workload: Workload) -> dict[str, int]:
    """A lower bound of prefill + decode: weights + the KV cache after n + T tokens + buffers +
    inputs + the last prefill's logits (b * n * V * e; HF keeps only the last position's logits
    in generate, a plain forward keeps all). Not validated against a measurement here."""
    subs = values(cfg, workload)
    model = CostModel(cfg, profile_for(cfg, workload))
    terms = {
        "weights": exact(S.e * model.total("params"), subs),
        "kv_cache": exact(model.total("kv_cache_bytes"), subs),
        "buffers": exact(buffer_bytes(cfg, workload.impl), subs),
        "inputs": exact(INT64 * S.b * S.n, subs),
        "logits": exact(S.b * S.n * S.V * S.e, subs),
    }
    return {**terms, "total": sum(terms.values())}
