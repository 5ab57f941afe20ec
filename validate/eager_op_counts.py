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

The same attribution measures the bytes each leaf's memory-bound ops move in a TRAINING step
(ByteCounter, training_leaves; kernel_facts.json "eager_training_bytes", what the kernel model
gives an eager training step's leaves; `python -m validate.eager_op_counts FAMILY ATTENTION
DTYPE` prints an entry's, entry_leaves): a forward and backward of LlamaForCausalLM or GPT2LMHeadModel (bf16 or fp32, sdpa
or eager attention, causal, no cache; the loss outside the model, as torchtitan computes it; eager
attention's ops split into the scores, softmax and weighted-sum leaves by ByteCounter.advance;
F.dropout run as CUDA runs it, one native_dropout) under a TorchDispatchMode that adds, for each op, the bytes of
its tensor inputs and outputs (numel x element size; a list argument's tensors each; a broadcast
operand at its own size). Excluded, with the reason:
  - views and metadata: every op whose schema returns an alias (OpOverload.is_view: view, t,
    transpose, unsqueeze, expand, slice, select, detach, alias...) and _unsafe_view (a view of a
    fresh tensor, no data moved);
  - the GEMMs (mm, addmm, bmm) and the attention call (scaled-dot-product forward and backward):
    the tile model and the attention model time those.
Forward ops go to leaves as OpCounter's hooks give them. Backward ops go to the leaf whose
forward created the autograd node that runs them (torch._C._current_autograd_node() inside
the dispatch mode): a TorchFunctionMode during the forward gives each new node of every
function's output (walking its graph back to the nodes already given) the forward's leaf at
that moment. So a backward op is the leaf's own op's backward. One case runs outside a node's
own formula: where a tensor feeds two consumers, the engine adds the two gradients while the
node whose gradient arrives last is current, so that add is that node's leaf's: the residual
stream's sum (the layer's norm input read by the norm and the residual) lands in the norm's
backward (its input cast, ToCopyBackward0), q, k and v's input gradients in the QKV leaf, gate
and up's in the MLP leaf.
Each leaf's bytes are then an integer combination of tokens x widths (BYTE_TERMS), solved on
odd shapes and required to be exact on every shape (fit_bytes).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .training_families import LAYER, bert_leaf_of_module, bert_training_model, gpt2_leaf_of_module, gpt2_training_model


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


def leaf_map(model: Any) -> Any:
    """The module-to-leaf function of a counted model's family (Llama's, GPT-2's, BERT's)."""
    name = type(model).__name__
    return gpt2_leaf_of_module if name.startswith("GPT2") else bert_leaf_of_module if name.startswith("Bert") \
        else leaf_of_module


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
        leaf_of = leaf_map(self.model)
        for name, module in self.model.named_modules():
            leaf = leaf_of(name) if name else None
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


# ---------------------------------------------------------------------------------------------
# A training step's memory-bound bytes per leaf (kernel_facts.json "eager_training_bytes";
# the module's docstring says how).

SCORES, SOFTMAX = LAYER + "self_attention.scores", LAYER + "self_attention.softmax"
EXCLUDED_OPS = ("aten.mm.", "aten.addmm.", "aten.bmm.", "aten._unsafe_view.")


def _moves_bytes(func: Any) -> bool:
    name = str(func)
    return not (func.is_view or name.startswith(EXCLUDED_OPS) or "scaled_dot_product" in name)


def _tensor_bytes(value: Any) -> int:
    import torch

    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(_tensor_bytes(v) for v in value)
    return 0


class ByteCounter:
    """Bytes and ops (those that move bytes: _moves_bytes) by region and pass over one forward and
    backward of a model (count)."""

    def __init__(self, model: Any):
        self.ops = OpCounter(model)
        self.nodes: dict[Any, str] = {}
        self.bytes: dict[str, Counter] = {"forward": Counter(), "backward": Counter()}
        self.kernels: dict[str, Counter] = {"forward": Counter(), "backward": Counter()}
        self.names: dict[str, dict[str, list[str]]] = {"forward": {}, "backward": {}}
        self.backward = False

    def claim(self, value: Any, region: str) -> None:
        """Give every autograd node behind `value` that has no leaf yet this region."""
        import torch

        stack = [value.grad_fn] if isinstance(value, torch.Tensor) and value.grad_fn is not None else []
        while stack:
            node = stack.pop()
            if node is None or node in self.nodes:
                continue
            self.nodes[node] = region
            stack += [parent for parent, _ in node.next_functions]

    def advance(self, func: Any) -> None:
        """Inside eager attention (eager_attention_forward, given to the scores leaf): the softmax
        call starts the softmax leaf (its cast back and the dropout follow it), the next matmul
        the weighted sum's (that product and the output's transpose copy)."""
        stack, name = self.ops.stack, getattr(func, "__name__", "")
        if stack[-1] == SCORES and name == "softmax":
            stack[-1] = SOFTMAX
        elif stack[-1] == SOFTMAX and name == "matmul":
            stack[-1] = LAYER + "self_attention.weighted_sum"

    def region(self) -> str:
        import torch

        if not self.backward:
            return self.ops.region()
        node = torch._C._current_autograd_node()
        return "engine" if node is None else self.nodes.get(node, "engine")

    def modes(self) -> tuple[Any, Any]:
        """The function mode (forward only: who created each node) and the dispatch mode."""
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        counter = self

        class Functions(TorchFunctionMode):
            def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                counter.advance(func)
                out = func(*args, **(kwargs or {}))
                for value in out if isinstance(out, (tuple, list)) else (out,):
                    counter.claim(value, counter.region())
                return out

        class Dispatch(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                out = func(*args, **(kwargs or {}))
                if _moves_bytes(func):
                    moved = _tensor_bytes(list(args) + list((kwargs or {}).values())) + _tensor_bytes(out)
                    phase, region = ("backward" if counter.backward else "forward"), counter.region()
                    counter.bytes[phase][region] += moved
                    counter.kernels[phase][region] += 1
                    counter.names[phase].setdefault(region, []).append(str(func))
                return out
        return Functions(), Dispatch()

    def count(self, input_ids: Any) -> None:
        import sys

        import torch

        functions, dispatch = self.modes()
        self.ops.install()
        family = sys.modules[type(self.ops.model).__module__]  # its modeling module
        core = family.eager_attention_forward

        def counted_core(*args: Any, **kwargs: Any) -> Any:
            self.ops.stack.append(SCORES)
            try:
                return core(*args, **kwargs)
            finally:
                self.ops.stack.pop()
        family.eager_attention_forward = counted_core
        self.ops.patched.append((family, "eager_attention_forward", core))
        dropout = torch.nn.functional.dropout

        def cuda_dropout(input: Any, p: float = 0.5, training: bool = True, inplace: bool = False) -> Any:
            # what at::dropout runs on a CUDA tensor (is_fused_kernel_acceptable: 0 < p < 1): the
            # one native_dropout kernel (output and a bool mask), not the CPU's bernoulli, div, mul
            if training and 0 < p < 1 and not inplace:
                return torch.native_dropout(input, p, True)[0]
            return dropout(input, p, training, inplace)
        torch.nn.functional.dropout = cuda_dropout
        self.ops.patched.append((torch.nn.functional, "dropout", dropout))
        try:
            with functions, dispatch:
                if type(self.ops.model).__name__ == "BertModel":  # no head: its outputs' sum
                    out = self.ops.model(input_ids)
                    loss = out.last_hidden_state.float().sum() + out.pooler_output.float().sum()
                else:
                    logits = self.ops.model(input_ids, use_cache=False).logits
                    loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), input_ids.flatten())
        finally:
            self.ops.remove()
        self.backward = True
        with dispatch:
            loss.backward()


def training_model(hidden: int, heads: int, kv_heads: int, head_dim: int, ffn: int, layers: int = 2,
                   vocab: int = 97, seed: int = 0, attention: str = "sdpa", dtype: str = "bf16") -> Any:
    """A random LlamaForCausalLM of these sizes in this dtype (bf16, fp32) under this attention
    implementation (sdpa, eager), as a training step runs it."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    from .compare import TORCH_DTYPES  # bf16, fp16, fp32: one map

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=ffn, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv_heads, head_dim=head_dim,
                         max_position_embeddings=256, attn_implementation=attention)
    return LlamaForCausalLM(config).to(TORCH_DTYPES[dtype]).train()


def training_step_bytes(model: Any, batch: int, seq_len: int) -> dict[str, dict[str, dict[str, int]]]:
    """One training step's bytes and kernels per leaf run (per_leaf: a layer leaf per layer),
    forward and backward: {"bytes": {"forward": {leaf: bytes}, "backward": ...}, "kernels": ...}."""
    import torch

    counter = ByteCounter(model)
    generator = torch.Generator().manual_seed(1)
    counter.count(torch.randint(0, model.config.vocab_size, (batch, seq_len), generator=generator))
    layers = model.config.num_hidden_layers
    return {kind: {phase: per_leaf(counted[phase], layers) for phase in ("forward", "backward")}
            for kind, counted in (("bytes", counter.bytes), ("kernels", counter.kernels))}


#: The sizes a leaf's bytes may grow with (costmodel/symbols.py's names): tokens times a width,
#: tokens alone (a norm's statistics), a sequence's rotary tables, a weight's size, and eager
#: attention's (query x key) matrices: per head, and a mask's per sequence or for the batch.
BYTE_TERMS = ("b*h*n**2", "b*n**2", "n**2", "b*n*d", "b*n*d_ff", "b*n*h*d_h", "b*n*h_kv*d_h", "b*n*h", "b*n*h_kv", "b*n", "n*d_h", "n",
              "d", "d_ff", "d_h", "1")

#: Odd, unequal sizes (hidden, heads, KV heads, head width, FFN, batch, sequence): a head width
#: apart from hidden / heads, so that no two terms move together; at least two heads of each
#: kind (a transpose over one head is already contiguous, and its copy would vanish); the first
#: rows fit, the last two check.
TRAINING_SHAPES = ((32, 4, 2, 6, 37, 2, 5), (24, 6, 3, 10, 29, 3, 7), (40, 4, 4, 8, 53, 1, 11),
                   (36, 6, 2, 4, 31, 2, 9), (28, 2, 2, 12, 41, 4, 3), (56, 8, 4, 6, 23, 3, 6),
                   (21, 3, 3, 14, 47, 1, 13), (48, 4, 2, 10, 35, 2, 8), (30, 5, 5, 6, 43, 5, 4),
                   (52, 2, 2, 16, 61, 1, 10), (28, 4, 2, 10, 33, 3, 5), (36, 6, 3, 8, 39, 2, 12),
                   (42, 3, 3, 12, 45, 1, 9), (40, 8, 2, 4, 27, 4, 7), (44, 4, 2, 14, 59, 2, 6),
                   (22, 2, 2, 8, 51, 3, 11), (26, 2, 2, 6, 25, 2, 14), (30, 6, 2, 8, 29, 1, 15),
                   (36, 4, 4, 10, 49, 3, 2), (46, 2, 2, 4, 57, 4, 13), (50, 10, 5, 6, 39, 2, 16),
                   (54, 6, 3, 12, 21, 3, 4), (20, 4, 4, 6, 63, 5, 10), (60, 4, 2, 8, 45, 1, 17))


def shape_values(shape: tuple[int, ...]) -> dict[str, int]:
    hidden, heads, kv_heads, head_dim, ffn, batch, seq_len = shape
    return {"d": hidden, "h": heads, "h_kv": kv_heads, "d_h": head_dim, "d_ff": ffn, "b": batch, "n": seq_len}


def measure_shapes(shapes: tuple[tuple[int, ...], ...], attention: str = "sdpa", dtype: str = "bf16",
                   family: str = "llama") -> list[tuple[dict[str, int], dict]]:
    """(the shape's symbol values, training_step_bytes) for each shape, of the family's training
    model (training_model; training_families.gpt2_training_model, bert_training_model: gpt2_shapes)
    under this attention and dtype."""
    out = []
    for shape in shapes:
        hidden, heads, kv_heads, head_dim, ffn, batch, seq_len = shape
        if family in ("gpt2", "bert"):  # their head width is hidden / heads
            build = gpt2_training_model if family == "gpt2" else bert_training_model
            model = build(hidden, heads, ffn, attention=attention, dtype=dtype)
        else:
            model = training_model(hidden, heads, kv_heads, head_dim, ffn, attention=attention, dtype=dtype)
        out.append((shape_values(shape), training_step_bytes(model, batch, seq_len)))
    return out


def eager_shapes(shapes: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], ...]:
    """The shapes as eager attention's counts are linear on them: as many key/value heads as query
    heads (repeat_kv copies K and V only where they are fewer) and a batch of at least 2 (a batch
    of 1 here becomes 2: torch.matmul folds (b, heads) into one batch dimension, which copies the
    transposed query and key only where b > 1). The eager implementations are stated for those."""
    return tuple(shape[:2] + (shape[1],) + shape[3:5] + (max(shape[5], 2),) + shape[6:] for shape in shapes)


def gpt2_shapes(shapes: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], ...]:
    """eager_shapes with the hidden size heads x head width, as GPT-2's attention has it."""
    return tuple((shape[1] * shape[3],) + shape[1:] for shape in eager_shapes(shapes))


def byte_terms(measured: list[tuple[dict[str, int], dict]]) -> tuple[str, ...]:
    """BYTE_TERMS, less the key/value heads' where every shape has h_kv = h, and less the heads x
    head width terms where every shape has d = h d_h (they would repeat others)."""
    terms = BYTE_TERMS
    if all(values["h_kv"] == values["h"] for values, _ in measured):
        terms = tuple(t for t in terms if "h_kv" not in t)
    if all(values["d"] == values["h"] * values["d_h"] for values, _ in measured):
        terms = tuple(t for t in terms if "h*d_h" not in t)
    return terms


def fit_bytes(measured: list[tuple[dict[str, int], dict]], check: int = 2,
              leaves: tuple[str, ...] | None = None) -> dict[str, dict[str, str]]:
    """Each leaf's forward and backward bytes as an integer combination of byte_terms (sympy text),
    solved on all but the last `check` shapes and required to be exact on every shape; `leaves`:
    those only (default: every leaf measured)."""
    import numpy as np
    import sympy as sp

    names = byte_terms(measured)
    terms = [sp.sympify(t) for t in names]
    symbols = sorted(set().union(*(t.free_symbols for t in terms)), key=str)
    rows = [[float(t.subs({s: values[str(s)] for s in symbols})) for t in terms] for values, _ in measured]
    fit = np.array(rows[:len(rows) - check])
    out: dict[str, dict[str, str]] = {}
    for phase in ("forward", "backward"):
        for leaf in leaves or sorted(set().union(*(m["bytes"][phase] for _, m in measured))):
            if leaf in ("model", "engine"):
                continue
            seen = [m["bytes"][phase].get(leaf, 0) for _, m in measured]
            solution, *_ = np.linalg.lstsq(fit, np.array(seen[:len(fit)], dtype=float), rcond=None)
            coefficients = [int(round(c)) for c in solution]
            expr = sum((c * t for c, t in zip(coefficients, terms)), sp.Integer(0))
            exact = [int(sum(c * r for c, r in zip(coefficients, row))) for row in rows]
            if exact != seen:
                raise AssertionError(f"{leaf} ({phase}): no integer combination of {names} gives the "
                                     f"measured bytes {seen} (fit {exact}).")
            out.setdefault(leaf, {})[phase] = str(sp.expand(expr))
    return out


#: The leaves whose training bytes are stated: every leaf of the Llama tree the decoder runs
#: but the attention core's. The embedding's gather reads rows, not the table the in-plus-out
#: rule would count, and the head's loss runs outside the model (its own implementation): they
#: keep the tree's bytes.
STATED_LEAVES = ("decoder.rope_tables",) + tuple(LAYER + leaf for leaf in (
    "self_attention.norm", "self_attention.qkv", "self_attention.rope", "self_attention.out",
    "self_attention.residual", "ffn.norm", "ffn.mlp", "ffn.residual")) + ("decoder.final_norm",)

#: Measured and recorded, not used: the attention module's own body around the call (the
#: weighted-sum leaf, as OpCounter gives it). On the CPU its backward copies the query and key
#: gradients back from (batch, heads, tokens, width) memory; CUDA's flash backward returns them
#: in (batch, tokens, heads, width) memory (transposed views), so the heads' views need no copy
#: there, and the leaf's time is the attention model's.
CPU_ONLY_LEAVES = (LAYER + "self_attention.weighted_sum",)


def training_leaves(measured: list[tuple[dict[str, int], dict]],
                    leaves: tuple[str, ...] = STATED_LEAVES) -> dict[str, dict[str, Any]]:
    """kernel_facts.json "eager_training_bytes" leaves: each leaf's bytes (fit_bytes) and its
    kernels (ops that move bytes) per run, forward and backward, the same at every shape."""
    fitted = fit_bytes(measured, leaves=leaves)
    out: dict[str, dict[str, Any]] = {}
    for leaf in leaves:
        entry: dict[str, Any] = {phase: fitted.get(leaf, {}).get(phase, "0") for phase in ("forward", "backward")}
        for phase in ("forward", "backward"):
            kernels = {m["kernels"][phase].get(leaf, 0) for _, m in measured}
            if len(kernels) != 1:
                raise AssertionError(f"{leaf} ({phase}): {sorted(kernels)} kernels at different shapes.")
            entry[f"{phase}_kernels"] = kernels.pop()
        out[leaf] = entry
    return out


def entry_leaves(family: str = "llama", attention: str = "sdpa", dtype: str = "bf16") -> dict[str, Any]:
    """One kernel_facts.json "eager_training_bytes" entry's measured leaves (and Llama's sdpa
    cpu_only ones): the family's shapes (Llama sdpa: TRAINING_SHAPES; Llama eager: eager_shapes;
    GPT-2 and BERT: gpt2_shapes), its stated leaves, eager attention's three where it runs,
    BERT's layer leaves under the encoder's names."""
    from .training_families import BERT_STATED, ENCODER_LAYER, GPT2_STATED

    if family == "llama":
        shapes = measure_shapes(TRAINING_SHAPES if attention == "sdpa" else eager_shapes(TRAINING_SHAPES), attention, dtype)
    else:
        shapes = measure_shapes(gpt2_shapes(TRAINING_SHAPES), attention, dtype, family=family)
    stated = {"llama": STATED_LEAVES, "gpt2": GPT2_STATED, "bert": BERT_STATED}[family]
    core = (SCORES, SOFTMAX, LAYER + "self_attention.weighted_sum") if attention == "eager" else ()
    leaves = {path.replace(LAYER, ENCODER_LAYER) if family == "bert" else path: fields
              for path, fields in training_leaves(shapes, stated + core).items()}
    out: dict[str, Any] = {"leaves": leaves}
    if family == "llama" and attention == "sdpa":
        out["cpu_only"] = training_leaves(shapes, CPU_ONLY_LEAVES)
    return out


if __name__ == "__main__":  # python -m validate.eager_op_counts [family attention dtype]: one entry's bytes
    import json
    import sys

    import torch

    torch.set_num_threads(1)
    print(json.dumps(entry_leaves(*sys.argv[1:4]), indent=1))
