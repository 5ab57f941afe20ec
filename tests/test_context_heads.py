"""Context parallelism's exchange as torch's ring runs it under torchtitan (issue 18, the CP rows):
the heads it moves are those sdpa receives (Layout.cp_kv_heads), and full recomputation re-runs
the forward's exchange with the layer (costmodel/layout/context.py)."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.config import ConfigError, Workload
from costmodel.hf import from_hf_config
from costmodel.layout import Layout, ParallelEstimate

# 8 query heads, 4 KV heads of 8, 2 layers: odd enough that h, h_kv and tp cannot be confused
SMALL_GQA = dict(model_type="llama", hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                 num_attention_heads=8, num_key_value_heads=4, vocab_size=128, max_position_embeddings=64)


def _cp(rotate: str = "allgather", heads: str = "kv", recompute: str = "none", layers: int | None = None,
        tp: int = 2) -> dict[str, int]:
    cfg = from_hf_config(SMALL_GQA, "small-gqa")
    workload = Workload(seq_len=16, batch=1, attention="flash", recompute=recompute, recompute_layers=layers)
    # torch's ring (torchtitan's: FSDP2); Megatron's is Transformer Engine's (tests/test_te_ring.py)
    layout = Layout(tp=tp, cp=2, microbatches=2, cp_rotate=rotate, cp_kv_heads=heads, framework="fsdp2", zero=3)
    return ParallelEstimate(cfg, workload, layout).to_dict()["communication"]["cp"]


def test_repeated_heads_move_every_query_heads_keys_and_values():
    """torchtitan's Llama repeats K and V to the 8 query heads before sdpa (model.py repeat_kv at
    9dec370), and torch's ring sends sdpa's own key and value: a tp-2 rank's 4 heads, not its 2 KV
    heads. By hand, a layer and micro-batch: kv = 2 x 1 x 4 heads x 8 tokens x 8 x 2 bytes = 1,024,
    its fp32 gradient 2,048; allgather: forward and backward all-gathers 2 x cp x kv = 4,096, the
    gradient sends cp x 2,048 = 4,096; ring: 2 (cp - 1) kv + cp x 2,048 = 6,144. 2 layers x 2
    micro-batches."""
    assert _cp(heads="repeated") == {"all_gather": 4 * 4096, "send": 4 * 4096}
    assert _cp("ring", heads="repeated") == {"send": 4 * 6144}
    assert _cp() == {"all_gather": 4 * 2048, "send": 4 * 2048}  # h_kv / tp = 2 heads: half
    # without tensor parallelism the rank's attention holds all 8 heads
    assert _cp(heads="repeated", tp=1) == {"all_gather": 4 * 8192, "send": 4 * 8192}


def test_full_recomputation_runs_the_forwards_exchange_again():
    """The recomputed forward re-runs the ring (torch.utils.checkpoint; torchtitan checkpoints each
    block whole): one more all-gather of cp x kv = 1,024 a layer (kv = 512 with 2 KV heads), or
    (cp - 1) kv = 512 more sent under the ring; the backward's are unchanged. With one of the two
    layers recomputed (--recompute-layers 1) only that one's. Selective recomputation keeps the
    attention's output: nothing again."""
    assert _cp(recompute="full") == {"all_gather": 2 * 2 * 3 * 1024, "send": 4 * 2048}
    assert _cp("ring", recompute="full") == {"send": 2 * 2 * (3 * 512 + 2048)}
    assert _cp(recompute="full", layers=1) == {"all_gather": 2 * (3 + 2) * 1024, "send": 4 * 2048}
    assert _cp(recompute="selective") == _cp()


def test_the_option_is_checked_and_typed_on_the_command_line(capsys):
    with pytest.raises(ConfigError, match="cp_kv_heads must be kv or repeated"):
        Layout(cp=2, cp_kv_heads="all")
    args = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--seq-len", "8192",
            "--cp", "2", "--gpus", "2", "--framework", "fsdp2", "--zero", "3", "--attention", "flash", "--json"]
    assert cli.main(args) == 0
    kv = json.loads(capsys.readouterr().out)
    assert cli.main(args + ["--cp-kv-heads", "repeated"]) == 0
    repeated = json.loads(capsys.readouterr().out)

    # Llama 3 8B: 32 query heads, 8 KV heads: four times the bytes; by hand for kv, 32 layers x
    # 2 all-gathers x cp x (2 x 8 heads x 4,096 tokens x 128 x 2 bytes) = 2 GiB
    gathered = [r["parallel"]["communication"]["cp"]["all_gather"] for r in (kv, repeated)]
    assert gathered == [2 * 2**30, 8 * 2**30]
    # alone it names no layout: one line, exit status 2
    assert cli.main(["simulate", "--model", "llama3-8b", "--train", "--cp-kv-heads", "repeated"]) == 2


def test_the_rings_fp32_merges_by_hand():
    """context.ring_merge_bytes, tp 2, cp 2, 16 tokens: the rank's output O = 1 x 8 tokens x 4
    heads x 8 = 256 elements, its key K = 8 x 2 KV heads x 8 = 128 (256 repeated). Forward:
    12 O + 10 (cp - 1) O = 5,632 bytes. Backward: 4 O + 8 K + cp (10 O + 36 K) + 8 (cp - 1) K +
    6 O + 12 K = 1,024 + 1,024 + 14,336 + 1,024 + 1,536 + 1,536 = 20,480; with K = 256
    (repeated) 1,024 + 2,048 + 23,552 + 2,048 + 1,536 + 3,072 = 33,280."""
    from costmodel.layout.context import ring_merge_bytes

    cfg = from_hf_config(SMALL_GQA, "small-gqa")
    workload = Workload(seq_len=16, batch=1, attention="flash")
    assert ring_merge_bytes(cfg, workload, 2, 2) == (5632, 20480)
    assert ring_merge_bytes(cfg, workload, 2, 2, "repeated") == (5632, 33280)


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_the_kernel_model_times_the_merges_under_torchs_ring_alone(monkeypatch, recompute):
    """Under FSDP2 (torch's context_parallel) each layer's attention part gains the merges' bytes
    at the timer's bandwidth, the forward's twice when the layer is recomputed; under Megatron
    (Transformer Engine's ring, not read here) nothing."""
    import costmodel.layout.context as context
    from costmodel.hardware import load_hardware
    from costmodel.layout.kernel_step import KernelStepTime
    from costmodel.presets import load_preset

    cfg, hardware = load_preset("llama3-8b"), load_hardware("h100-sxm")
    workload = Workload(seq_len=16384, batch=1, attention="flash", recompute=recompute)
    merge_bytes = context.ring_merge_bytes

    def layer_seconds(framework: str, merges: bool) -> tuple[float, float]:
        if not merges:
            monkeypatch.setattr(context, "ring_merge_bytes", lambda *args, **kwargs: (0, 0))
        else:
            monkeypatch.undo()
        estimate = ParallelEstimate(cfg, workload, Layout(cp=4, dp=2, zero=3 if framework == "fsdp2" else 1, framework=framework))
        step = KernelStepTime(estimate, hardware)
        return step.part_seconds["layer.decoder"][0], step.timer.bandwidth

    with_merges, bandwidth = layer_seconds("fsdp2", True)
    without, _ = layer_seconds("fsdp2", False)
    forward, backward = merge_bytes(cfg, workload, 4, 1)
    passes = forward * (2 if recompute == "full" else 1) + backward
    assert with_merges - without == pytest.approx(passes / bandwidth, rel=1e-9)
    assert layer_seconds("megatron", True)[0] == layer_seconds("megatron", False)[0]
