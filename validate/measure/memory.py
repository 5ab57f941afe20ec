"""What a run holds: the KV cache's bytes after a prefill and decode steps, the peak memory of a
training step (MemTracker's categories, or torch.cuda's peak on a GPU), and the live bytes over
backward, op by op, without module hooks."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils._pytree import tree_flatten

from .common import Inputs, LossFn, default_loss, storage_key


def cache_bytes(cache: Any) -> dict[str, int]:
    """Bytes of the keys and values a cache holds: {"self_attention": .., "cross_attention": ..}.

    Reads Hugging Face DynamicCache (layers[i].keys / .values, DeepSeek-V3.2's indexer_keys, DeepSeek-V4's
    compressor states (_COMPRESSOR_STATES), and a
    LinearAttentionLayer's conv_states and recurrent_states: LFM2's conv layers, Mamba's; MiniMaxCache's
    linear_cache: its lightning layers' states) and EncoderDecoderCache
    (self_attention_cache, cross_attention_cache); any other nested list/tuple/dict of tensors
    counts as self-attention. Each storage is counted once.
    """
    parts = {"self_attention": cache, "cross_attention": None}
    if hasattr(cache, "self_attention_cache"):
        parts = {"self_attention": cache.self_attention_cache,
                 "cross_attention": cache.cross_attention_cache}
    seen: set[int] = set()
    result = {}
    for name, part in parts.items():
        total = 0
        for t in _cache_tensors(part):
            key = storage_key(t)
            if key not in seen:
                seen.add(key)
                total += t.untyped_storage().nbytes()
        result[name] = total
    return result


def cache_after_each_step(model: Any, inputs: dict[str, torch.Tensor], steps: int) -> list[int]:
    """Self-attention cache bytes a Hugging Face causal LM holds after the prefill of inputs and
    after each of `steps` decode steps (token id 1 each step)."""
    batch = inputs["input_ids"].shape[0]
    with torch.no_grad():
        cache = model(**inputs, use_cache=True).cache
        held = [cache_bytes(cache)["self_attention"]]
        for _ in range(steps):
            token = torch.ones(batch, 1, dtype=torch.long)
            cache = model(input_ids=token, cache=cache, use_cache=True).cache
            held.append(cache_bytes(cache)["self_attention"])
    return held


#: DeepSeek-V4's cache layers (DeepseekV4HCACache, DeepseekV4CSACache): per compressor ("compressor",
#: CSA's "indexer") the entries emitted, the tokens of an unclosed window (their kv and gate) and
#: CSA's last window's first series (overlap kv and gate), beside the sliding window's keys.
_COMPRESSOR_STATES = ("compressed_kv", "buffer_kv", "buffer_gate", "overlap_kv", "overlap_gate")


def _cache_tensors(cache: Any) -> list[torch.Tensor]:
    if cache is None:
        return []
    if hasattr(cache, "layers"):
        return [t for layer in cache.layers for t in (getattr(layer, "keys", None),
                getattr(layer, "values", None), getattr(layer, "indexer_keys", None),
                *getattr(layer, "conv_states", {}).values(), *getattr(layer, "recurrent_states", {}).values(),
                *(t for name in _COMPRESSOR_STATES for t in getattr(layer, name, {}).values()))
                if isinstance(t, torch.Tensor) and t.numel()] + [  # indexer_keys: DynamicIndexedLayer (DSA)
                t for t in getattr(cache, "linear_cache", ()) if isinstance(t, torch.Tensor)]  # MiniMaxCache's states
    return [t for t in tree_flatten(cache)[0] if isinstance(t, torch.Tensor)]


def output_cache(output: Any) -> Any:
    """The cache a forward returned; None where the output class has no cache field at all (OpenAI
    GPT's CausalLMOutput: the class holds no cache, so generation reruns the prefix)."""
    keys = ("cache", "past_key_values")
    for key in keys:
        if getattr(output, key, None) is not None:
            return getattr(output, key)
    if not any(key in getattr(output, "__dataclass_fields__", {}) for key in keys):
        return None
    raise ValueError("the model output holds no cache (expected .cache or .past_key_values).")


def run_with_cache(model: nn.Module, inputs: Inputs, gen_tokens: int = 0) -> Any:
    """Prefill with use_cache=True, then feed gen_tokens single tokens through the cache (no_grad).

    For an encoder-decoder the encoder runs once and each step feeds one decoder token. Returns
    the final cache. Token ids of the steps are fixed (token 1), so no .item() is needed.
    """
    inputs = {k: v for k, v in inputs.items() if k != "labels"}
    decoder_key = "decoder_input_ids" if "decoder_input_ids" in inputs else "input_ids"
    with torch.no_grad():
        output = model(**inputs, use_cache=True)
        cache = output_cache(output)
        if cache is None:  # a class without a cache: nothing held, no step fed through one
            return None
        batch = inputs[decoder_key].shape[0]
        step = {}
        if decoder_key == "decoder_input_ids":
            step["encoder_outputs"] = (output.encoder_last_hidden_state,)
        for _ in range(gen_tokens):
            token = torch.ones(batch, 1, dtype=torch.long, device=inputs[decoder_key].device)
            output = model(**step, **{decoder_key: token}, cache=cache, use_cache=True)
            cache = output_cache(output)
    return cache


def kv_cache_bytes(model: nn.Module, inputs: Inputs, gen_tokens: int = 0) -> int:
    """Bytes of keys and values held after a prefill of the inputs and gen_tokens decode steps."""
    return sum(cache_bytes(run_with_cache(model, inputs, gen_tokens)).values())



def one_training_step(model: nn.Module, inputs: Inputs, optimizer: torch.optim.Optimizer,
                loss_fn: LossFn | None) -> None:
    """One step as a training loop writes it: the output (logits, cache) is dropped at once."""
    loss = (loss_fn or default_loss)(model(**inputs))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def peak_memory_memtracker(model: nn.Module, inputs: Inputs, loss_fn: LossFn | None = None,
                           optimizer: torch.optim.Optimizer | None = None) -> dict[str, int]:
    """Peak live tensor bytes by category over forward, backward and an AdamW step (MemTracker).

    Keys: Parameter, Buffer, Gradient, Activation, Temp, Optstate, Other, Total; the categories
    are those at the moment Total peaks. Works on CPU and under fake_mode().
    """
    from torch.distributed._tools.mem_tracker import MemTracker

    optimizer = optimizer or torch.optim.AdamW(model.parameters())
    tracker = MemTracker()
    tracker.track_external(model, optimizer, *[v for v in inputs.values() if isinstance(v, torch.Tensor)])
    with tracker:
        one_training_step(model, inputs, optimizer, loss_fn)
    (snapshot,) = tracker.get_tracker_snapshot("peak").values()
    return {str(getattr(k, "value", k)): int(v) for k, v in snapshot.items()}


def backward_live_bytes(model: nn.Module, inputs: Inputs, loss_fn: LossFn | None = None) -> list[tuple[str, int]]:
    """Bytes of the live storages that forward and backward create, at the start of backward
    ("start") and after each aten op of backward (its name): a TorchDispatchMode that keeps a weak
    reference to each new storage, with no module hooks. MemTracker's ModTracker holds some
    gradients longer than a plain run does (validate/FINDINGS.md, the BERT walk, session 22)."""
    from torch.multiprocessing.reductions import StorageWeakRef
    from torch.utils._python_dispatch import TorchDispatchMode

    class LiveStorages(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.storages: dict[int, tuple[Any, int]] = {}
            self.trace: list[tuple[str, int]] | None = None

        def live(self) -> int:
            for key in [k for k, (ref, _) in self.storages.items() if ref.expired()]:
                del self.storages[key]
            return sum(size for _, size in self.storages.values())

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            out = func(*args, **(kwargs or {}))
            self.live()  # a freed storage's address may be reused by the new one
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and t.untyped_storage().nbytes():
                    st = t.untyped_storage()
                    self.storages.setdefault(st.data_ptr(), (StorageWeakRef(st), st.nbytes()))
            if self.trace is not None:
                self.trace.append((str(func), self.live()))
            return out

    mode = LiveStorages()
    with mode:
        loss = (loss_fn or default_loss)(model(**inputs))
        mode.trace = [("start", mode.live())]
        loss.backward()
    return mode.trace


def cuda_peak_memory(model: nn.Module, inputs: Inputs, gen_tokens: int = 0,
                     loss_fn: LossFn | None = None) -> dict[str, int]:
    """torch.cuda.max_memory_allocated around one training step and around prefill + decode.

    The model and inputs must already be on the GPU. Keys: weights (allocated before the step),
    train_step_peak (with AdamW), inference_peak (prefill + gen_tokens decode steps).
    """
    if not torch.cuda.is_available():
        raise RuntimeError("cuda_peak_memory needs a CUDA GPU; none is available.")
    torch.cuda.synchronize()
    weights = torch.cuda.memory_allocated()
    optimizer = torch.optim.AdamW(model.parameters())
    torch.cuda.reset_peak_memory_stats()
    one_training_step(model, inputs, optimizer, loss_fn)
    torch.cuda.synchronize()
    train_peak = torch.cuda.max_memory_allocated()
    del optimizer
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    was_training = model.training
    run_with_cache(model.eval(), inputs, gen_tokens)
    model.train(was_training)
    torch.cuda.synchronize()
    return {"weights": weights, "train_step_peak": train_peak,
            "inference_peak": torch.cuda.max_memory_allocated()}
