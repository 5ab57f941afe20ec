"""Collectives at NCCL's measured bus bandwidth (issue 18), and the static KV cache and CUDA
graphs with a layout."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.collectives import between_nodes, collective_seconds, interpolated_busbw, busbw_curve
from costmodel.hardware import load_hardware


def test_an_a100_node_all_reduce_takes_the_measured_time():
    # nccl-tests on 8 A100s (ml-engineering's table): 1 GiB in 8,203.9 us (busbw 229.04 GB/s),
    # 32 KiB in 43.83 us; in between, busbw is interpolated in log(bytes).
    a100 = load_hardware("a100-80gb")
    assert collective_seconds(a100, "all_reduce", 2**30, 8, 8) == pytest.approx(8203.9e-6, rel=0.002)
    assert collective_seconds(a100, "all_reduce", 32768, 8, 8) == pytest.approx(43.83e-6, rel=0.002)
    curve = busbw_curve(a100)
    assert 138.49e9 < interpolated_busbw(curve, 50e6) < 171.54e9
    # Sixty-four calls of 1 MiB cost far more than one of 64 MiB (latency, not bandwidth).
    many = collective_seconds(a100, "all_reduce", 64 * 2**20, 8, 8, calls=64)
    assert many > 5 * collective_seconds(a100, "all_reduce", 64 * 2**20, 8, 8)


def test_an_mi300x_node_all_reduce_takes_rccls_measured_time():
    # rccl-tests all_reduce_perf on 8 MI300X (AMD's acceptance guide, ROCm/system-acceptance-docs
    # docs/performance-bench/mi300x.rst at 058057f, out-of-place): 32 KiB in 44.39 us (busbw 1.29),
    # 1 MiB in 58.47 us (31.38), 8 GiB in 47,488 us (316.55). The busbw column is rounded to 0.01 GB/s.
    mi300x = load_hardware("mi300x")
    assert collective_seconds(mi300x, "all_reduce", 32768, 8, 8) == pytest.approx(44.39e-6, rel=0.003)
    assert collective_seconds(mi300x, "all_reduce", 2**20, 8, 8) == pytest.approx(58.47e-6, rel=0.002)
    assert collective_seconds(mi300x, "all_reduce", 2**33, 8, 8) == pytest.approx(47488e-6, rel=0.002)
    # A decode-sized call (Llama 3.1 405B's hidden 16,384 in bf16 at batch 1) costs the measured
    # 44 us, not the former alpha + beta's 10 us + 32 KiB x 7/4 at 0.8 x 448 GB/s = 10.16 us.
    assert collective_seconds(mi300x, "all_reduce", 16384 * 2, 8, 8) > 4 * (1e-5 + 32768 * 1.75 / (0.8 * 448e9))


def test_without_a_curve_alpha_beta_at_eighty_percent_of_the_link():
    mi325x = load_hardware("mi325x")  # the MI300X's fabric, but no rccl-tests curve of its own here
    seconds = collective_seconds(mi325x, "all_gather", 1e9, 8, 8, calls=4)
    assert seconds == pytest.approx(1e9 * 7 / 8 / (448e9 * 0.8) + 4 * 1e-5)


def test_a_group_across_nodes_runs_hierarchically():
    # 16 ranks over two A100 nodes: reduce-scatter in the node, an all-reduce of each GPU's 1/8
    # between the 2 nodes at 73% of its 25 GB/s NIC, all-gather in the node.
    a100 = load_hardware("a100-80gb")
    payload = 2**30
    inside = 2 * collective_seconds(a100, "all_gather", payload, 8, 8)
    # NCCL's ring latency across nodes (nccl_facts.json inter_node_latency): 2 x (2 - 1) network
    # steps of 14 us, each with the 7 in-node NVLink steps of 3.4 us its share takes.
    crossing = payload / 8 * 1.0 / (25e9 * 0.73) + 2 * (7 * 3.4e-6 + 14e-6)
    assert collective_seconds(a100, "all_reduce", payload, 16, 16) == pytest.approx(inside + crossing)
    # A data-parallel group strided by tensor parallelism 8 has one rank a node: all of it crosses,
    # NCCL's 8.4 us base latency (no in-node call carries it), 2 x 3 network steps, no in-node ones.
    assert collective_seconds(a100, "all_reduce", payload, 4, 32) \
        == pytest.approx(payload * 2 * 3 / 4 / (25e9 * 0.73) + 8.4e-6 + 6 * 14e-6)


def test_a_static_cache_and_cuda_graphs_are_honoured_with_a_layout(capsys):
    args = ["simulate", "--model", "llama2-7b", "--hardware", "a100-80gb", "--tp", "2", "--batch", "32",
            "--prompt", "2048", "--gen", "256", "--attention", "sdpa", "--json"]
    seconds = {}
    for extra in ([], ["--kv-cache", "static"], ["--kv-cache", "static", "--cuda-graphs"]):
        assert cli.main(args + extra) == 0
        seconds[" ".join(extra)] = json.loads(capsys.readouterr().out)["token"]["seconds_per_token"]
    dynamic, static, graphed = seconds.values()
    assert static < 0.6 * dynamic  # no torch.cat copy of the cache every step
    # Every rank runs all 32 layers at tp 2. The kernel model (the default): 9 launching leaves a
    # layer (one fused attention call stands for the scores, softmax and weighted sum) and 3 more,
    # 10 us each; the graph keeps the A100's 1.34 us floor for each of a rank's 32 x 14 + 3 kernels.
    assert static - graphed == pytest.approx((32 * 9 + 3) * 1e-5 - (32 * 14 + 3) * 1.34e-6, rel=1e-6)
    # The roofline: 11 active blocks a layer (the fused kernel's softmax and weighted sum still
    # count as blocks there) and 3 more.
    roofline = {}
    for extra in (["--kv-cache", "static"], ["--kv-cache", "static", "--cuda-graphs"]):
        assert cli.main(args + extra + ["--time-model", "roofline"]) == 0
        roofline[" ".join(extra)] = json.loads(capsys.readouterr().out)["token"]["seconds_per_token"]
    static, graphed = roofline.values()
    assert static - graphed == pytest.approx((32 * 11 + 3) * 1e-5, rel=1e-6)


def test_plan_serve_takes_the_static_cache(capsys):
    args = ["plan", "--model", "llama2-7b", "--hardware", "a100-80gb", "--gpus", "2", "--serve", "--batch", "32",
            "--prompt", "2048", "--gen", "256", "--json"]
    assert cli.main(args) == 0
    dynamic = json.loads(capsys.readouterr().out)["feasible"][0]["time_per_output_token"]
    assert cli.main(args + ["--kv-cache", "static"]) == 0
    static = json.loads(capsys.readouterr().out)["feasible"][0]["time_per_output_token"]
    assert static < 0.6 * dynamic


def test_the_overlap_conventions_are_settable():
    from costmodel.config import ConfigError, Workload
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.time import Overlap, StepTime
    from costmodel.presets import load_preset

    estimate = ParallelEstimate(load_preset("llama2-7b"), Workload(seq_len=4096, attention="sdpa"),
                                Layout(tp=2, dp=8, microbatches=4, framework="megatron"))
    hw = load_hardware("a100-80gb")
    default = StepTime(estimate, hw).step()
    hidden = StepTime(estimate, hw, overlap=Overlap(tp=1.0)).step()
    after = StepTime(estimate, hw, overlap=Overlap(dp=0.0)).step()
    assert default["exposed_communication_seconds"]["tp"] > 0 == hidden["exposed_communication_seconds"]["tp"]
    # Hidden, the tensor-parallel collectives still slow the compute they run under (18.9%).
    contention = hidden["overlap_contention_seconds"] - default["overlap_contention_seconds"]
    assert contention == pytest.approx(default["exposed_communication_seconds"]["tp"] * 0.189 / 1.189, rel=1e-9)
    assert default["seconds"] - hidden["seconds"] == pytest.approx(default["exposed_communication_seconds"]["tp"]
                                                                   - contention)
    free = StepTime(estimate, hw, overlap=Overlap(tp=1.0, slowdown=0.0)).step()
    assert default["seconds"] - free["seconds"] == pytest.approx(default["exposed_communication_seconds"]["tp"]
                                                                 + default["overlap_contention_seconds"])
    with pytest.raises(ConfigError, match="overlap slowdown"):
        Overlap(slowdown=-0.1)
    assert after["exposed_communication_seconds"]["dp"] > default["exposed_communication_seconds"]["dp"]
    with pytest.raises(ConfigError, match="overlap dp"):
        Overlap(dp=1.5)
    assert cli.main(["simulate", "--model", "gpt2", "--hardware", "a100-80gb", "--train", "--tp", "2", "--dp", "4",
                     "--dp-overlap", "2"]) == 2


def test_pipeline_sends_can_be_hidden_as_megatron_cores_overlap_p2p_comm_does():
    """Overlap.pp: the share of each micro-batch's pipeline exchange (StepTime.pipeline) hidden
    under compute (0 by default: Megatron-LM's sends block; 1: overlap_p2p_comm, which
    Megatron-Bridge turns on for every interleaved schedule), never more than the compute it hides
    under; hidden, it slows the compute beside it (Overlap.slowdown)."""
    from costmodel.config import ConfigError, Workload
    from costmodel.hardware import Hardware
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.time import Overlap, StepTime
    from costmodel.presets import load_preset

    estimate = ParallelEstimate(load_preset("llama2-7b"), Workload(seq_len=4096, attention="sdpa"),
                                Layout(tp=2, pp=4, dp=2, microbatches=8, schedule="interleaved", virtual_stages=2,
                                       framework="megatron"))
    hw = load_hardware("h100-sxm")
    m = estimate.layout.microbatches
    blocking = StepTime(estimate, hw).step()
    stage = estimate.stages[blocking["slowest_stage"]]
    exchange = StepTime(estimate, hw).pipeline(stage)  # one micro-batch's sends on the slowest rank
    assert exchange > 0 and blocking["exposed_communication_seconds"]["pp"] == pytest.approx(m * exchange, rel=1e-12)
    hidden = StepTime(estimate, hw, overlap=Overlap(pp=1.0)).step()
    half = StepTime(estimate, hw, overlap=Overlap(pp=0.5, slowdown=0.0)).step()
    assert hidden["exposed_communication_seconds"]["pp"] == 0
    assert half["exposed_communication_seconds"]["pp"] == pytest.approx(m * exchange / 2, rel=1e-12)
    assert hidden["hidden_communication_seconds"] - blocking["hidden_communication_seconds"] == pytest.approx(
        m * exchange, rel=1e-9)
    assert hidden["overlap_contention_seconds"] == pytest.approx(
        hidden["hidden_communication_seconds"] * 0.189 / 1.189, rel=1e-9)
    # A link so slow the sends outlast the compute: only the compute's length hides, the rest is exposed.
    slow = Hardware.from_dict({**hw.to_dict(), "interconnect": {**hw.to_dict()["interconnect"],
                                                                 "inter_node_bandwidth_bytes_per_s": 1e8}}, "slow")
    crawl = StepTime(estimate, slow, overlap=Overlap(pp=1.0, slowdown=0.0))
    times = crawl.stage(stage)
    assert crawl.pipeline(stage) > times["compute"] == pytest.approx(times["hidden"], rel=1e-12)
    assert times["pp"] == pytest.approx(crawl.pipeline(stage) - times["compute"], rel=1e-12)
    with pytest.raises(ConfigError, match="overlap pp"):
        Overlap(pp=2.0)
    assert cli.main(["simulate", "--model", "gpt2", "--hardware", "a100-80gb", "--train", "--pp", "2", "--dp", "4",
                     "--pp-overlap", "-1"]) == 2


# --- whose all-reduce runs inside a node (Layout.all_reduce, --all-reduce) -----------------------

A100_LINK = 300e9 * 0.8  # a100-80gb.json's NVLink per direction at nccl_facts' link_efficiency


def test_pytorch_intra_node_all_reduce_is_latency_plus_the_bytes_each_rank_reads():
    # nccl_facts.json: 6 us a call (pytorch/pytorch#114001, as read in #131739); one-shot up to
    # 256 KiB reads every peer's whole buffer, two-shot up to 10 MiB a 1/n share of each twice.
    from costmodel.collectives import intra_node_all_reduce

    a100 = load_hardware("a100-80gb")
    assert intra_node_all_reduce(a100, 8192, 8, "bf16") == pytest.approx(6e-6 + 7 * 8192 / A100_LINK, rel=1e-12)
    assert intra_node_all_reduce(a100, 262144, 2, "bf16") == pytest.approx(6e-6 + 262144 / A100_LINK, rel=1e-12)
    assert intra_node_all_reduce(a100, 262145, 8, "bf16") == pytest.approx(6e-6 + 2 * 7 / 8 * 262145 / A100_LINK,
                                                                   rel=1e-12)
    assert intra_node_all_reduce(a100, 10 * 2**20 + 1, 8, "bf16") is None  # NCCL's above 10 MiB
    # Its kernels add bf16 only (intra_node_comm.cu selectAllReduceAlgo: any other dtype is
    # AllReduceAlgo::NONE, and ProcessGroupNCCL::allreduce then runs NCCL's): fp16 and fp32 are NCCL's.
    assert intra_node_all_reduce(a100, 8192, 8, "fp16") is None
    assert intra_node_all_reduce(a100, 8192, 8, "fp32") is None
    # 65 calls of 8 KiB (Llama-2-7B's decode token at tp 8): 405.5 us, against NCCL's curve's
    # 65 x 43.83 us (its smallest measured size, 32 KiB, charged below it).
    intra = collective_seconds(a100, "all_reduce", 65 * 8192, 8, 8, calls=65, all_reduce="intra-node", dtype="bf16")
    assert intra == pytest.approx(65 * (6e-6 + 7 * 8192 / A100_LINK), rel=1e-12)
    assert intra == pytest.approx(405.5e-6, rel=1e-3)
    nccl = collective_seconds(a100, "all_reduce", 65 * 8192, 8, 8, calls=65)
    assert nccl == pytest.approx(65 * 43.83e-6, rel=0.002)


def test_the_intra_node_choice_leaves_what_it_does_not_run_to_nccl():
    a100 = load_hardware("a100-80gb")
    big = 64 * 2**20  # over 10 MiB: NCCL's
    for ranks, span in ((8, 8), (16, 16), (4, 32)):  # in one node; across nodes (hierarchical, strided)
        assert collective_seconds(a100, "all_reduce", big, ranks, span, all_reduce="intra-node", dtype="bf16") == \
            collective_seconds(a100, "all_reduce", big, ranks, span)
    # A small all-reduce over two nodes: IntraNodeComm needs every rank on one host.
    assert collective_seconds(a100, "all_reduce", 8192, 16, 16, all_reduce="intra-node", dtype="bf16") == \
        collective_seconds(a100, "all_reduce", 8192, 16, 16)
    # A PCIe node has no NVLink between its GPUs: IntraNodeComm's topology is UNKNOWN, NCCL runs (its PCIe ring
    # in LL: 6.6 us + 1.0 us a step at half the link, collectives.pcie_ring_seconds).
    l40s = load_hardware("l40s")
    assert collective_seconds(l40s, "all_reduce", 8192, 8, 8, all_reduce="intra-node", dtype="bf16") == \
        collective_seconds(l40s, "all_reduce", 8192, 8, 8) == \
        pytest.approx(8192 * 2 * 7 / 8 / (0.5 * 32e9 * 0.8) + (6.6 + 14 * 1.0) * 1e-6)
    # It runs all-reduces only.
    assert collective_seconds(a100, "all_gather", 8192, 8, 8, all_reduce="intra-node", dtype="bf16") == \
        collective_seconds(a100, "all_gather", 8192, 8, 8)
    # At most 8 GPUs (intra_node_comm.hpp's kMaxDevices): a 16-GPU group inside a GB200 NVL72
    # domain is NCCL's; 8 of them are IntraNodeComm's one-shot.
    gb200 = load_hardware("gb200")
    assert gb200.gpus_per_node >= 16
    assert collective_seconds(gb200, "all_reduce", 8192, 16, 16, all_reduce="intra-node", dtype="bf16") == \
        collective_seconds(gb200, "all_reduce", 8192, 16, 16)
    assert collective_seconds(gb200, "all_reduce", 8192, 8, 8, all_reduce="intra-node", dtype="bf16") == \
        pytest.approx(6e-6 + 7 * 8192 / (gb200.link(1) * 0.8))


def test_the_all_reduce_choice_is_a_validated_layout_field_and_an_option(capsys):
    from costmodel.config import ConfigError
    from costmodel.layout import Layout

    assert Layout().all_reduce == "nccl"
    assert Layout(tp=8, all_reduce="intra-node").to_dict(1)["all_reduce"] == "intra-node"
    # session 40 (wt40_customar) added vLLM's custom all-reduce as a third choice; session 41 (wt41_trtar)
    # TensorRT-LLM's own kernel as a fourth (the message lists it: restated)
    with pytest.raises(ConfigError, match="all_reduce must be nccl, intra-node, vllm-custom or trtllm-custom, "
                                          "got 'mpi'"):
        Layout(tp=8, all_reduce="mpi")
    args = ["simulate", "--model", "llama2-7b", "--hardware", "a100-80gb", "--tp", "8", "--prompt", "5", "--gen",
            "200", "--kv-cache", "static", "--cuda-graphs", "--json"]
    tokens = {}
    for choice in ("nccl", "intra-node"):
        assert cli.main(args + ["--all-reduce", choice]) == 0
        tokens[choice] = json.loads(capsys.readouterr().out)["token"]
    assert tokens["nccl"]["compute_seconds"] == tokens["intra-node"]["compute_seconds"]
    # 65 all-reduces of 8 KiB a token, one-shot instead of NCCL's 43.83 us each; the logits'
    # all-gather stays NCCL's.
    saved = 65 * (collective_seconds(load_hardware("a100-80gb"), "all_reduce", 8192, 8, 8)
                  - (6e-6 + 7 * 8192 / A100_LINK))
    assert tokens["nccl"]["tp_all_reduce_seconds"] - tokens["intra-node"]["tp_all_reduce_seconds"] == \
        pytest.approx(saved, rel=1e-9)
    assert cli.main(args + ["--all-reduce", "mpi"]) == 2


def test_intra_node_all_reduces_only_bf16_tensors_and_leaves_the_others_to_nccl(capsys):
    """PyTorch's IntraNodeComm adds bf16 only: selectAllReduceAlgo returns NONE for any other
    dtype and ProcessGroupNCCL::allreduce runs NCCL's (intra_node_comm.cu, commit 1023fda). So
    --all-reduce intra-node moves a bf16 decode's tensor-parallel all-reduces and leaves an fp16
    one's (and fp32 gradients and losses) where NCCL puts them; it is a fallback, not an error."""
    import costmodel
    from costmodel.config import Workload
    from costmodel.layout import Layout, ParallelEstimate

    args = ["simulate", "--model", "llama2-7b", "--hardware", "a100-80gb", "--tp", "8", "--prompt", "5", "--gen",
            "200", "--kv-cache", "static", "--cuda-graphs", "--json"]
    tokens = {}
    for dtype in ("bf16", "fp16"):
        for choice in ("nccl", "intra-node"):
            assert cli.main(args + ["--dtype", dtype, "--all-reduce", choice]) == 0
            tokens[dtype, choice] = json.loads(capsys.readouterr().out)["token"]["tp_all_reduce_seconds"]
    # bf16: 65 all-reduces of 8 KiB a token, one-shot instead of NCCL's 43.83 us each
    saved = 65 * (collective_seconds(load_hardware("a100-80gb"), "all_reduce", 8192, 8, 8)
                  - (6e-6 + 7 * 8192 / A100_LINK))
    assert tokens["bf16", "nccl"] - tokens["bf16", "intra-node"] == pytest.approx(saved, rel=1e-9)
    assert tokens["fp16", "intra-node"] == tokens["fp16", "nccl"] == pytest.approx(tokens["bf16", "nccl"], rel=1e-12)
    # Each collective's tensor: activations in the workload's dtype; the loss's in fp32;
    # Megatron's bf16 data-parallel gradients in fp32 (its accumulate_allreduce_grads_in_fp32),
    # DeepSpeed's in the activations' dtype.
    for framework, workload_dtype, gradients in (("megatron", "bf16", "fp32"), ("megatron", "fp16", "fp16"),
                                                 ("deepspeed", "bf16", "bf16")):
        estimate = ParallelEstimate(costmodel.load_model("llama2-7b"),
                                    Workload(seq_len=512, batch=8, dtype=workload_dtype),
                                    Layout(tp=2, dp=4, framework=framework, all_reduce="intra-node"))
        assert estimate.collective_dtype("tp", "all_reduce") == workload_dtype
        assert estimate.collective_dtype("tp", "loss_all_reduce") == "fp32"
        assert estimate.collective_dtype("dp", "all_reduce") == gradients
        assert estimate.collective_dtype("pp", "all_reduce") == gradients


def test_gpt_fasts_runs_state_the_intra_node_all_reduce_and_megatrons_rows_do_not_move():
    # gpt-fast's README: tensor parallelism with ENABLE_INTRA_NODE_COMM=1 (published_runs.json).
    from reports.published_decode import decode_run
    from reports.published_runs import other_runs_data, run_hardware

    data = other_runs_data()
    source = data["sources"]["gpt-fast"]
    assert source["all_reduce"] == "intra-node"
    run = next(r for r in data["runs"] if r["id"] == "gpt-fast llama2-7b tp8")
    source = {**source, "rate": "decode"}  # the decode steps alone: 1 / rate is their mean (the prefill apart)
    stated = decode_run(run, source, "kernels")
    nccl = decode_run(run, {**source, "all_reduce": "nccl"}, "kernels")
    hardware = run_hardware(source)
    # The token is 64 all-reduces (two a layer; gpt-fast's embedding is not split, so it has no
    # all-reduce: vocab_parallel false) shorter by NCCL's time less IntraNodeComm's, nothing else.
    assert source["vocab_parallel"] is False
    saved = 64 * (collective_seconds(hardware, "all_reduce", 8192, 8, 8)
                  - (6e-6 + 7 * 8192 / (hardware.link(1) * 0.8)))
    assert 1 / nccl - 1 / stated == pytest.approx(saved, rel=1e-9)
    # Narayanan's and Korthikanti's rows keep the default (Megatron-LM runs NCCL). Their
    # tensor-parallel messages (s b h x 2 bytes, tens of MB) are over IntraNodeComm's 10 MiB, so
    # the choice would move only their small all-reduces (the vocabulary-parallel loss's, SP's
    # once-a-step norm gradients).
    from costmodel.collectives import intra_node_all_reduce
    from costmodel.config import Workload
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.time import StepTime
    from reports.published_runs import gpt

    a100 = load_hardware("a100-80gb")
    for cfg, workload, layout in (
            (gpt("gpt-22b", 64, 6144, 48),  # Korthikanti et al., Table 5's 22B (tp 8, SP)
             Workload(seq_len=2048, batch=4, dtype="bf16", impl="megatron", recompute="selective"),
             dict(tp=8, microbatches=1, sp=True, framework="megatron")),
            (gpt("gpt-3.6b", 32, 3072, 30),  # Narayanan et al., Table 1's 3.6B (tp 2)
             Workload(seq_len=2048, batch=4, dtype="fp16", impl="megatron", recompute="full"),
             dict(tp=2, dp=4, microbatches=1, framework="megatron"))):
        times, saved = {}, 0.0
        for choice in ("nccl", "intra-node"):
            estimate = ParallelEstimate(cfg, workload, Layout(all_reduce=choice, **layout))
            times[choice] = StepTime(estimate, a100).tensor_parallel(estimate.stages[0])[0]
        stage, tp = estimate.stages[0], layout["tp"]
        kinds = set()
        for kind, calls, payload in estimate.tensor_parallel_collectives(stage) + estimate.recomputed_collectives(stage):
            kinds.add(kind)
            if kind == "loss_all_reduce":  # the loss's max, sum and target logit: 3 x 4 bytes a token, fp32
                assert payload == 3 * 4 * 2048 * 4 < 2**20
                # fp32: IntraNodeComm hands it to NCCL (bf16 only), so the choice saves nothing here
                assert intra_node_all_reduce(a100, payload, tp, "fp32") is None
                saved += calls * (collective_seconds(a100, "all_reduce", payload, tp, tp)
                                  - collective_seconds(a100, "all_reduce", payload, tp, tp, all_reduce="intra-node",
                                                       dtype="fp32"))
            elif kind != "optimizer_all_reduce":
                assert payload > 10 * 2**20
        assert "loss_all_reduce" in kinds
        assert times["nccl"] - times["intra-node"] == pytest.approx(saved, rel=1e-9)
        assert saved < 1e-3 * times["nccl"]


def test_the_zero1_parameter_all_gather_can_run_under_the_next_forward():
    """Overlap.params: Megatron-Core's --overlap-param-gather all-gathers the updated parameters
    bucket by bucket under the next step's first forward (distrib_optimizer.py at core_r0.8.0): the
    all-gather is hidden up to a third of a micro-batch's compute (0 by default: exposed), and what
    it hides is counted hidden, slowing the compute beside it (Overlap.slowdown)."""
    from costmodel.config import ConfigError, Workload
    from costmodel.layout import Layout, ParallelEstimate
    from costmodel.layout.time import Overlap, StepTime
    from costmodel.presets import load_preset

    estimate = ParallelEstimate(load_preset("llama2-7b"), Workload(seq_len=4096, attention="sdpa"),
                                Layout(tp=2, dp=32, zero=1, microbatches=4, framework="megatron"))
    hw = load_hardware("h100-sxm")
    stage = estimate.stages[0]
    timer = StepTime(estimate, hw)
    gather = sum(timer.collective("dp", kind, value)
                 for kind, value in estimate.communication(stage)["dp"].items() if kind == "all_gather")
    compute = timer.stage(stage)["compute"]
    assert gather > 0
    exposed, hidden = timer.data_parallel_split(stage, compute)
    under = StepTime(estimate, hw, overlap=Overlap(params=1.0, slowdown=0.0))
    exposed_under, hidden_under = under.data_parallel_split(stage, compute)
    assert exposed - exposed_under == pytest.approx(min(gather, compute / 3), rel=1e-12)
    assert hidden_under - hidden == pytest.approx(min(gather, compute / 3), rel=1e-12)
    half = StepTime(estimate, hw, overlap=Overlap(params=0.5)).data_parallel_split(stage, compute)[0]
    assert exposed - half == pytest.approx(min(gather, compute / 6), rel=1e-12)
    assert under.step()["seconds"] < timer.step()["seconds"]
    with pytest.raises(ConfigError, match="overlap params"):
        Overlap(params=1.5)
    assert cli.main(["simulate", "--model", "gpt2", "--hardware", "a100-80gb", "--train", "--dp", "4",
                     "--param-gather-overlap", "2"]) == 2
    assert cli.main(["simulate", "--model", "gpt2", "--train", "--param-gather-overlap", "1"]) == 2


# NCCL's tuning model (NVIDIA/nccl src/graph/tuning.cc at 5067397c, nccl_facts.json
# inter_node_latency), Simple protocol: NVLink ring step 3.4 us, network step 14 us (ring and tree),
# tree bandwidth x .92 and its size correction. The A100's NIC: 25 GB/s at 73%.
A100_INTER = 25e9 * 0.73


def _ring_us(nodes: int, local: int, step: float, net: float) -> float:
    """A ring's steps across nodes (NCCL's tuning model): N - 1 network steps, each with the
    share's local - 1 in-node steps."""
    return (nodes - 1) * ((local - 1) * step + net)


@pytest.mark.parametrize("nodes, protocol", [(2, "ll128"), (16, "ll"), (256, "ll")])
def test_an_all_gather_across_nodes_pays_nccls_ring_steps(nodes, protocol):
    # NCCL runs all-gathers as rings only (no tree), in the fastest enabled protocol, a step
    # max(its NVLink figure, the 1 us network overhead (x3 for Simple)) and a network step:
    # Simple 7 x 3.4 + 14 = 37.8 us at the NIC's rate; LL128 7 x 1.9 + 4.0 = 17.3 us at .92 of
    # it; LL 7 x 1.0 + 2.7 = 9.7 us at min(.5 of it, llMaxBw 39.0 (2 nodes) / 20.4 GB/s).
    a100 = load_hardware("a100-80gb")
    share = 2**20  # each GPU's 1/8 of an 8 MiB call
    crossing = share * (nodes - 1) / nodes
    times = {"simple": _ring_us(nodes, 8, 3.4, 14.0) * 1e-6 + crossing / A100_INTER,
             "ll128": _ring_us(nodes, 8, 1.9, 4.0) * 1e-6 + crossing / (0.92 * A100_INTER),
             "ll": _ring_us(nodes, 8, 1.0, 2.7) * 1e-6 + crossing / min(0.5 * A100_INTER, 39e9 if nodes == 2 else 20.4e9)}
    expected = times[protocol]
    assert min(times, key=times.get) == protocol
    assert round(_ring_us(nodes, 8, 3.4, 14.0), 1) == {2: 37.8, 16: 567.0, 256: 9639.0}[nodes]
    assert between_nodes(a100, "all_gather", share, nodes, 8, A100_INTER) == pytest.approx(expected, rel=1e-12)
    # Through collective_seconds: the two nodes' in-node all-gather plus the crossing, per call.
    inside = collective_seconds(a100, "all_gather", 8 * share, 8, 8, calls=1)
    assert collective_seconds(a100, "all_gather", 8 * share * 3, 8 * nodes, 8 * nodes, calls=3) \
        == pytest.approx(3 * (inside + expected), rel=1e-12)


@pytest.mark.parametrize("nodes, seconds, algorithm", [
    # 1 GiB a call (NCCL's correction 1.0 from 512 MiB): the ring's bytes win at 2 and 16 nodes,
    # its 2 x 255 x 37.8 us = 19.28 ms of steps lose to the tree's 16 x 14 us at 256.
    (2, 2 * 1 * 37.8e-6 + 2**27 * 2 * 1 / 2 / A100_INTER, "ring"),
    (16, 2 * 15 * 37.8e-6 + 2**27 * 2 * 15 / 16 / A100_INTER, "ring"),
    (256, 2 * 8 * 14e-6 + 2**27 * 2 / (0.92 * 1.0 * A100_INTER), "tree"),
])
def test_a_large_all_reduce_takes_the_faster_of_nccls_ring_and_tree(nodes, seconds, algorithm):
    a100 = load_hardware("a100-80gb")
    assert between_nodes(a100, "all_reduce", 2**27, nodes, 8, A100_INTER) == pytest.approx(seconds, rel=1e-12)
    # Hand figures: 7.43 ms, 14.92 ms, 16.21 ms.
    assert round(seconds * 1e5) == {2: 743, 16: 1492, 256: 1621}[nodes]


@pytest.mark.parametrize("nodes, tree_us", [(2, 28.0), (16, 112.0), (256, 224.0)])
def test_a_small_all_reduce_runs_as_nccls_tree(nodes, tree_us):
    # 1 MiB a call: log2i(2**20 >> 6) = 14, NCCL's Simple tree correction .5; the tree's 2 log2(N)
    # network steps and 2 x 128 KiB at .92 x .5 of the NIC beat the ring's 2(N-1) steps from 16
    # nodes on; at 2 nodes the ring's two LL steps of 9.7 us, 2 x 64 KiB at .5 of the NIC, win.
    a100 = load_hardware("a100-80gb")
    share = 2**17
    tree = tree_us * 1e-6 + share * 2 / (0.92 * 0.5 * A100_INTER)
    ll = 2 * _ring_us(nodes, 8, 1.0, 2.7) * 1e-6 + share * 2 * (nodes - 1) / nodes / (0.5 * A100_INTER)
    expected = min(tree, ll)
    assert (expected == ll) == (nodes == 2)
    assert between_nodes(a100, "all_reduce", share, nodes, 8, A100_INTER) == pytest.approx(expected, rel=1e-12)
    if nodes == 2:
        assert round(ll * 1e7) == 338  # 33.8 us against the tree's 59.2


def test_a_pcie_node_takes_nccls_pci_ring_step():
    # No NVLink between an L40S's GPUs: NCCL's PCI ring step, 5.7 us Simple (161.7 us of steps and
    # 75 us of bytes), 1.0 us LL (29.1 us and 150 us at half the rate, which wins); no LL128 (its
    # ring must run over NVLink).
    from costmodel.collectives import ring_protocols

    l40s = load_hardware("l40s")
    inter = 1e10
    assert ring_protocols(l40s) == ("simple", "ll")
    simple = _ring_us(4, 8, 5.7, 14.0) * 1e-6 + 1e6 * 3 / 4 / inter
    ll = _ring_us(4, 8, 1.0, 2.7) * 1e-6 + 1e6 * 3 / 4 / (0.5 * inter)
    assert (round(simple * 1e7), round(ll * 1e7)) == (2367, 1791)
    assert between_nodes(l40s, "reduce_scatter", 1e6, 4, 8, inter) == pytest.approx(ll, rel=1e-12)


@pytest.mark.parametrize("nodes, size, algorithm", [
    (2, 2**20, "ring"), (16, 2**20, "pat"), (256, 2**20, "pat"), (256, 2**30, "ring")])
def test_an_all_gather_with_one_gpu_a_node_may_run_as_nccls_pat(nodes, size, algorithm):
    # One GPU a node: NCCL's PAT for an all-gather, 8.0 us base + log2i(N) x 14 / 3.5 us + 2.8 us a
    # rank, the whole tensor's bytes at .75; its ring: 8.4 us + (N - 1) x 14 us, the bytes x
    # (N - 1) / N. 1 MiB over 2 nodes: ring 51.1 us, PAT 94.2 us; over 16: ring 272.3, PAT 145.4.
    a100 = load_hardware("a100-80gb")
    log2 = {2: 1, 16: 4, 256: 8}[nodes]
    ring = 8.4e-6 + (nodes - 1) * 14e-6 + size * (nodes - 1) / nodes / A100_INTER
    pat = 8.0e-6 + log2 * 4e-6 + nodes * 2.8e-6 + size / (0.75 * A100_INTER)
    assert (pat < ring) == (algorithm == "pat")
    assert between_nodes(a100, "all_gather", size, nodes, 1, A100_INTER) == pytest.approx(min(ring, pat), rel=1e-12)
    # The group strided by tp 8: one rank a node, the whole payload crosses.
    assert collective_seconds(a100, "all_gather", size, nodes, 8 * nodes) == pytest.approx(min(ring, pat), rel=1e-12)
    if nodes == 2:
        assert round(ring * 1e7) == 511 and round(pat * 1e7) == 942


@pytest.mark.parametrize("name", ["h100-sxm", "h200"])
def test_an_nvlink4_node_all_gathers_and_reduce_scatters_at_the_rings_measured_rate(name):
    # nccl-tests at 16 GiB on 8x H200 (ml-engineering network/README.md at 744d01e, "SHARP"):
    # all_gather_perf 361.4 GB/s, reduce_scatter_perf 362.9 GB/s busbw (NCCL's ring), while the
    # all-reduce runs NVLS at 482.26 GB/s (all_reduce_bench.py). busbw = payload x (n-1)/n / time.
    hw, size = load_hardware(name), 2**34
    assert collective_seconds(hw, "all_gather", size, 8, 8) == pytest.approx(size * 7 / 8 / 361.4e9, rel=1e-9)
    assert collective_seconds(hw, "reduce_scatter", size, 8, 8) == pytest.approx(size * 7 / 8 / 362.9e9, rel=1e-9)
    assert collective_seconds(hw, "all_reduce", size, 8, 8) == pytest.approx(size * 14 / 8 / 482.26e9, rel=1e-9)
    # The all-gather's own curve, not the all-reduce's: at the TP all-gather of torchtitan's 8B at
    # TP 8 (805 MB) the NVLS curve would give ~458 GB/s; the ring's is 346.51-361.4 GB/s.
    assert busbw_curve(hw, "all_gather") != busbw_curve(hw, "all_reduce")
    tp_gather = 12 * 8192 * 4096 * 2
    assert 346.51e9 < interpolated_busbw(busbw_curve(hw, "all_gather"), tp_gather) < 361.4e9
    assert interpolated_busbw(busbw_curve(hw, "all_reduce"), tp_gather) > 450e9
    # A second source: NVIDIA/nccl#1506 reports the ring all-gather of 1 GB at ~350 GB/s busbw.
    assert interpolated_busbw(busbw_curve(hw, "all_gather"), 2**30) == pytest.approx(350e9, rel=0.03)
    # Up to 64 MiB, where the all-reduce curve lies under the ring's ceiling, it stands in (stated).
    assert collective_seconds(hw, "all_gather", 2**20, 8, 8) == pytest.approx(2**20 * 7 / 8 / 39.93e9, rel=1e-9)


def test_a_node_without_nvls_keeps_one_curve_for_every_collective():
    # The A100 (NVLink 3, no NVLink SHARP) and the MI300X (RCCL) have no curve of their own for
    # all-gather or reduce-scatter: they take the node's all-reduce curve.
    for name in ("a100-80gb", "mi300x"):
        hw = load_hardware(name)
        assert busbw_curve(hw, "all_gather") == busbw_curve(hw, "reduce_scatter") == busbw_curve(hw) is not None
