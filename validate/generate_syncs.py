"""Where one decoding step of Hugging Face generate waits for the GPU, and how many of its ops the
host issues while the GPU has nothing of the step's forward to run, under the release first on the
path: transformers 4.46.0 (Qwen2 under its Qwen2FlashAttention2, the qwen2.5-speed-hf rows) or
4.51.3 (Qwen3 under flash_attention_2, the qwen3-speed-hf rows), greedy or sampling as the rows'
checkpoints' generation_config.json asks (kernel_facts.json "eager_step_ops": "serial_per_step",
"sampling").

A device-to-host read (aten _local_scalar_dense: `.item()`, a tensor's truth value, `x in tensor`)
makes the host wait until the GPU has run every kernel queued before it. The step's ops fall into
windows between those reads; the host can run ahead of the GPU only inside a window. The window that
holds the layers (from the read before the first layer to the first read after the last) is where
the forward's kernels run; every other window's ops are issued after the GPU has drained, each op's
kernel a few elements (the ids, the mask, one row of logits), so the host's time for them is not
hidden behind the forward: "serial_per_step". The rest of the step takes the longer of its host's
ops and its kernels (eager_ops.eager_step_seconds).

Counted on a CPU as validate/generate_ops.py counts (a TorchDispatchMode sees every aten op that
reaches the dispatcher from Python; flash_attn's call stood in as validate/context_bytes.py does),
over one steady step (the ops between two forwards of generate(max_new_tokens=6), the prompt of
generate_ops.PROMPT). torch.multinomial is one op to the mode but its CPU and CUDA kernels share one
body that dispatches more, read in aten/src/ATen/native/Distributions.cpp multinomial_out (pytorch,
the fast path `if (!with_replacement)`, which generate's `torch.multinomial(probs, num_samples=1)`
takes, replacement False; the same body in the 2.x releases read): `((self.max() < INFINITY) &
(self.min() >= 0)).item()`, `(self.sum(1) == 0).sum().item()`, `at::empty_like(self)
.exponential_(1, gen)`, `at::div_out(q, self, q)`, `at::argmax_out(result, q, -1, true)`:
MULTINOMIAL_OPS, two of them reads (MULTINOMIAL_SYNCS at their places).

`PYTHONPATH=DIR:$PWD python -m validate.generate_syncs [greedy|sampled]` with DIR the release's wheel
unpacked (its dependency check blanked, as validate/generate_ops_451.py says). It refuses any other
release.
"""

from __future__ import annotations

from typing import Any

SYNC = "aten._local_scalar_dense.default"

#: What multinomial_out dispatches (Distributions.cpp, above), in order; "SYNC" its two .item().
MULTINOMIAL_OPS = ("max", "lt", "min", "ge", "bitwise_and", "SYNC", "sum.dim", "eq", "sum", "SYNC",
                   "empty_like", "exponential_", "div.out", "argmax.out")

#: The sampling each release's rows run: the checkpoints' generation_config.json, which the speed
#: script loads (GenerationConfig.from_pretrained) and passes to generate, with its min_length.
#: Qwen2.5-Instruct: temperature 0.7, top_p 0.8, repetition_penalty 1.05 (QwenLM/Qwen2.5 docs'
#: vLLM example, 'the default decoding hyperparameters of Qwen2.5-7B-Instruct'; 0.5B and 1.5B 1.1)
#: and top_k 20 (GenerationConfig's default 50 where unset: the same ops); Qwen3: temperature 0.6,
#: top_p 0.95, top_k 20 (QwenLM/Qwen3 README: 'the default setting in generation_config.json'; its
#: MinP=0 taken as unset: no MinPLogitsWarper).
SAMPLING = {"4.46.0": dict(temperature=0.7, top_p=0.8, top_k=20, repetition_penalty=1.05),
            "4.51.3": dict(temperature=0.6, top_p=0.95, top_k=20)}
NEW_TOKENS = 6

#: What the real flash call dispatches beyond the stand-in's one op, as validate/generate_ops_446.py
#: counts v2.5.8's (FLASH_CALL_OPS: the tensors it allocates, views not counted): flash-attn
#: v2.7.4.post1 csrc/flash_attn/flash_api.cpp mha_fwd at one query under GQA (seqlenq_ngroups_swapped,
#: line 408): torch::empty_like out (431), softmax_lse (441), p's empty({0}) (449), set_params_splitkv's
#: two accumulators where it splits the keys (320-321), rng_state (483), and the copy that out's
#: transpose(1, 2).reshape(...) makes of the swapped, no longer contiguous output (507).
FLASH_274_CALL_OPS = 7


def step_sequence(layers: int, sampled: bool) -> list[str]:
    """The aten ops (names) of one steady decoding step, with "#LAYER" before each layer's and
    multinomial expanded (MULTINOMIAL_OPS; its reads as SYNC)."""
    import torch
    import transformers

    from validate import generate_ops as g
    from validate.context_bytes import tiny
    from torch.utils._python_dispatch import TorchDispatchMode

    release = transformers.__version__
    model = tiny(layers, release, "flash")
    names: list[str] = []

    class Names(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            names.append(str(func))
            return func(*args, **(kwargs or {}))

    hooks = [model.model.register_forward_pre_hook(lambda *a: names.append("#FWD"))]
    hooks += [layer.register_forward_pre_hook(lambda *a: names.append("#LAYER")) for layer in model.model.layers]
    ids = torch.tensor([g.PROMPT])
    extra = dict(do_sample=True, min_length=len(g.PROMPT) + NEW_TOKENS, **SAMPLING[release]) if sampled \
        else dict(do_sample=False)
    with torch.no_grad(), Names():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS, **extra)
    for hook in hooks:
        hook.remove()
    if out.shape[1] != len(g.PROMPT) + NEW_TOKENS:
        raise RuntimeError(f"generate stopped after {out.shape[1] - len(g.PROMPT)} of {NEW_TOKENS} tokens.")
    return last_step(names)


def last_step(names: list[str]) -> list[str]:
    """The last full step of a recorded run ("#FWD" before each forward: the ops between the last two),
    multinomial expanded (MULTINOMIAL_OPS; its reads as SYNC). validate/litgpt_ops.py takes it too."""
    starts = [i for i, name in enumerate(names) if name == "#FWD"]
    expanded: list[str] = []
    for name in names[starts[-2]:starts[-1]]:  # its last forward ends the run
        if name == "aten.multinomial.default":
            expanded += [SYNC if op == "SYNC" else f"(multinomial) {op}" for op in MULTINOMIAL_OPS]
        elif name != "#FWD":
            expanded.append(name)
    return expanded


def windows(sequence: list[str]) -> dict[str, Any]:
    """The step's ops, its reads, and the ops outside the window that holds the layers (the step
    read as a cycle: the window before the first read continues the last one's)."""
    syncs = [i for i, name in enumerate(sequence) if name == SYNC]
    layers = [i for i, name in enumerate(sequence) if name == "#LAYER"]
    before = max(i for i in syncs if i < layers[0])  # the read before the first layer
    after = min(i for i in syncs if i > layers[-1])  # the first read after the last layer
    inside = [name for name in sequence[before + 1:after + 1] if name != "#LAYER"]  # the read ends it
    ops = [name for name in sequence if name != "#LAYER"]
    return {"ops": len(ops), "syncs": len(syncs), "window_ops": len(inside), "serial_ops": len(ops) - len(inside),
            "serial": [name for name in sequence[after + 1:] + sequence[:before + 1] if name != "#LAYER"]}


def counts(sampled: bool) -> dict[str, Any]:
    """Per layer (all in the window; with the stand-in, and with the real call's ops), the step's own
    ops, its reads and its serial ops (at 2 KV heads of 4: 4.51.3's flash path repeats none; 4.46's
    per layer is kernel_facts.json eager_step_ops' 81 + 8)."""
    import transformers

    if transformers.__version__ not in SAMPLING:
        import sys

        print(f"error: transformers 4.46.0 or 4.51.3 must come first on the path, found "
              f"{transformers.__version__}.", file=sys.stderr)
        raise SystemExit(2)
    one, two = (windows(step_sequence(layers, sampled)) for layers in (1, 2))
    if one["serial"] != two["serial"] or one["syncs"] != two["syncs"]:
        raise AssertionError("the layers changed the ops outside the forward's window.")
    per_layer = two["ops"] - one["ops"]
    call = FLASH_274_CALL_OPS if transformers.__version__ == "4.51.3" else 5  # 4.46: generate_ops_446.FLASH_CALL_OPS
    return {"transformers": transformers.__version__, "sampled": sampled, "per_layer": per_layer,
            "per_layer_with_the_call": per_layer - 1 + call,
            "per_step": one["ops"] - per_layer, "syncs_per_step": one["syncs"], "serial_per_step": one["serial_ops"],
            "serial": one["serial"]}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(counts(sys.argv[1:2] == ["sampled"]), indent=1))
