"""Module calls in one training micro-step of transformers' Qwen2 with gradient checkpointing: the sites where
DeepSpeed ZeRO-3's per-module hooks fire (validate/FINDINGS.md, "DeepSpeed ZeRO-3's host time"). A diagnostic
count, not used by the model: tiny widths, the layer count given, a forward pre-hook counter on every module,
split into the forward and the backward's recomputation, and by whether the module holds parameters of its own;
"backward": the gradients that reach a module call's tensor outputs, where ZeRO-3's PreBackwardFunction (wrapped
around each tensor output by its forward hook) calls fetch_sub_module.

    python validate/zero3_hook_calls.py 24
"""

from __future__ import annotations

import sys


def count_calls(layers: int) -> dict[tuple[str, bool], int]:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(hidden_size=32, intermediate_size=37, num_attention_heads=4, num_key_value_heads=4,
                         num_hidden_layers=layers, vocab_size=99, tie_word_embeddings=False)
    model = Qwen2ForCausalLM(config)
    model.gradient_checkpointing_enable()
    model.train()
    phase = ["forward"]
    counts: dict[tuple[str, bool], int] = {}

    def pre_hook(module, args):
        key = (phase[0], any(True for _ in module.parameters(recurse=False)))
        counts[key] = counts.get(key, 0) + 1

    def count_backward(grad):
        counts[("backward", True)] = counts.get(("backward", True), 0) + 1

    def post_hook(module, args, output):
        items = output.values() if isinstance(output, dict) else output if isinstance(output, tuple) else (output,)
        for item in items:
            if isinstance(item, torch.Tensor) and item.requires_grad:
                item.register_hook(count_backward)

    for module in model.modules():
        module.register_forward_pre_hook(pre_hook)
        module.register_forward_hook(post_hook)
    tokens = torch.randint(0, 99, (1, 16))
    loss = model(input_ids=tokens, labels=tokens).loss
    phase[0] = "recompute"
    loss.backward()
    return counts


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].isdigit() or int(argv[0]) < 1:
        print("usage: python validate/zero3_hook_calls.py LAYERS (a positive integer)", file=sys.stderr)
        return 2
    for (phase, own), calls in sorted(count_calls(int(argv[0])).items()):
        label = "tensor outputs a gradient reaches" if phase == "backward" else \
            f"calls of modules {'with' if own else 'without'} own parameters"
        print(f"{phase:10s} {label}: {calls}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
