"""torchtitan's selective op checkpointing (--recompute torchtitan-op; costmodel/op_checkpoint.py),
as torchtitan 9dec370's parallelize_llama.py states it (lines 213-276): a layer keeps its input, the
outputs of its odd aten.mm and of the sdpa kernel; everything else reruns in backward up to the
layer's last saved tensor.

Exact integers on the odd Llama of tests/odd_configs.py (llama-gqa: d 48, h 6, h_kv 2, d_h 8,
d_ff 37, V 99, 2 layers) and its Qwen2 twin with q, k, v biases, b 3, n 5 (T = 15 tokens), bf16
(e = 2), sdpa (the flash kernel). The measured test applies the same policy to Hugging Face's
classes (validate/op_checkpoint.py) and reads what they keep and rerun.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import sympy as sp

from costmodel import symbols as S
from costmodel.config import ConfigError, Workload
from costmodel.memory import activation_bytes
from costmodel.presets import load_preset
from costmodel.tree import CostModel, model_values, profile_for

sys.path.insert(0, str(Path(__file__).parent))
from cli_run import run_main  # noqa: E402
from odd_configs import odd_configs  # noqa: E402

B, N, E = 3, 5, 2
T = B * N
CONFIGS = {cfg.name: cfg for cfg in odd_configs()}


def tree(name: str, recompute: str = "torchtitan-op", attention: str = "sdpa") -> CostModel:
    workload = Workload(seq_len=N, batch=B, dtype="bf16", attention=attention, recompute=recompute)
    return CostModel(CONFIGS[name], profile_for(CONFIGS[name], workload))


def number(model: CostModel, expr) -> int:
    at = {**{k: sp.Integer(v) for k, v in model_values(model.cfg).items()}, S.b: B, S.n: N, S.e: E, S.T: 0, S.s: N}
    return int(sp.sympify(expr).xreplace(at))


def layer(model: CostModel) -> dict[str, object]:
    """A layer's leaves by sublayer and name ("ffn.mlp"; the checkpoint: "None.checkpoint")."""
    return {f"{leaf.sublayer}.{leaf.name}": leaf for leaf in model.leaves if leaf.part == "layer"}


def kept_total(model: CostModel) -> int:
    """What the forward keeps: every leaf but the checkpointed ones (rebuilt in backward)."""
    return number(model, model.total("saved_bytes", [leaf for leaf in model.leaves if not leaf.checkpointed]))


def rerun_flops(model: CostModel) -> int:
    return sum(number(model, leaf.count * leaf.rerun.flops_matmul) for leaf in model.leaves if leaf.rerun is not None)


def test_llama_keeps_its_input_its_odd_matmuls_and_the_kernels_outputs():
    """The matmuls run q, k, v, o, gate, up, down: the 1st, 3rd, 5th and 7th (q, v, gate, down)
    keep their outputs. Per layer: the input T d e = 15*48*2 = 1,440; q T h d_h e = 1,440 and
    v T h_kv d_h e = 480 (1,920); the kernel's output 1,440 and fp32 log-sum-exp 4 b h n = 360
    (1,800); gate T d_ff e = 1,110 and down T d e = 1,440 (2,550): 7,710 a layer, 15,420 for two.
    Outside the layers as without recomputation: the ids 8 T = 120, the RoPE tables 2 d_h e n =
    160, the final norm 5,820 and the loss 6,064 (12,164): 27,584 kept. Backward rebuilds one
    layer at a time what it saves without recomputation: the norms 5,820 each, q and k 1,920,
    the log-sum-exp 360, v and the output 1,920, the FFN's four d_ff-wide tensors 4,440: 20,280."""
    model = layer(tree("llama-gqa"))
    kept = {name: number(tree("llama-gqa"), leaf.cost.saved_bytes) for name, leaf in model.items()
            if not leaf.checkpointed}
    assert kept == {"None.checkpoint": 1440, "self_attention.qkv_kept": 1920,
                    "self_attention.weighted_sum_kept": 1800, "ffn.mlp_kept": 2550, "ffn.residual": 0}
    assert model["self_attention.qkv"].kept_outputs == ("q", "v")
    assert model["ffn.mlp"].kept_outputs == ("gate", "down")
    assert model["self_attention.out"].kept_outputs == ()
    whole = tree("llama-gqa")
    assert kept_total(whole) == 2 * 7710 + 12164 == 27584
    none = tree("llama-gqa", "none")
    assert number(none, none.total("saved_bytes", none.layer_leaves())) // 2 == 20280
    assert number(whole, activation_bytes(whole)) == 27584 + 20280


def test_llama_reruns_k_o_up_and_every_memory_bound_op_but_the_last_residual():
    """Rerun a layer: k 2 T d h_kv d_h = 23,040, o 2 T (h d_h) d = 69,120, up 2 T d d_ff = 53,280
    (145,440 a layer, 290,880 for two); the norms (T d = 720 elements each), RoPE (T (h + h_kv)
    d_h = 960), the first residual add (720), SiLU and the product (T d_ff = 555 each); not the
    attention kernel (its outputs are kept), nor the closing residual add (the recompute stops at
    the down projection's input, the layer's last saved tensor)."""
    model = tree("llama-gqa")
    leaves = layer(model)
    reruns = {name: (number(model, leaf.rerun.flops_matmul), {k: number(model, x) for k, x in leaf.rerun.elements})
              for name, leaf in leaves.items() if leaf.rerun is not None}
    assert reruns == {"self_attention.norm": (0, {"rmsnorm": 720}), "self_attention.qkv": (23040, {}),
                      "self_attention.rope": (0, {"rope": 960}), "self_attention.out": (69120, {}),
                      "self_attention.residual": (0, {"add": 720}), "ffn.norm": (0, {"rmsnorm": 720}),
                      "ffn.mlp": (53280, {"silu": 555, "mul": 555})}
    assert [leaf.rerun for leaf in model.leaves if leaf.name in ("scores", "softmax", "weighted_sum")] == [None] * 3
    assert rerun_flops(model) == 2 * (23040 + 69120 + 53280) == 290880
    # the qkv leaf reruns one GEMM, k's: (T, h_kv d_h) from d
    qkv = leaves["self_attention.qkv"]
    assert [tuple(number(model, x) for x in m) for m in qkv.rerun.matrices] == [(16, 48, 1)]


def test_biased_linears_run_addmm_neither_counted_nor_kept():
    """Qwen2's q, k, v carry biases (aten.addmm): the count starts at o (kept), gate (rerun), up
    (kept), down (even, and past the recompute's stop). Kept a layer: the input 1,440, the kernel's
    1,800, o's T d e = 1,440 and up's 1,110: 5,790, 11,580 for two, 23,744 with the 12,164 outside.
    Rerun a layer: q 69,120, k and v 23,040 each, gate 53,280: 168,480, 336,960 for two."""
    model = tree("qwen2-gqa")
    leaves = layer(model)
    assert [leaves[name].kept_outputs for name in ("self_attention.qkv", "self_attention.out", "ffn.mlp")] == \
        [(), ("out",), ("up",)]
    assert kept_total(model) == 2 * (1440 + 1800 + 1440 + 1110) + 12164 == 23744
    assert leaves["self_attention.out"].rerun is None
    assert rerun_flops(model) == 2 * (69120 + 2 * 23040 + 53280) == 336960


def test_eager_attention_core_reruns_whole_and_keeps_nothing():
    """bmm and softmax are not in torchtitan's list: under eager attention the core reruns and its
    outputs are not kept (the scores 2 b h n^2 d_h = 2*3*6*25*8 = 7,200 FLOPs, the weighted sum the
    same)."""
    model = tree("llama-gqa", attention="eager")
    leaves = layer(model)
    assert "self_attention.weighted_sum_kept" not in leaves
    scores, weighted_sum = leaves["self_attention.scores"], leaves["self_attention.weighted_sum"]
    assert number(model, scores.rerun.flops_matmul) == number(model, weighted_sum.rerun.flops_matmul) == 7200
    assert kept_total(model) == 2 * (7710 - 1800) + 12164


def test_layers_whose_matmuls_the_tree_does_not_order_are_refused(capsys):
    with pytest.raises(ConfigError, match="router"):
        CostModel(load_preset("mixtral-8x7b"), profile_for(load_preset("mixtral-8x7b"),
                  Workload(attention="flash", recompute="torchtitan-op"))).leaves
    code, out, err = run_main(["estimate", "-m", "mixtral-8x7b", "--recompute", "torchtitan-op"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "torchtitan-op" in err


@pytest.mark.parametrize("command", [
    ["estimate", "-m", "llama3-8b", "--recompute", "torchtitan-op", "--json"],
    ["simulate", "-m", "llama3-8b", "--train", "--recompute", "torchtitan-op", "--json"],
    ["plan", "-m", "llama3-8b", "--gpus", "8", "--seq-len", "8192", "--global-batch", "16",
     "--attention", "flash", "--recompute", "torchtitan-op", "--json"],
])
def test_the_cli_accepts_it(command, capsys):
    import json

    code, out, err = run_main(command, capsys)
    assert code == 0, err
    assert "torchtitan-op" in json.dumps(json.loads(out))


def test_tensor_parallel_reruns_the_all_gathers_not_the_kept_reduce_scatters():
    """The policy keeps _c10d_functional.reduce_scatter_tensor's output: under sequence
    parallelism the recompute reruns only the column-parallel inputs' all-gathers (2 a layer);
    without it, the row-parallel outputs' all-reduces (not in the list)."""
    from costmodel.layout import Layout, ParallelEstimate

    cfg = load_preset("llama2-7b")
    workload = Workload(seq_len=2048, recompute="torchtitan-op", attention="flash")
    with_sp = ParallelEstimate(cfg, workload, Layout(tp=4, sp=True, framework="fsdp2", zero=3))
    stage = with_sp.stages[0]
    boundary = with_sp.numbers["boundary"]
    assert with_sp.recomputed_collectives(stage) == [("all_gather", 2 * 32, boundary)]
    without = ParallelEstimate(cfg, workload, Layout(tp=4, framework="fsdp2", zero=3))
    assert without.recomputed_collectives(without.stages[0]) == [("all_reduce", 2 * 32, boundary)]


@pytest.mark.measured
@pytest.mark.parametrize("name, attention", [("llama-gqa", "sdpa"), ("llama-gqa", "eager"), ("qwen2-gqa", "sdpa"),
                                             ("llama-mqa-bias", "sdpa"), ("gpt2-nodrop", "sdpa")])
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_equals_the_policy_run_on_hugging_face(name, attention, dtype):
    """Hugging Face's class with torchtitan's policy around each decoder layer keeps exactly what
    the tree keeps (the RoPE tables aside: the checkpointed layers hold them by reference, out of
    the hooks' sight) and its backward reruns exactly the matmul FLOPs the tree reruns."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from validate.hf_models import build_hf_model, make_inputs
    from validate.op_checkpoint import apply_op_policy, kept_bytes, recomputed_flops

    cfg, torch_dtype, e = CONFIGS[name], {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype], {"bf16": 2, "fp32": 4}[dtype]
    inputs = make_inputs(cfg, B, N, labels=True)

    def build():
        torch.manual_seed(0)
        return build_hf_model(cfg, attention, torch_dtype)

    model = build()
    apply_op_policy(model)
    measured = kept_bytes(model, inputs)
    workload = Workload(seq_len=N, batch=B, dtype=dtype, attention=attention, recompute="torchtitan-op")
    ours = CostModel(cfg, profile_for(cfg, workload))
    at = {**{k: sp.Integer(v) for k, v in model_values(cfg).items()}, S.b: B, S.n: N, S.e: e, S.T: 0, S.s: N}
    kept = ours.total("saved_bytes", [leaf for leaf in ours.leaves if not leaf.checkpointed]).xreplace(at)
    rope = ours.total("saved_bytes", ours.select(name="rope_tables")).xreplace(at)
    assert measured["total"] + rope == kept
    assert recomputed_flops(build, inputs) == sum((leaf.count * leaf.rerun.flops_matmul).xreplace(at)
                                                  for leaf in ours.leaves if leaf.rerun is not None)
