"""What each leaf runs in eager PyTorch, measured again on the real transformers Llama
(validate/eager_op_counts.py: TorchDispatchMode, each op given to the leaf whose module, function
or autograd node runs it) and checked as exact integers:
  - the ops it launches inside transformers' continuous-batching engine (kernel_facts.json
    "eager_ops"), step by step;
  - the bytes its memory-bound ops move in a training step, forward and backward
    (kernel_facts.json "eager_training_bytes"), at shapes the stored expressions were not fitted
    on; and how the kernel model uses them."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from costmodel.eager_ops import eager_op_counts  # noqa: E402
from costmodel.kernel_time import kernel_facts  # noqa: E402
from costmodel.presets import config_from_dict  # noqa: E402
from costmodel.serving.steptime import serving_profile  # noqa: E402
from costmodel.tree import CostModel  # noqa: E402
from validate.eager_op_counts import count_engine_steps  # noqa: E402
from validate.serving_engine import TINY_LLAMA, tiny_model  # noqa: E402

#: One request alone first (its first chunk with nothing cached, then its decode steps alone),
#: then four more at once (steps of several sequences: chunks and decodes mixed, then decodes).
TRACE = [(0, 6, 4), (5, 9, 3), (5, 5, 4), (5, 7, 2), (5, 3, 3)]


@pytest.fixture(scope="module")
def counted():
    import torch

    torch.set_num_threads(1)
    steps = count_engine_steps(TRACE, tiny_model(0), names=True, scheduler="fifo", block_size=4, num_blocks=32,
                               max_batch_tokens=16, max_requests=8)
    cfg = config_from_dict({**TINY_LLAMA, "model_type": "llama", "torch_dtype": "float32"}, "tiny", "tiny-llama")
    tree = CostModel(cfg, serving_profile(cfg, attention="sdpa"), phase="chunk")
    return steps, cfg, {leaf.path: type(leaf.block).__name__ for leaf in tree.leaves}


def _entry() -> dict:
    (entry,) = kernel_facts()["eager_ops"]["implementations"]
    return entry


def test_the_stated_counts_apply_to_the_engines_llama(counted):
    _, cfg, _ = counted
    assert eager_op_counts(cfg, "sdpa") == _entry()["ops"]
    assert eager_op_counts(cfg, "eager") is None  # another attention path launches other ops
    assert eager_op_counts(cfg, "sdpa", weight_format="int4") is None
    assert eager_op_counts(cfg.replace(qkv_bias=True), "sdpa") is None  # addmm, not mm
    assert eager_op_counts(cfg.replace(family="gpt2"), "sdpa") is None


def test_every_leaf_launches_its_stated_ops_in_every_step(counted):
    steps, _, blocks = counted
    ops = _entry()["ops"]
    cases = [case["ops"] for case in _entry()["cases"]["WeightedSum"].values() if isinstance(case, dict)]
    assert cases == [30, 28, 23] and cases[0] == ops["WeightedSum"]
    seen, cached = set(), {}
    for index, step in enumerate(steps):
        counted_leaves = {path: n for path, n in step["ops"].items() if path not in ("model", "engine")}
        # every leaf that launches an op is a leaf of the tree, with its block's stated count
        assert set(counted_leaves) <= set(blocks)
        # every tree leaf with a stated count above zero was counted; those stated 0 launched nothing
        assert {p for p, b in blocks.items() if ops[b]} == set(counted_leaves)
        mask = len(step["queries"]) > 1 or max(step["queries"]) > 1
        read = any(cached.get(r, 0) for r in step["requests"])
        case = 0 if mask and read else 1 if mask else 2
        assert not (not mask and not read)  # a one-token prompt alone: not in this trace
        seen.add(case)
        for path, n in counted_leaves.items():
            block = blocks[path]
            assert n == (cases[case] if block == "WeightedSum" else ops[block]), (index, path, n)
        assert step["ops"]["model"] == 1  # the logits' index: no leaf's
        for r, q in zip(step["requests"], step["queries"]):
            cached[r] = cached.get(r, 0) + q
    assert seen == {0, 1, 2}  # the trace ran every case


def test_the_counts_per_leaf_sum_to_a_steps_charged_ops(counted):
    """A step of several sequences on this 2-layer Llama: 1 + 8 + 2 x 90 + 6 + 4 = 199 ops charged."""
    steps, cfg, blocks = counted
    ops = _entry()["ops"]
    tree = CostModel(cfg, serving_profile(cfg, attention="sdpa"), phase="chunk")
    per_step = sum(ops[type(leaf.block).__name__] * int(leaf.count.subs(cfg_layers(cfg))) for leaf in tree.leaves)
    assert per_step == 199
    # the general case (a mask, keys read from the cache); the test above checks the other two
    several = [s for s in steps if s["ops"]["decoder.layer.self_attention.weighted_sum"] == ops["WeightedSum"]]
    assert several and all(sum(n * (cfg.n_decoder_layers if p.startswith("decoder.layer.") else 1)
                               for p, n in s["ops"].items() if p not in ("model", "engine")) == 199
                           for s in several)


def cfg_layers(cfg) -> dict:
    from costmodel import symbols as S

    return {S.L_dec: cfg.n_decoder_layers}


# ---------------------------------------------------------------------------------------------
# A training step's bytes (kernel_facts.json "eager_training_bytes")

#: Two odd shapes (hidden, heads, KV heads, head width, FFN, batch, sequence) outside
#: validate/eager_op_counts.TRAINING_SHAPES: the stored expressions must hold here too.
CHECK_SHAPES = ((60, 6, 3, 12, 67, 2, 7), (34, 2, 2, 18, 71, 3, 5))


def _training(name: str = "transformers-llama-sdpa-training") -> dict:
    (entry,) = [e for e in kernel_facts()["eager_training_bytes"]["implementations"] if e["name"] == name]
    return entry


@pytest.fixture(scope="module")
def trained():
    import torch

    from validate.eager_op_counts import measure_shapes

    torch.set_num_threads(1)
    return measure_shapes(CHECK_SHAPES)


def _at(text: str, values: dict) -> int:
    import sympy as sp

    return int(sp.sympify(text).subs({sp.Symbol(k): v for k, v in values.items()}))


def test_every_leaf_moves_its_stated_bytes_forward_and_backward(trained):
    entry = _training()
    stated = {**entry["leaves"], **entry["cpu_only"]["leaves"]}
    for values, measured in trained:
        for phase in ("forward", "backward"):
            moved = measured["bytes"][phase]
            # every leaf that moved bytes is stated, but the embedding (its gather: the tree's)
            # and what no leaf holds (the model's position ids; the loss, outside the model)
            assert set(moved) - set(stated) <= {"embedding.tokens", "model", "engine"}, phase
            for leaf, fields in stated.items():
                assert moved.get(leaf, 0) == _at(fields[phase], values), (values, leaf, phase)
                assert measured["kernels"][phase].get(leaf, 0) == fields[f"{phase}_kernels"], (leaf, phase)


def test_a_norm_moves_eight_kernels_of_fp32_traffic():
    """HF's LlamaRMSNorm in bf16: _to_copy (2 + 4 bytes an element), pow (4 + 4), mean (4 + 4
    a token), add and rsqrt (4 + 4 a token each), mul (4 + 4 + 4 a token), _to_copy (4 + 2),
    the weight's mul (2 + 2 + 2 a weight): 36 bytes an element, 24 a token, 2 a weight; the tree's
    fused norm moves 2 e = 4 an element."""
    norm = _training()["leaves"]["decoder.layer.self_attention.norm"]
    assert norm["forward"] == "36*b*d*n + 24*b*n + 2*d" and norm["forward_kernels"] == 8
    assert _training()["leaves"]["decoder.layer.ffn.mlp"]["forward"] == "10*b*d_ff*n"  # silu and mul: 5 e


def test_the_measured_implementation_applies_to_eager_hf_llama_training():
    from costmodel.config import Workload
    from costmodel.eager_ops import eager_training_implementation
    from costmodel.presets import load_preset

    cfg, workload = load_preset("llama3-8b"), Workload(seq_len=64, batch=2, dtype="bf16", impl="hf",
                                                        attention="flash")
    assert eager_training_implementation(cfg, workload) is _training()
    assert eager_training_implementation(cfg, workload.replace(attention="sdpa")) is _training()
    # eager attention is stated for multi-head attention only (llama3-8b groups its KV heads)
    assert eager_training_implementation(cfg, workload.replace(attention="eager")) is None
    assert eager_training_implementation(cfg, workload.replace(impl="megatron")) is None  # fused kernels
    assert eager_training_implementation(cfg, workload.replace(dtype="fp32")) is _training(
        "transformers-llama-sdpa-training-fp32")
    # fp16 runs bf16's ops at the same sizes (measured equal, session 44: kernel_facts.json same_bytes_as); was None
    assert eager_training_implementation(cfg, workload.replace(dtype="fp16")) is _training()
    assert eager_training_implementation(cfg, workload.replace(weight_dtype="int8")) is None
    assert eager_training_implementation(cfg.replace(qkv_bias=True), workload) is None
    assert eager_training_implementation(load_preset("gpt2"), workload) is None


EAGER = {"bf16": "transformers-llama-eager-training-bf16", "fp32": "transformers-llama-eager-training-fp32"}


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_eager_attention_and_fp32_leaves_move_their_stated_bytes(dtype):
    """The eager entries (and sdpa's fp32) measured again at two shapes they were not solved on
    (eager_shapes: h_kv = h, b >= 2): every stated leaf's bytes and kernels, forward and backward."""
    import torch

    from validate.eager_op_counts import eager_shapes, measure_shapes

    torch.set_num_threads(1)
    cases = [(EAGER[dtype], measure_shapes(eager_shapes(CHECK_SHAPES), "eager", dtype))]
    if dtype == "fp32":
        cases.append(("transformers-llama-sdpa-training-fp32", measure_shapes(CHECK_SHAPES, "sdpa", dtype)))
    for name, measured in cases:
        stated = _training(name)["leaves"]
        for values, counted in measured:
            for phase in ("forward", "backward"):
                assert set(counted["bytes"][phase]) - set(stated) <= {"embedding.tokens", "model", "engine",
                                                                      "decoder.layer.self_attention.weighted_sum"}
                for leaf, fields in stated.items():
                    assert counted["bytes"][phase].get(leaf, 0) == _at(fields[phase], values), (name, leaf, phase)
                    assert counted["kernels"][phase].get(leaf, 0) == fields[f"{phase}_kernels"], (name, leaf)


def test_eager_softmax_upcasts_in_bf16_only():
    """HF's eager attention runs softmax(dtype=float32).to(dtype): in bf16 _to_copy (2 + 4 bytes a
    score), _softmax (4 + 4), _to_copy (4 + 2) = 20 bytes a (query, key) pair per head, in three
    kernels; in fp32 the one _softmax (4 + 4). The tree's softmax moves 2 e a score."""
    bf16, fp32 = (_training(EAGER[dtype])["leaves"]["decoder.layer.self_attention.softmax"] for dtype in ("bf16", "fp32"))
    assert (bf16["forward"], bf16["forward_kernels"]) == ("20*b*h*n**2", 3)
    assert (fp32["forward"], fp32["forward_kernels"]) == ("8*b*h*n**2", 1)
    assert (bf16["backward"], fp32["backward"]) == ("24*b*h*n**2", "12*b*h*n**2")


def test_eager_attention_bytes_apply_to_multi_head_llama_at_batch_two_and_more():
    from costmodel.config import Workload
    from costmodel.eager_ops import eager_training_implementation
    from costmodel.presets import load_preset

    cfg = load_preset("llama2-7b")  # 32 heads, 32 KV heads
    workload = Workload(seq_len=64, batch=2, dtype="bf16", impl="hf", attention="eager")
    assert eager_training_implementation(cfg, workload) is _training(EAGER["bf16"])
    assert eager_training_implementation(cfg, workload.replace(dtype="fp32")) is _training(EAGER["fp32"])
    assert eager_training_implementation(cfg, workload.replace(batch=1)) is None  # matmul copies no q, k
    assert eager_training_implementation(cfg.replace(n_kv_heads=8), workload) is None  # repeat_kv copies


GPT2 = {("eager", "bf16"): "transformers-gpt2-eager-training-bf16", ("eager", "fp32"): "transformers-gpt2-eager-training-fp32",
        ("sdpa", "fp32"): "transformers-gpt2-sdpa-training-fp32"}


@pytest.mark.parametrize("attention,dtype", sorted(GPT2))
def test_gpt2_leaves_move_their_stated_bytes(attention, dtype):
    """GPT2LMHeadModel measured again at two shapes its entries were not solved on (gpt2_shapes:
    d = h d_h, b >= 2): every stated leaf's bytes and kernels, forward and backward."""
    import torch

    from validate.eager_op_counts import gpt2_shapes, measure_shapes

    torch.set_num_threads(1)
    stated = _training(GPT2[attention, dtype])["leaves"]
    for values, counted in measure_shapes(gpt2_shapes(CHECK_SHAPES), attention, dtype, family="gpt2"):
        for phase in ("forward", "backward"):
            for leaf, fields in stated.items():
                assert counted["bytes"][phase].get(leaf, 0) == _at(fields[phase], values), (leaf, phase, values)
                assert counted["kernels"][phase].get(leaf, 0) == fields[f"{phase}_kernels"], (leaf, phase)


BERT = {("eager", "bf16"): "transformers-bert-eager-training-bf16", ("eager", "fp32"): "transformers-bert-eager-training-fp32",
        ("sdpa", "fp32"): "transformers-bert-sdpa-training-fp32"}


@pytest.mark.parametrize("attention,dtype", sorted(BERT))
def test_bert_leaves_move_their_stated_bytes(attention, dtype):
    """BertModel measured again at two unseen shapes (counted under the decoder's layer names,
    stated under the encoder's): every stated leaf's bytes and kernels, forward and backward."""
    import torch

    from validate.eager_op_counts import LAYER, gpt2_shapes, measure_shapes
    from validate.training_families import ENCODER_LAYER

    torch.set_num_threads(1)
    stated = _training(BERT[attention, dtype])["leaves"]
    for values, counted in measure_shapes(gpt2_shapes(CHECK_SHAPES), attention, dtype, family="bert"):
        for phase in ("forward", "backward"):
            for leaf, fields in stated.items():
                as_counted = leaf.replace(ENCODER_LAYER, LAYER)
                assert counted["bytes"][phase].get(as_counted, 0) == _at(fields[phase], values), (leaf, phase, values)
                assert counted["kernels"][phase].get(as_counted, 0) == fields[f"{phase}_kernels"], (leaf, phase)


def test_bert_entries_apply_to_bert_base():
    from costmodel.config import Workload
    from costmodel.eager_ops import eager_training_implementation
    from costmodel.presets import load_preset

    cfg, workload = load_preset("bert-base-uncased"), Workload(seq_len=512, batch=16, dtype="bf16", impl="hf",
                                                              attention="eager")
    assert eager_training_implementation(cfg, workload) is _training(BERT["eager", "bf16"])
    assert eager_training_implementation(cfg, workload.replace(attention="sdpa", dtype="fp32")) is _training(
        BERT["sdpa", "fp32"])
    assert eager_training_implementation(cfg, workload.replace(batch=1)) is None


def test_gpt2_dropout_is_cudas_one_kernel_and_its_softmax_runs_in_bf16():
    """at::dropout on a CUDA tensor is one native_dropout: input and output (e each) and a bool
    mask (1 byte) an element, forward and backward alike: 5 bytes in bf16, 9 in fp32. GPT-2's eager
    softmax has no upcast: _softmax (2 + 2) and the probabilities' dropout (5): 9 bytes a score."""
    for dtype, per_element in (("bf16", 5), ("fp32", 9)):
        leaves = _training(GPT2["eager", dtype])["leaves"]
        for leaf in ("embedding.dropout", "decoder.layer.self_attention.dropout", "decoder.layer.ffn.dropout"):
            assert leaves[leaf]["forward"] == leaves[leaf]["backward"] == f"{per_element}*b*d*n"
    assert _training(GPT2["eager", "bf16"])["leaves"]["decoder.layer.self_attention.softmax"]["forward"] == "9*b*h*n**2"


def test_gpt2_entries_apply_where_measured():
    from costmodel.config import Workload
    from costmodel.eager_ops import eager_training_implementation
    from costmodel.presets import load_preset

    cfg, workload = load_preset("gpt2"), Workload(seq_len=992, batch=8, dtype="bf16", impl="hf", attention="eager")
    assert eager_training_implementation(cfg, workload) is _training(GPT2["eager", "bf16"])
    assert eager_training_implementation(cfg, workload.replace(attention="sdpa", dtype="fp32")) is _training(
        GPT2["sdpa", "fp32"])
    assert eager_training_implementation(cfg, workload.replace(attention="sdpa")) is None  # bf16 sdpa: not measured
    assert eager_training_implementation(cfg, workload.replace(batch=1)) is None
    assert eager_training_implementation(cfg.replace(activation="gelu"), workload) is None  # another GELU's ops


def test_an_eager_training_step_moves_the_measured_bytes_and_a_compiled_one_the_trees():
    """llama3-8b, b = 2, n = 8192 (torchtitan's run): the layer's first norm moves 36 bytes an
    element forward and 102 backward when eager; compiled, the tree's fused kernel less what its
    fusion saves, backward twice it; the attention call is the same either way."""
    from costmodel.config import Workload
    from costmodel.hardware import load_hardware
    from costmodel.kernel_time import AttentionCall, KernelTimer, Pointwise, kernels_seconds
    from costmodel.layout.kernel_step import KernelStepTime, rank_kernels
    from costmodel.layout.rank_kernel_cache import eager_training
    from costmodel.layout.rank import Layout, ParallelEstimate
    from costmodel.presets import load_preset

    cfg = load_preset("llama3-8b")
    workload = Workload(seq_len=8192, batch=2, dtype="bf16", impl="hf", attention="flash", recompute="selective")
    estimate = ParallelEstimate(cfg, workload, Layout(dp=8, zero=3, framework="fsdp2"))
    assert eager_training(estimate, compiled=False) is _training()
    assert eager_training(estimate, compiled=True) is None and eager_training(estimate, False, autocast=True) is None
    eager, compiled = rank_kernels(estimate, True, False), rank_kernels(estimate, True, True)
    tokens, d = 2 * 8192, cfg.d_model
    norm = [kernels for key, _, _, kernels in eager if key.startswith("layer")][0]
    assert norm == [Pointwise(36 * tokens * d + 24 * tokens + 2 * d, norm[0].flops,
                              102 * tokens * d + 36 * tokens + 4 * d)]
    fused = [kernels for key, _, _, kernels in compiled if key.startswith("layer")][0]
    # the tree's 2 e t d + e d (e = 2), less the residual's sum it does not read again (e t d)
    assert fused[0].backward_bytes is None and fused[0].bytes == 4 * tokens * d + 2 * d - 2 * tokens * d
    calls = lambda entries: [k for _, _, _, ks in entries for k in ks if isinstance(k, AttentionCall)]  # noqa: E731
    assert calls(eager) == calls(compiled) and len(calls(eager)) == 1
    # the backward of a measured kernel is its measured bytes at the bandwidth, not twice the forward's
    timer = KernelStepTime(estimate, load_hardware("h100-sxm")).timer
    assert isinstance(timer, KernelTimer)
    kernel = norm[0]
    backward = kernels_seconds([kernel], timer, training=True) - kernels_seconds([kernel], timer)
    assert backward == pytest.approx(max(kernel.backward_bytes / timer.bandwidth, 2 * kernel.flops / timer.vector))

def test_the_copies_stated_are_the_bytes_the_engine_writes_in_each_case(counted):
    """kernel_facts.json eager_ops "copies", per case: the bytes index_select (the paged cache's
    gather) and clone (repeat_kv) write in each step, counted with TorchDispatchMode, are the
    stated parts' written halves for every key of the step (gather h_kv d_h e, repeat_kv h d_h e,
    K and V, per layer), where the step's case runs them (costmodel/serving/eager_step.py)."""
    from costmodel.serving.eager_step import EagerStep

    steps, cfg, _ = counted
    cases = _entry()["cases"]["WeightedSum"]
    e, d_h, layers = 4, cfg.d_model // cfg.n_heads, cfg.n_decoder_layers
    cached: dict = {}
    for step in steps:
        keys = [cached.get(r, 0) + q for r, q in zip(step["requests"], step["queries"])]
        case = EagerStep.case(step["queries"], keys)
        skips = cases[case].get("skips", [])
        gather = 0 if "gather" in skips else 2 * e * d_h * cfg.n_kv_heads * sum(keys) * layers
        repeat = 0 if "repeat_kv" in skips else 2 * e * d_h * cfg.n_heads * sum(keys) * layers
        assert step["written"].get("index_select", 0) == gather, (step["queries"], case)
        assert step["written"].get("clone", 0) == repeat, (step["queries"], case)
        for r, k in zip(step["requests"], keys):
            cached[r] = k


def test_each_copy_is_its_stated_calls_of_its_op_per_layer(counted):
    """kernel_facts.json eager_ops "copies": each part is `calls` calls of its aten `op` in the
    weighted-sum leaf per layer (2: K's and V's; the serving step charges each call the hardware's
    cold_copies fixed time, costmodel/serving/eager_step.py), where the step's case runs the part,
    and none where it skips it."""
    from costmodel.serving.eager_step import EagerStep

    steps, cfg, _ = counted
    entry = _entry()
    cases, parts = entry["cases"]["WeightedSum"], entry["copies"]["WeightedSum"]
    stated = {name: part for name, part in parts.items() if isinstance(part, dict)}
    assert {name: (part["op"], part["calls"]) for name, part in stated.items()} == {
        "gather": ("index_select", 2), "repeat_kv": ("clone", 2)}
    cached: dict = {}
    for step in steps:
        keys = [cached.get(r, 0) + q for r, q in zip(step["requests"], step["queries"])]
        skips = cases[EagerStep.case(step["queries"], keys)].get("skips", [])
        names = step["names"]["decoder.layer.self_attention.weighted_sum"]
        for name, part in stated.items():
            calls = 0 if name in skips else part["calls"] * cfg.n_decoder_layers
            assert names.count(f"aten.{part['op']}.default") == calls, (step["queries"], name)
        for r, k in zip(step["requests"], keys):
            cached[r] = k


def test_multi_head_attention_runs_no_repeat_kv():
    """With as many key/value heads as query heads (TINY_LLAMA at 4 and 4), transformers'
    repeat_kv returns its input: the weighted-sum leaf launches the "multi_head" counts (22, 20,
    22 ops in the three cases, where the grouped-query model launches 30, 28, 23), clone writes
    nothing, the gather writes its stated bytes, and eager_implementation states no repeat_kv copy
    (kernel_facts.json eager_ops "multi_head"; a grouped-query step is unchanged, tests above)."""
    import torch

    from costmodel.eager_ops import eager_implementation
    from costmodel.serving.eager_step import EagerStep

    torch.set_num_threads(1)
    steps = count_engine_steps(TRACE, tiny_model(0, num_key_value_heads=4), scheduler="fifo", block_size=4,
                               num_blocks=32, max_batch_tokens=16, max_requests=8)
    cfg = config_from_dict({**TINY_LLAMA, "num_key_value_heads": 4, "model_type": "llama", "torch_dtype": "float32"},
                           "tiny", "tiny-mha")
    entry = eager_implementation(cfg, "sdpa")
    cases = entry["cases"]["WeightedSum"]
    assert [cases[c]["ops"] for c in ("mask_cached", "mask_nothing_cached", "no_mask")] == [22, 20, 22]
    assert eager_op_counts(cfg, "sdpa") == {**_entry()["ops"], "WeightedSum": 22}
    assert [p for p, part in entry["copies"]["WeightedSum"].items() if isinstance(part, dict)] == ["gather"]
    e, d_h, layers, cached, seen = 4, cfg.d_model // cfg.n_heads, cfg.n_decoder_layers, {}, set()
    for step in steps:
        keys = [cached.get(r, 0) + q for r, q in zip(step["requests"], step["queries"])]
        case = EagerStep.case(step["queries"], keys)
        seen.add(case)
        weighted = [n for path, n in step["ops"].items() if path.endswith("weighted_sum")]
        assert weighted == [cases[case]["ops"]], (step["queries"], case)
        gather = 0 if "gather" in cases[case].get("skips", []) else 2 * e * d_h * 4 * sum(keys) * layers
        assert step["written"].get("index_select", 0) == gather and step["written"].get("clone", 0) == 0
        for r, k in zip(step["requests"], keys):
            cached[r] = k
    assert seen == {"mask_cached", "mask_nothing_cached", "no_mask"}
