"""The distributed harness (validate/distributed) against formulas derived by hand.

Real collectives: one spawn of 2 gloo ranks runs every small case (FSDP2, DTensor TP and SP, the
three pipeline schedules) once for the module. Bigger worlds use the fake process group in this
process (one rank at a time). Every expected number is a formula in the model's dimensions (d, h,
h_kv, d_h, f = d_ff, V, L, b, n, world sizes), written beside its source; validate/FINDINGS.md
section 10 explains each term. Models are deliberately odd (d=48, h=6, h_kv=2, d_ff=37, V=99) so a
swapped dimension or a missed padding row changes a number.
"""

from __future__ import annotations

import os

import pytest
import torch
import torch.distributed as dist

from validate.distributed.comm import CommRecorder
from validate.distributed.fsdp import FsdpCase, measure_fsdp
from validate.distributed.launch import RankFailed, fake_process_group, run_fake, run_gloo
from validate.distributed.pipeline import PipelineCase, measure_pipeline
from validate.distributed.tensor_parallel import TpCase, measure_tp

from tests.distributed_cases import LLAMA, TINY, TINY_PP, TINY_TP, WIDE_TP
FP32 = 4


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def rows(d0: int, world: int, rank: int) -> int:
    """Rows of dim 0 that rank holds under torch.chunk (FSDP2, DTensor Shard(0)): ceil(d0/w) each,
    the last ranks fewer or none."""
    size = cdiv(d0, world)
    return max(0, min(size, d0 - rank * size))


def dims(cfg) -> dict[str, int]:
    return dict(d=cfg.d_model, h=cfg.n_heads, hkv=cfg.n_kv_heads, dh=cfg.d_head, f=cfg.d_ff,
                V=cfg.vocab_size, L=cfg.n_decoder_layers)


# ---------------------------------------------------------------------------------------------
# Formulas (FINDINGS.md section 10)


def fsdp_root(c, split):
    """FSDP2 root group (embedding V x d, final norm d, head V x d): elements of one rank's shard,
    with split(d0) the rows it holds (padded: ceil(d0/W); local: rows(d0, W, r))."""
    return 2 * split(c["V"]) * c["d"] + split(c["d"])


def fsdp_layer(c, split):
    """One decoder layer: 2 norms, q (h d_h x d), k and v (h_kv d_h x d), o (d x h d_h),
    gate and up (f x d), down (d x f)."""
    d, h, hkv, dh, f = (c[k] for k in ("d", "h", "hkv", "dh", "f"))
    return (2 * split(d) + split(h * dh) * d + 2 * split(hkv * dh) * d + split(d) * h * dh
            + 2 * split(f) * d + split(d) * f)


def n_tensors(c):
    return 3 + 9 * c["L"]  # embedding, final norm, head; 9 per layer


def layer_saved(c, b, n, t=1, sp=False):
    """Bytes a reference layer (fp32, eager, RoPE, GQA, no dropout) saves for backward on one TP rank:
    2 RMSNorms (x, x*rsqrt: 8bnd; rsqrt: 4bn), the q/k/v and gate/up inputs (4bnd each), attention
    (q, k and v repeated to h heads, the softmax: 4(3 b h n d_h + b h n^2)), the o-proj input
    (4 b n h d_h), the FFN's gate output, SiLU output, up output and product (16 b n f).
    TP divides the head and FFN terms by t; SP divides the norms' terms by t too."""
    d, h, dh, f = c["d"], c["h"], c["dh"], c["f"]
    norms = 2 * (8 * b * n * d + 4 * b * n)
    return (norms // t if sp else norms) + 8 * b * n * d + (
        4 * (3 * b * h * n * dh + b * h * n * n) + 4 * b * n * h * dh + 16 * b * n * f) // t


def outside_saved(c, b, n, t=1, sp=False, vocab=None):
    """Outside the layers: token ids (8bn), final norm (8bnd + 4bn, / t under SP), head input
    (4bnd, all-gathered under SP), log-softmax (4 b n V, or the rank's vocabulary shard under
    loss_parallel), targets (8bn) and the loss's fp32 total weight (4)."""
    d, V = c["d"], (c["V"] if vocab is None else vocab)
    final_norm = 8 * b * n * d + 4 * b * n
    return (8 * b * n + (final_norm // t if sp else final_norm) + 4 * b * n * d + 4 * b * n * V
            + 8 * b * n + 4)


# ---------------------------------------------------------------------------------------------
# FSDP2


def fsdp_expectations(c, W, r, param_bytes=FP32):
    padded = lambda d0: cdiv(d0, W)  # noqa: E731
    local = lambda d0: rows(d0, W, r)  # noqa: E731
    root_pad, layer_pad = fsdp_root(c, padded), fsdp_layer(c, padded)
    local_elements = fsdp_root(c, local) + c["L"] * fsdp_layer(c, local)
    return dict(
        parameters={"storage": FP32 * (root_pad + c["L"] * layer_pad), "elements": FP32 * local_elements},
        optimizer=8 * local_elements + 4 * n_tensors(c),  # exp_avg, exp_avg_sq fp32; a 4-byte step each
        all_gather_group=lambda pad: W * pad * param_bytes,
        root_pad=root_pad, layer_pad=layer_pad,
    )


@pytest.mark.parametrize("rank", [0, 1])
def test_fsdp_state_per_rank(gloo, rank):
    """Sharded parameters and gradients are fp32 views of buffers padded to ceil(d0/W) rows
    (FSDP2's _init_sharded_param, foreach_reduce); AdamW's state has the unpadded local shapes."""
    c, W = dims(TINY), 2
    want = fsdp_expectations(c, W, rank)
    state = gloo["fsdp_auto"][rank]["state"]
    assert state["parameters"] == want["parameters"]
    assert state["gradients"] == want["parameters"]
    assert state["optimizer"]["storage"] == want["optimizer"]
    if rank == 1:  # rank 1 lacks one padded row of both V x d tables (V = 99: 50 + 49) and of each
        # layer's gate and up (d_ff = 37: 19 + 18), each row d = 48 wide
        assert state["parameters"] == {"storage": 65952, "elements": 65952 - FP32 * (2 + 2 * 2) * 48}


def test_fsdp_collectives_at_default_resharding(gloo):
    """Forward: one all-gather per group (root + L layers); backward: the layers again (the root
    is not resharded after forward by default), one fp32 reduce-scatter per group."""
    c, W, L = dims(TINY), 2, TINY.n_decoder_layers
    want = fsdp_expectations(c, W, 0)
    group = want["all_gather_group"]
    for rank in range(W):
        result = gloo["fsdp_auto"][rank]
        comm, calls = result["communication"], result["calls"]
        assert comm["forward"] == {"dp": {"all_gather": group(want["root_pad"] + L * want["layer_pad"])}}
        assert comm["backward"]["dp"]["all_gather"] == group(L * want["layer_pad"])
        everything = want["root_pad"] + L * want["layer_pad"]
        assert comm["backward"]["dp"]["reduce_scatter"] == W * everything * FP32
        assert calls["forward"]["dp"] == {"all_gather": L + 1}
        assert calls["backward"]["dp"] == {"all_gather": L, "reduce_scatter": L + 1}
        assert comm["optimizer"] == {}
        assert result["steady_communication"] == comm


def test_fsdp_mixed_precision_resharding_everything(gloo):
    """MixedPrecisionPolicy(bf16 params, fp32 reduce), reshard_after_forward=True on the root too:
    all-gathers move bf16 in forward and again in backward for every group; reduce-scatters fp32;
    the sharded parameters and gradients stay fp32."""
    c, W, L = dims(TINY), 2, TINY.n_decoder_layers
    want = fsdp_expectations(c, W, 0, param_bytes=2)
    everything = want["root_pad"] + L * want["layer_pad"]
    for rank in range(W):
        result = gloo["fsdp_mp_reshard"][rank]
        assert result["communication"]["forward"]["dp"] == {"all_gather": W * everything * 2}
        assert result["communication"]["backward"]["dp"] == {
            "all_gather": W * everything * 2, "reduce_scatter": W * everything * FP32}
        assert result["calls"]["backward"]["dp"] == {"all_gather": L + 1, "reduce_scatter": L + 1}
        state = result["state"]
        assert state["parameters"] == fsdp_expectations(c, W, rank)["parameters"]
        assert state["gradients"]["storage"] == FP32 * everything


def test_fsdp_no_resharding_four_ranks():
    """reshard_after_forward=False with the bf16/fp32 policy, W = 4 (fake), last rank: the forward
    all-gathers stay unsharded through backward (no backward all-gather); rank 3 holds 24 of 25
    padded vocabulary rows and 7 of 10 FFN rows."""
    c, W, L = dims(TINY), 4, TINY.n_decoder_layers
    case = FsdpCase(TINY, reshard_after_forward=False, mixed_precision=True, memory_tracker=False)
    result = run_fake(measure_fsdp, W, [3], case)[3]
    want = fsdp_expectations(c, W, 3, param_bytes=2)
    everything = want["root_pad"] + L * want["layer_pad"]
    assert result["communication"]["forward"]["dp"] == {"all_gather": W * everything * 2}
    assert result["communication"]["backward"]["dp"] == {"reduce_scatter": W * everything * FP32}
    assert result["state"]["parameters"] == want["parameters"]
    assert result["state"]["optimizer"]["storage"] == want["optimizer"]


def test_fsdp_memory_tracker_state_categories(gloo):
    """FSDPMemTracker's peak of a steady step: the state categories are exact (sharded params =
    padded fp32 storage; optimizer as above; RoPE cos/sin buffers 2 * max_positions * d_h * 4;
    inputs: ids and labels, 2 * 8 b n)."""
    c, W = dims(TINY), 2
    for rank in range(W):
        peak = gloo["fsdp_auto"][rank]["memory_peak"]
        want = fsdp_expectations(c, W, rank)
        assert peak["Sharded Param"] == want["parameters"]["storage"]
        assert peak["OptState"] == want["optimizer"]
        assert peak["Buffer"] == 2 * TINY.max_positions * c["dh"] * FP32
        assert peak["Inputs"] == 2 * 8 * 2 * 8
        assert peak["Total"] == sum(v for k, v in peak.items() if k != "Total")


def test_fsdp_sixteen_ranks_pads_and_empties_shards():
    """W = 16 (fake group): V = 99 rows are 7 per rank, so rank 15 holds none of either V x d table
    yet keeps its 7 padded rows; d_ff = 37 is 3 rows per rank, rank 12 holds 1 and 13-15 none."""
    c, W = dims(TINY), 16
    results = run_fake(measure_fsdp, W, [0, 15], FsdpCase(TINY, memory_tracker=False))
    for rank, result in results.items():
        want = fsdp_expectations(c, W, rank)
        assert result["state"]["parameters"] == want["parameters"]
        assert result["state"]["optimizer"]["storage"] == want["optimizer"]
        assert result["communication"]["forward"]["dp"]["all_gather"] == \
            want["all_gather_group"](want["root_pad"] + c["L"] * want["layer_pad"])
    assert results[15]["local_shard_elements"]["embedding.tokens.weight"] == 0
    assert results[15]["padded_shard_elements"]["embedding.tokens.weight"] == cdiv(99, 16) * 48


# ---------------------------------------------------------------------------------------------
# Tensor parallelism (DTensor)


def tp_param_elements(c, t, vocab_rows):
    """Embedding and head Shard(0): vocab_rows rows each; 2L + 1 norms replicated; q, k, v, o,
    gate, up, down divided by t."""
    d, h, hkv, dh, f, L = (c[k] for k in ("d", "h", "hkv", "dh", "f", "L"))
    return 2 * vocab_rows * d + (2 * L + 1) * d + L * (2 * h * dh * d + 2 * hkv * dh * d + 3 * d * f) // t


def tp_parameters(c, t, r):
    """A rank's parameter bytes: distribute_tensor scatters an uneven Shard(0) into a buffer padded to
    ceil(V/t) rows and keeps a view of it, so the storage has ceil(V/t) rows, the shard rows(V, t, r)."""
    return {"storage": FP32 * tp_param_elements(c, t, cdiv(c["V"], t)),
            "elements": FP32 * tp_param_elements(c, t, rows(c["V"], t, r))}


@pytest.mark.parametrize("rank", [0, 1])
def test_tp_state_and_full_embedding_gradient(gloo, rank):
    """Probe: the vocabulary-parallel embedding's gradient is Replicate, a full V x d on each rank."""
    c, t = dims(TINY_TP), 2
    result = gloo["tp"][rank]
    elements = tp_param_elements(c, t, rows(c["V"], t, rank))
    assert result["state"]["parameters"] == tp_parameters(c, t, rank)
    assert result["state"]["gradients"]["storage"] == FP32 * (elements - rows(99, t, rank) * 48 + 99 * 48)
    assert result["state"]["optimizer"]["storage"] == 8 * elements + 4 * n_tensors(c)
    assert result["gradient_layouts"]["embedding.tokens.weight"] == ["(Replicate(),)", [99, 48]]
    assert result["gradient_layouts"]["head.weight"] == ["(Shard(dim=0),)", [rows(99, t, rank), 48]]


def test_tp_collectives_and_five_input_gradient_all_reduces(gloo):
    """Forward: all-reduce after the embedding and each o/down projection (2L + 1, b n d fp32), one
    all-gather of the logits padded to t * ceil(V/t) columns. Backward (probe): an all-reduce of the
    input gradient of each of q, k, v, gate, up (5 per layer) and of the head."""
    c, t, b, n, L = dims(TINY_TP), 2, 2, 8, TINY_TP.n_decoder_layers
    act = FP32 * b * n * c["d"]
    for result in gloo["tp"]:
        assert result["communication"]["forward"]["tp"] == {
            "all_reduce": (2 * L + 1) * act, "all_gather": FP32 * b * n * t * cdiv(c["V"], t)}
        assert result["communication"]["backward"]["tp"] == {"all_reduce": (5 * L + 1) * act}
        assert result["calls"]["backward"]["tp"] == {"all_reduce": 5 * L + 1}
        assert result["communication"]["optimizer"] == {}
        assert result["saved_bytes"] == L * layer_saved(c, b, n, t) + outside_saved(c, b, n, t)
    assert gloo["tp"][0]["saved_bytes"] == 78084


def test_tp_sequence_parallel_collectives_and_norm_gradient_all_reduces(gloo):
    """SP: reduce-scatters replace the forward all-reduces, all-gathers feed attention, FFN and head;
    backward mirrors them. Probe: the replicated norm weights' gradients stay Partial and AdamW's
    three reads of each (lerp, and addcmul's two) all-reduce it: 3 (2L + 1) all-reduces of 4d."""
    c, t, b, n, L = dims(TINY_TP), 2, 2, 8, TINY_TP.n_decoder_layers
    act = FP32 * b * n * c["d"]
    for result in gloo["tp_sp"]:
        comm = result["communication"]
        assert comm["forward"]["tp"] == {
            "reduce_scatter": (2 * L + 1) * act,
            "all_gather": (2 * L + 1) * act + FP32 * b * n * t * cdiv(c["V"], t)}
        assert comm["backward"]["tp"] == {
            "reduce_scatter": (2 * L + 1) * act, "all_gather": (2 * L + 1) * act}
        assert comm["optimizer"]["tp"] == {"all_reduce": 3 * (2 * L + 1) * FP32 * c["d"]}
        assert result["calls"]["optimizer"]["tp"] == {"all_reduce": 3 * (2 * L + 1)}
        assert result["gradient_layouts"]["decoder.final_norm.weight"] == ["(Partial(sum),)", [48]]
        assert result["saved_bytes"] == (
            L * layer_saved(c, b, n, t, sp=True) + outside_saved(c, b, n, t, sp=True))


def test_tp_four_ranks_sequence_and_loss_parallel():
    """t = 4 (fake group), SP with loss_parallel: no logits all-gather; the parallel cross-entropy
    all-reduces three b n fp32 vectors in forward; each rank's log-softmax covers its own V rows."""
    c, t, b, n, L = dims(WIDE_TP), 4, 2, 8, WIDE_TP.n_decoder_layers
    act = FP32 * b * n * c["d"]
    case = TpCase(WIDE_TP, sequence_parallel=True, loss_parallel=True)
    for rank, result in run_fake(measure_tp, t, [0, 3], case).items():
        assert result["communication"]["forward"]["tp"] == {
            "reduce_scatter": (2 * L + 1) * act, "all_gather": (2 * L + 1) * act,
            "all_reduce": 3 * FP32 * b * n}
        assert result["state"]["parameters"] == tp_parameters(c, t, rank)
        assert result["saved_bytes"] == L * layer_saved(c, b, n, t, sp=True) + outside_saved(
            c, b, n, t, sp=True, vocab=rows(c["V"], t, rank))


def test_tp_hugging_face_llama():
    """HF LlamaForCausalLM under the same plan: the reference's numbers plus RoPE's cos and sin,
    computed once per forward in fp32 and saved (2 * 4 n d_h, FINDINGS section 2)."""
    pytest.importorskip("transformers")
    c, t, b, n, L = dims(TINY_TP), 2, 2, 8, TINY_TP.n_decoder_layers
    result = run_fake(measure_tp, t, [1], TpCase(TINY_TP, implementation="hf"))[1]
    assert result["calls"]["backward"]["tp"] == {"all_reduce": 5 * L + 1}
    assert result["state"]["parameters"] == tp_parameters(c, t, 1)
    rope = 2 * FP32 * n * c["dh"]
    assert result["saved_bytes"] == L * layer_saved(c, b, n, t) + outside_saved(c, b, n, t) + rope


# ---------------------------------------------------------------------------------------------
# Pipelines (torch.distributed.pipelining, gloo)

PP = dict(m=4, b=1, n=8)


def pp_layer():
    return layer_saved(dims(TINY_PP), PP["b"], PP["n"])


def pp_last_extra():
    """The last stage's final norm, head input, log-softmax and the loss's total weight (per
    micro-batch); the whole batch's targets (8 m b n) are one storage, counted once while shared."""
    c, b, n = dims(TINY_PP), PP["b"], PP["n"]
    return 8 * b * n * c["d"] + 4 * b * n + 4 * b * n * c["d"] + 4 * b * n * c["V"] + 4


IDS = 8 * PP["m"] * PP["b"] * PP["n"]  # the batch's token ids (or targets): one int64 storage


def test_pipeline_1f1b_in_flight_and_p2p(gloo):
    """1F1B, p = 2, m = 4, 2 layers per stage: stage s holds min(m, p - s) micro-batches; each rank
    sends m activations or gradients of b n d fp32 and receives as many."""
    first, last = (gloo["pp_1f1b"][r]["stages"][r] for r in range(2))
    assert first["max_in_flight"] == 2 and last["max_in_flight"] == 1
    assert first["saved_peak_bytes"] == 2 * 2 * pp_layer() + IDS == 87040
    assert last["saved_peak_bytes"] == 2 * pp_layer() + pp_last_extra() + IDS
    payload = FP32 * PP["b"] * PP["n"] * 48
    for result in gloo["pp_1f1b"]:
        assert result["communication"] == {"pp": {"send": PP["m"] * payload, "recv": PP["m"] * payload}}
        assert {p for (_, _, p, _) in result["p2p"]} == {payload}


def test_pipeline_gpipe_holds_every_microbatch(gloo):
    first, last = (gloo["pp_gpipe"][r]["stages"][r] for r in range(2))
    assert first["max_in_flight"] == last["max_in_flight"] == PP["m"]
    assert first["saved_peak_bytes"] == PP["m"] * 2 * pp_layer() + IDS
    assert last["saved_peak_bytes"] == PP["m"] * (2 * pp_layer() + pp_last_extra()) + IDS


def test_pipeline_interleaved_first_rank_matches_megatron(gloo):
    """Interleaved 1F1B, p = 2, v = 2, one layer per stage: the first rank's peak is
    L (1 + (p - 1)/(p v)) layer-micro-batches (Megatron's factor) plus the ids; 3 boundary crossings
    per micro-batch on each rank (a stage sends forward unless last, backward unless first)."""
    p, v, L = 2, 2, TINY_PP.n_decoder_layers
    rank0 = gloo["pp_interleaved"][0]
    assert rank0["rank_saved_peak_bytes"] == L * (p * v + p - 1) // (p * v) * pp_layer() + IDS
    assert {s: r["max_in_flight"] for s, r in rank0["stages"].items()} == {0: 4, 2: 2}
    payload = FP32 * PP["b"] * PP["n"] * 48
    for result in gloo["pp_interleaved"]:
        crossings = 3 * PP["m"] * payload
        assert result["communication"]["pp"] == {"send": crossings, "recv": crossings}


def test_pipeline_stage_state(gloo):
    """Stage 0: embedding + 2 layers; stage 1: 2 layers + final norm + head (AdamW: 8 bytes per
    element and a 4-byte step per tensor)."""
    c = dims(TINY_PP)
    d, h, hkv, dh, f = (c[k] for k in ("d", "h", "hkv", "dh", "f"))
    layer = 2 * d + 2 * h * dh * d + 2 * hkv * dh * d + 3 * d * f
    first = 2 * layer + c["V"] * c["d"]
    last = 2 * layer + c["d"] + c["V"] * c["d"]
    for rank, (elements, tensors) in enumerate([(first, 1 + 18), (last, 18 + 2)]):
        state = gloo["pp_1f1b"][rank]["state"]
        assert state["parameters"]["storage"] == state["gradients"]["storage"] == FP32 * elements
        assert state["optimizer"]["storage"] == 8 * elements + 4 * tensors


# ---------------------------------------------------------------------------------------------
# The recorder and the launcher


def test_recorder_payload_conventions():
    """Fake group of 4, rank 1: all-gather = its output, reduce-scatter = its input, all-reduce and
    broadcast = the buffer, send and recv = the tensor; functional collectives alike."""
    import torch.distributed._functional_collectives as funcol

    with fake_process_group(1, 4):
        recorder = CommRecorder({"dp": dist.group.WORLD})
        x = torch.ones(5, dtype=torch.bfloat16)
        with recorder:
            dist.all_reduce(x)
            dist.all_gather_into_tensor(torch.empty(20, dtype=torch.bfloat16), x)
            dist.reduce_scatter_tensor(torch.empty(3), torch.ones(12))
            dist.broadcast(x, 0)
            dist.send(torch.ones(7), 2)
            dist.recv(torch.ones(6), 0)
            funcol.all_gather_tensor(torch.ones(2, 3), 0, dist.group.WORLD).wait()
            functional = torch.ops._c10d_functional
            functional.wait_tensor(functional.broadcast_(torch.ones(4), 0, dist.group.WORLD.group_name))
    assert recorder.totals() == {"dp": {
        "all_reduce": 10, "all_gather": 40 + 4 * 24, "reduce_scatter": 48, "broadcast": 10 + 16,
        "send": 28, "recv": 24}}
    p2p = [(r.kind, r.peer) for r in recorder.records if r.kind in ("send", "recv")]
    assert p2p == [("send", 2), ("recv", 0)]


def _raises(rank: int, world_size: int) -> None:
    raise ValueError(f"rank {rank} of {world_size} fails on purpose")


@pytest.mark.slow
def test_spawned_errors_reach_the_parent():
    with pytest.raises(RankFailed, match="rank 0 of 1 fails on purpose"):
        run_gloo(_raises, 1, timeout_s=60)


def _aborts_at_exit(rank: int, world_size: int) -> int:
    import atexit

    atexit.register(os.abort)  # as gloo's threads can, once the measurement is done
    return 10 * rank + world_size


def _aborts_now(rank: int, world_size: int) -> int:
    os.abort()


@pytest.mark.slow
def test_a_rank_that_aborts_in_teardown_keeps_its_result_and_one_that_aborts_early_is_named():
    """CI saw rank 0 of a finished 4-rank gloo run die with SIGABRT as it exited, and
    torch's join then killed the other ranks: a measurement written before the teardown is kept,
    a rank that died before writing is reported with its exit code."""
    assert run_gloo(_aborts_at_exit, 2, timeout_s=60) == [2, 12]
    with pytest.raises(RankFailed, match=r"rank 0 exited \(exit code -6\) without writing a result"):
        run_gloo(_aborts_now, 1, timeout_s=60)


# ---------------------------------------------------------------------------------------------
# Full size, fake process group and FakeTensorMode


@pytest.mark.slow
def test_fsdp_llama2_7b_eight_ranks():
    """Llama-2-7B, W = 8 (every dim divides: no padding): P/8 fp32 per rank, AdamW 8 P/8 + 4 * 291,
    forward all-gathers the whole model once, backward all but the root (2 V d + d)."""
    P, V, d = 6_738_415_616, 32_000, 4096
    result = run_fake(measure_fsdp, 8, [7], FsdpCase(LLAMA, batch=1, seq_len=64, fake=True,
                                                      memory_tracker=False))[7]
    assert result["state"]["parameters"]["storage"] == FP32 * P // 8
    assert result["state"]["optimizer"]["storage"] == 8 * P // 8 + 4 * (3 + 9 * 32)
    assert result["communication"]["forward"]["dp"] == {"all_gather": FP32 * P}
    assert result["communication"]["backward"]["dp"] == {
        "all_gather": FP32 * (P - 2 * V * d - d), "reduce_scatter": FP32 * P}


@pytest.mark.slow
def test_tp_hugging_face_llama2_7b_eight_ranks():
    pytest.importorskip("transformers")
    c, t, b, n, L = dims(LLAMA), 8, 1, 64, 32
    case = TpCase(LLAMA, batch=b, seq_len=n, implementation="hf", fake=True)
    result = run_fake(measure_tp, t, [0], case)[0]
    elements = tp_param_elements(c, t, c["V"] // t)
    assert result["state"]["parameters"] == tp_parameters(c, t, 0)
    assert result["state"]["gradients"]["storage"] == FP32 * (elements + (t - 1) * c["V"] * c["d"] // t)
    act = FP32 * b * n * c["d"]
    assert result["communication"]["backward"]["tp"] == {"all_reduce": (5 * L + 1) * act}
    saved = L * layer_saved(c, b, n, t) + outside_saved(c, b, n, t) + 2 * FP32 * n * c["dh"]
    assert result["saved_bytes"] == saved + 8  # HF's shifted labels at b = 1 (FINDINGS section 2)


@pytest.mark.slow
def test_pipeline_four_ranks_1f1b():
    """p = 4, m = 4, one layer per stage: stage s holds min(m, p - s) = 4 - s micro-batches."""
    results = run_gloo(measure_pipeline, 4, PipelineCase(TINY_PP, schedule="1f1b"), timeout_s=300)
    for rank, result in enumerate(results):
        assert result["stages"][rank]["max_in_flight"] == 4 - rank
    assert results[1]["stages"][1]["saved_peak_bytes"] == 3 * pp_layer()
    assert results[0]["stages"][0]["saved_peak_bytes"] == 4 * pp_layer() + IDS
