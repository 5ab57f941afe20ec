"""Counts the aten ops each cost-tree leaf launches in eager PyTorch, on the real transformers
module inside transformers' continuous-batching engine (transformers 5.24, torch 2.13, CPU).

The serving step's kernel model charges each op the hardware's measured dispatch time in eager
mode (costmodel/kernel_time.py, kernel_facts.json "eager_ops"); this module is how those counts
were taken, and tests/test_eager_ops.py takes them again and checks the data exactly.

How: a TorchDispatchMode counts every aten op that reaches the dispatcher below autograd
(views, copies and the products alike: each is one dispatch) during a step's forward
(ContinuousBatchProcessor._generation_step, as validate/serving_engine.py times it). Each op goes to
the region that runs it:
  - a module's forward (hooks) goes to the leaf that module is: embed_tokens -> embedding.tokens,
    rotary_emb -> decoder.rope_tables, input_layernorm -> self_attention.norm, q/k/v_proj ->
    self_attention.qkv, o_proj -> self_attention.out, post_attention_layernorm -> ffn.norm, mlp (and
    its projections and activation) -> ffn.mlp, norm -> final_norm, lm_head -> head.lm_head;
  - inside the attention module, apply_rotary_pos_emb -> self_attention.rope; the rest of its own
    body (the heads' views, the paged cache's update, the attention interface, the output's
    reshape) -> self_attention.weighted_sum, the leaf that stands for the one fused call under sdpa;
  - the decoder layer's own body: before its MLP runs -> self_attention.residual, after ->
    ffn.residual;
  - the model's own body (position ids, masks, the logits' slice) -> "model", and what the step
    runs outside the model (the batch's inputs, logits processing, sampling) -> "engine": no leaf
    holds either.
Layer leaves are counted per layer (the total over layers divided by the layers, which must be
equal for every layer).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

LAYER = "decoder.layer."


def leaf_of_module(name: str) -> str | None:
    """The cost-tree leaf a LlamaForCausalLM submodule's ops belong to (None: its parent's)."""
    parts = name.split(".")
    if name == "model.embed_tokens":
        return "embedding.tokens"
    if name == "model.rotary_emb":
        return "decoder.rope_tables"
    if name == "model.norm":
        return "decoder.final_norm"
    if name == "lm_head":
        return "head.lm_head"
    if len(parts) == 3 and parts[:2] == ["model", "layers"]:
        return "layer"
    if len(parts) >= 4 and parts[:2] == ["model", "layers"]:
        rest = ".".join(parts[3:])
        return {"input_layernorm": LAYER + "self_attention.norm",
                "self_attn.q_proj": LAYER + "self_attention.qkv",
                "self_attn.k_proj": LAYER + "self_attention.qkv",
                "self_attn.v_proj": LAYER + "self_attention.qkv",
                "self_attn.o_proj": LAYER + "self_attention.out",
                "self_attn": LAYER + "self_attention.weighted_sum",
                "post_attention_layernorm": LAYER + "ffn.norm",
                "mlp": LAYER + "ffn.mlp"}.get(rest, None if "." in rest else "layer")
    if name == "model":
        return "model"
    return None


class OpCounter:
    """Counts aten ops by region while installed around a model (install/remove)."""

    def __init__(self, model: Any):
        self.model = model
        self.stack: list[str] = ["engine"]
        self.counts: Counter = Counter()
        self.names: dict[str, list[str]] | None = None  # each region's ops by name, when asked
        self.written: Counter = Counter()  # bytes each op (by name) writes to a new tensor
        self.mlp_done = False
        self.handles: list[Any] = []
        self.patched: list[tuple[Any, str, Any]] = []

    def region(self) -> str:
        top = self.stack[-1]
        if top == "layer":
            return LAYER + ("ffn.residual" if self.mlp_done else "self_attention.residual")
        return top

    def install(self) -> None:
        import transformers.models.llama.modeling_llama as llama

        self.stack = ["engine"]
        for name, module in self.model.named_modules():
            leaf = leaf_of_module(name) if name else None
            if leaf is None:
                continue
            def pre(_module: Any, _args: Any, leaf: str = leaf) -> None:
                if leaf == "layer":
                    self.mlp_done = False
                self.stack.append(leaf)
            def post(_module: Any, _args: Any, _out: Any, leaf: str = leaf) -> None:
                self.stack.pop()
                if leaf == LAYER + "ffn.mlp":
                    self.mlp_done = True
            self.handles += [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]
        # The model's own body (LlamaForCausalLM around LlamaModel: the logits' slice) is "model".
        self.handles += [self.model.register_forward_pre_hook(lambda *_: self.stack.append("model")),
                         self.model.register_forward_hook(lambda *_: self.stack.pop() and None)]
        rope = llama.apply_rotary_pos_emb

        def counted_rope(*args: Any, **kwargs: Any) -> Any:
            self.stack.append(LAYER + "self_attention.rope")
            try:
                return rope(*args, **kwargs)
            finally:
                self.stack.pop()
        llama.apply_rotary_pos_emb = counted_rope
        self.patched.append((llama, "apply_rotary_pos_emb", rope))

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()
        for module, name, original in self.patched:
            setattr(module, name, original)
        self.handles, self.patched = [], []

    def mode(self) -> Any:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode

        counter = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                counter.counts[counter.region()] += 1
                if counter.names is not None:
                    counter.names[counter.region()].append(str(func))
                out = func(*args, **(kwargs or {}))
                if all(r.alias_info is None for r in func._schema.returns):  # not a view, not in place
                    outs = out if isinstance(out, (tuple, list)) else (out,)
                    counter.written[func.overloadpacket.__name__] += sum(
                        o.numel() * o.element_size() for o in outs if isinstance(o, torch.Tensor))
                return out
        return Mode()


def per_leaf(counts: Counter, layers: int) -> dict[str, int]:
    """A step's counts as ops per run of each leaf (layer leaves: per layer, checked equal)."""
    out = {}
    for region, total in counts.items():
        if region.startswith(LAYER):
            if total % layers:
                raise AssertionError(f"{region}: {total} ops over {layers} layers is not the same per layer.")
            out[region] = total // layers
        else:
            out[region] = total
    return out


def count_engine_steps(requests: list[tuple[int, int, int]], model: Any, names: bool = False,
                       **budgets: Any) -> list[dict]:
    """Each step of an engine run (validate/serving_engine.run_engine's arguments): its kind
    (decode when every query is one token, else mixed), its query tokens and requests in the
    batch's order, the ops per leaf run (per_leaf) and the bytes each op (by name: index_select,
    clone...) wrote to new tensors, all layers (views and in-place ops write none here); names:
    also each region's ops by name, in order (all layers)."""
    from collections import defaultdict

    import torch
    from transformers.generation.continuous_batching.continuous_api import ContinuousBatchProcessor

    from . import serving_engine

    counter = OpCounter(model)
    counted: list[tuple[dict[str, int], Any]] = []
    original = ContinuousBatchProcessor._generation_step

    def step(processor: Any, model_: Any) -> Any:
        # serving_engine wraps the processor's step; this counts inside the class's own
        counter.counts, counter.written = Counter(), Counter()
        counter.names = defaultdict(list) if names else None
        counter.install()
        try:
            with counter.mode():
                return original(processor, model_)
        finally:
            counter.remove()
            counted.append((per_leaf(counter.counts, model.config.num_hidden_layers), counter.names,
                            dict(counter.written)))

    ContinuousBatchProcessor._generation_step = step
    try:
        with torch.no_grad():
            run = serving_engine.run_engine(requests, model=model, **budgets)
    finally:
        ContinuousBatchProcessor._generation_step = original
    out = []
    for (entries, _, _), (ops, by_name, written) in zip(run.schedule, counted):
        queries = [q for _, q in entries]
        out.append({"kind": "decode" if max(queries) == 1 else "mixed", "queries": queries,
                    "requests": [r for r, _ in entries], "ops": ops, "written": written,
                    **({"names": dict(by_name)} if names else {})})
    return out
