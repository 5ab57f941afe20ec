"""Which context-parallel rotations each framework's code runs (wt43_etpfix; costmodel/layout/context.py).

- DeepSpeed v0.18.0's sequence parallelism is head all-to-all only (sequence/layer.py DistributedAttention,
  runtime/sequence_parallel/ulysses_sp.py UlyssesSPAttentionHF, sequence/fpdt_layer.py's chunked passes): the
  all-gather rotation (torch's context_parallel) is refused under it, a2a its default; a ring stays, a
  model's own on DeepSpeed's engine (ms-swift's ring attention: the published row
  "ms-swift-long-deepspeed qwen2.5-3b zero3 ring cp4 64k 4xa100"), and plan builds DeepSpeed's context-parallel
  layouts with a2a.
- --cp-kv-heads repeated under a2a: Megatron-DeepSpeed's ParallelAttention repeats K and V to the query heads
  before DistributedAttention (microsoft/Megatron-DeepSpeed 1e3fc81d megatron/model/transformer.py), so under
  DeepSpeed it sends h / tp key heads; Transformer Engine's AttnFuncWithCPAndQKVOA2A (Megatron) repeats none and
  receives the model's h_kv: refused.
- Megatron-Core's hierarchical cp_comm_type "a2a+p2p" (core_v0.12.0 transformer_config.py) is refused with why.
Before this branch each refusal here ran (exit 0).
"""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main
import costmodel
from costmodel.config import ConfigError
from costmodel.layout import Layout

LLAMA3 = ["simulate", "--train", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "16", "--dp", "8",
          "--seq-len", "8192", "--attention", "flash", "--cp", "2"]


@pytest.mark.parametrize("extra, words", [
    (["--framework", "deepspeed", "--cp-rotate", "allgather"],
     "DeepSpeed's sequence parallelism is DeepSpeed-Ulysses' head all-to-all (--cp-rotate a2a, its default); it has no "
     "all-gather of keys and values (a model's own ring attention on its engine, as ms-swift's: --cp-rotate ring)."),
    (["--framework", "megatron", "--cp-rotate", "a2a", "--cp-kv-heads", "repeated"],
     "--cp-kv-heads repeated has no meaning under Megatron's --cp-rotate a2a: Transformer Engine's "
     "AttnFuncWithCPAndQKVOA2A receives the model's key/value heads and repeats none (use --cp-kv-heads kv)."),
    (["--framework", "megatron", "--cp-rotate", "a2a+p2p"], "Megatron-Core's hierarchical cp_comm_type 'a2a+p2p'"),
])
def test_what_the_framework_does_not_run_is_one_line(extra, words, capsys):
    code, out, err = run_main([*LLAMA3, *extra, "--json"], capsys)
    assert (code, out) == (2, "")
    assert words in err and "Traceback" not in err
    assert err.startswith("error: ") or "Error: Invalid value for '--cp-rotate'" in err


def test_the_python_api_says_why_a2a_p2p_is_not_a_rotation():
    with pytest.raises(ConfigError, match=r"got 'a2a\+p2p': Megatron-Core's hierarchical cp_comm_type 'a2a\+p2p'"):
        Layout(cp=2, cp_rotate="a2a+p2p", framework="megatron")


@pytest.mark.parametrize("heads, payload", [
    # b (n / cp) d_h e (2 H_q + 2 H_k) a layer and pass, 32 layers, forward and backward:
    # 4,096 x 128 x 2 x (2 x 32 + 2 x 32) x 64 (repeated: Megatron-DeepSpeed's repeat_kv, H_k = h = 32)
    ("repeated", 8_589_934_592),
    ("kv", 5_368_709_120),  # 4,096 x 128 x 2 x (2 x 32 + 2 x 8) x 64
])
def test_deepspeed_a2a_sends_the_heads_its_attention_receives(heads, payload, capsys):
    code, out, err = run_main([*LLAMA3, "--framework", "deepspeed", "--cp-rotate", "a2a", "--cp-kv-heads", heads, "--json"],
                          capsys)
    assert code == 0, err
    assert json.loads(out)["parallel"]["communication"]["cp"] == {"all_to_all": payload}


@pytest.mark.parametrize("framework", [[], ["--framework", "deepspeed"]])
def test_deepspeeds_default_rotation_is_its_all_to_all(framework, capsys):
    # the layout's default framework is deepspeed: `simulate --cp 2` priced torch's all-gather (16 GiB gathered and
    # 16 GiB of fp32 gradient sends here), which DeepSpeed does not run
    code, out, err = run_main([*LLAMA3, *framework, "--json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["parallel"]["communication"]["cp"] == {"all_to_all": 5_368_709_120}
    assert "--cp-rotate a2a," in cli_text(capsys, [*LLAMA3, *framework])
    assert Layout(cp=2).cp_rotate == "a2a" and Layout(cp=2, framework="megatron").cp_rotate == "allgather"
    # no context parallelism: nothing rotates, and nothing is fixed yet (wt43_review2: the cp 1 layout held
    # "allgather", so dataclasses.replace(Layout(), cp=2) kept it and a DeepSpeed layout was refused)
    assert Layout(framework="deepspeed").cp_rotate is None


@pytest.mark.parametrize("base, changes, rotate", [
    ({}, {"cp": 2}, "a2a"),  # DeepSpeed's, the default framework's
    ({"framework": "megatron"}, {"framework": "deepspeed", "cp": 2}, "a2a"),
    ({"framework": "deepspeed", "zero": 3}, {"framework": "fsdp2", "cp": 2}, "allgather"),  # torch's context_parallel
    ({"cp_rotate": "ring"}, {"cp": 2}, "ring"),  # a rotation typed is kept
])
def test_a_layout_given_context_parallelism_later_takes_its_frameworks_rotation(base, changes, rotate):
    import dataclasses

    layout = dataclasses.replace(Layout(**base), **changes)
    layout.check(costmodel.load_model("llama3-8b"), 2)
    assert layout.cp_rotate == rotate


def cli_text(capsys, args):
    code, out, err = run_main(args, capsys)
    assert code == 0, err
    return out


def test_a_models_own_ring_on_deepspeed_still_runs(capsys):
    code, out, err = run_main([*LLAMA3, "--framework", "deepspeed", "--cp-rotate", "ring", "--json"], capsys)
    assert code == 0, err
    # priced as torch's ring (ms-swift's zigzag ring flash attention also sends fp32 gradients): (cp - 1) kv forward,
    # (cp - 1) kv and cp fp32 gradient sends (2 kv each) backward, 6 kv a layer; kv = 4,096 x 8 x 128 x 2 x 2 bytes
    assert json.loads(out)["parallel"]["communication"]["cp"] == {"send": 6 * 16_777_216 * 32}


def test_plan_builds_deepspeeds_context_parallel_layouts_with_its_all_to_all():
    result = costmodel.plan("llama3.1-8b", 8, "h100-sxm", seq_len=131072, global_batch=8, tp=1, pp=1,
                            framework="deepspeed", zero=1, recompute="full")
    rows = result.feasible + result.infeasible
    assert {(row["layout"]["cp"], row["layout"].get("cp_rotate")) for row in rows if row["layout"]["cp"] > 1} == \
        {(2, "a2a"), (4, "a2a"), (8, "a2a")}
