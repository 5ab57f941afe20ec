"""The engines' CUDA graphs in the serving simulator (costmodel/serving/graphs.py): a step the
engine replays from a graph pays graph_kernel_s per kernel instead of the eager per-block launch
for the leaves inside the graph (vLLM v0: the whole forward of a decode-only step but the LM head;
vLLM v1: every leaf but the attention and the LM head), at the padded captured size; every other
step, and every other engine, exactly as eager."""

from __future__ import annotations

import numpy as np
import pytest

import costmodel
from costmodel import symbols as S
from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.kernel_time import KernelTimer, inference_subs, leaves_time
from costmodel.serving.budgets import DEFAULT_BUDGETS
from costmodel.serving.replica import build_replica
from costmodel.serving.graphs import (EAGER, ENGINE_GRAPHS, CudaGraphs, Graphed, engine_graphs, trtllm_graphs,
                                      vllm_v0_graphs, vllm_v1_graphs)
from costmodel.serving.schedulers import SCHEDULERS
from costmodel.serving.steptime import StepTime, serving_profile
from costmodel.tree import CostModel
from cli import main


@pytest.fixture(scope="module")
def h100():
    return load_hardware("h100-sxm")


@pytest.fixture(scope="module")
def llama():
    return costmodel.load_model("llama3-8b")


@pytest.fixture(scope="module")
def step(llama, h100):
    return StepTime(llama, h100)


def _launches(leaves, cfg, batch, context, timer):
    """The launch seconds of a decode step's leaves (simulate's leaves_time over the decode tree)."""
    return leaves_time(leaves, inference_subs(cfg, "bf16", batch, 1, context=context), timer).launch_seconds


def _launch_saving(cfg, hardware, batch, context, keep):
    """Eager launches less graph launches (kernels x graph_kernel_s) over the decode tree's leaves
    but those `keep` says stay eager, each side from leaves_time as simulate times a decode step."""
    profile = serving_profile(cfg)
    leaves = [leaf for leaf in CostModel(cfg, profile, phase="decode").leaves if not keep(leaf)]
    eager = KernelTimer(hardware, "bf16", profile.attention)
    graphed = KernelTimer(hardware, "bf16", profile.attention, cuda_graphs=True)
    return _launches(leaves, cfg, batch, context, eager) - _launches(leaves, cfg, batch, context, graphed)


def _is_head(leaf):
    return leaf.path.startswith("head")


def _is_attention(leaf):
    return any(S.c in leaf.total(q).free_symbols for q in ("flops_matmul", "bytes_matmul", "flops_other", "bytes_other"))


@pytest.mark.parametrize("batch", [1, 8, 64])
def test_vllm_v0_decode_step_saves_the_launches_but_the_heads(llama, h100, step, batch):
    """A decode-only step at a captured batch size: eager launches less kernels x graph_kernel_s,
    over every leaf but the LM head (vLLM v0 computes the logits after the graph)."""
    graphed = step.with_graphs(vllm_v0_graphs(256))
    query, keys = [1] * batch, [700] * batch
    saving = _launch_saving(llama, h100, batch, 700, _is_head)
    assert saving > 0
    assert step.seconds(query, keys) - graphed.seconds(query, keys) == pytest.approx(saving, rel=1e-9)


def test_vllm_v1_step_saves_the_launches_but_attention_and_head(llama, h100, step):
    """Piecewise graphs: the attention (the leaves whose work depends on the keys) runs eagerly
    between the pieces, the LM head after them."""
    graphed = step.with_graphs(vllm_v1_graphs(256, 2048))
    saving = _launch_saving(llama, h100, 16, 900, lambda leaf: _is_head(leaf) or _is_attention(leaf))
    assert 0 < saving < _launch_saving(llama, h100, 16, 900, _is_head)
    assert step.seconds([1] * 16, [900] * 16) - graphed.seconds([1] * 16, [900] * 16) == pytest.approx(saving, rel=1e-9)


def test_mixed_and_prefill_steps_stay_eager_under_vllm_v0(step):
    """vLLM v0 captures decode-only batches: a prefill, a mixed batch, a batch above 256 sequences
    and one whose longest sequence passes max_seq_len_to_capture (8,192) run eagerly."""
    graphed = step.with_graphs(vllm_v0_graphs(512))
    for query, keys in (([512], [512]), ([100, 1, 1], [100, 40, 50]), ([1] * 264, [300] * 264),
                        ([1, 1], [8193, 100])):
        assert graphed.seconds(query, keys) == step.seconds(query, keys)
    assert graphed.seconds([1, 1], [8192, 100]) < step.seconds([1, 1], [8192, 100])


def test_graphs_pad_to_the_captured_sizes():
    """v0: a batch runs at _get_graph_batch_size (3 -> 4, 5 -> 8, 250 -> 256); v1: the step's tokens
    at the next capture size (300 -> 304), none above the largest (512, or the token budget)."""
    v0, v1 = vllm_v0_graphs(256), vllm_v1_graphs(1024, 8192)
    assert v0.sizes == (1, 2, 4) + tuple(range(8, 257, 8))
    assert v1.sizes == (1, 2, 4) + tuple(range(8, 513, 8))
    assert vllm_v1_graphs(64, 8192).sizes[-1] == 128 and vllm_v1_graphs(256, 100).sizes[-1] == 96
    assert vllm_v0_graphs(3).sizes == (1, 2, 4) and vllm_v0_graphs(20).sizes[-1] == 24
    ones = lambda n: np.ones(n, dtype=np.int64)  # noqa: E731
    assert [v0.plan(ones(n), ones(n) * 50) for n in (3, 5, 250)] == [Graphed(4, True), Graphed(8, True),
                                                                    Graphed(256, True)]
    assert v1.plan(np.array([299, 1]), np.array([299, 60])) == Graphed(304, False)
    assert v1.plan(np.array([512, 1]), np.array([512, 60])) is None
    assert EAGER.plan(ones(4), ones(4)) is None


def test_trtllm_graphs_are_the_listed_sizes_up_to_the_executors_limit():
    """TensorRT-LLM (_filter_cuda_graph_batch_sizes): perf-overview.md's sizes up to min(max_batch_size,
    max_num_tokens), then that limit itself since a larger size was listed (padding on); the whole
    forward, attention included, of a generation-only batch, padded to the next size; no context limit."""
    assert trtllm_graphs(640, 2048).sizes == (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 640)
    assert trtllm_graphs(4096, 8192).sizes[-3:] == (1024, 2048, 4096)
    assert trtllm_graphs(2304, 2000).sizes[-2:] == (1024, 2000)  # the token budget is the lower limit
    assert trtllm_graphs(10000, 20000).sizes[-1] == 8192  # nothing larger was listed: no extra size
    graphs, ones = trtllm_graphs(640, 2048), (lambda n: np.ones(n, dtype=np.int64))  # noqa: E731
    assert graphs.mode == "decode" and graphs.max_context is None
    assert [graphs.plan(ones(n), ones(n) * 100_000) for n in (3, 300, 600)] == [
        Graphed(4, True), Graphed(384, True), Graphed(640, True)]
    assert graphs.plan(np.array([128, 1]), np.array([128, 60])) is None  # a context step: eager


def test_trtllm_schedules_as_orca(llama, h100):
    """The trtllm scheduler's steps are Orca's (whole prompts, full reservation, generation first); its
    defaults are TensorRT-LLM's 2,048 sequences and 8,192 tokens; only the step times (graphs) differ."""
    from costmodel.serving.engine import simulate
    from costmodel.serving.kvcache import BlockPool
    from costmodel.serving.workload import Request

    assert DEFAULT_BUDGETS["trtllm"][:2] == (2048, 8192)
    requests = [Request(i, 0.01 * i, 100 + 37 * i, 5 + 3 * i) for i in range(9)]
    runs = {}
    for name in ("orca", "trtllm"):
        (cls, blocks, block_size, seqs, tokens), step, setup = build_replica(
            llama, h100, scheduler=name, max_num_seqs=4, max_batched_tokens=300, num_blocks=60)
        runs[name] = simulate(requests, cls(BlockPool(blocks, block_size), seqs, tokens), step.seconds, 8192)
        assert setup["cuda_graphs"] == ("decode" if name == "trtllm" else "none")
    assert [s.entries for s in runs["orca"].steps] == [s.entries for s in runs["trtllm"].steps]
    assert sum(s.seconds for s in runs["trtllm"].steps) < sum(s.seconds for s in runs["orca"].steps)


def test_padded_rows_cost_the_padded_gemms(step):
    """Under vLLM v0 a decode batch of 5 runs its per-token leaves at 8 rows: the step of 5 less
    the step of 8 is only their context (attention) and LM head parts, the eager difference less
    the per-token leaves' difference."""
    graphed = step.with_graphs(vllm_v0_graphs(256))
    keys = [600] * 8
    eager_gap = step.seconds([1] * 8, keys) - step.seconds([1] * 5, keys[:5])
    graphed_gap = graphed.seconds([1] * 8, keys) - graphed.seconds([1] * 5, keys[:5])
    per_token = step._per_token_group("tokens", 8) - step._per_token_group("tokens", 5)
    assert per_token > 0
    assert graphed_gap == pytest.approx(eager_gap - per_token, rel=1e-9)


@pytest.mark.parametrize("graphs", [vllm_v0_graphs(256), vllm_v1_graphs(256, 2048)])
def test_decode_run_is_the_steps_under_graphs(step, graphs):
    """The vectorised decode run equals seconds() step by step, also across v0's context limit."""
    graphed = step.with_graphs(graphs)
    for keys in ([300, 301, 900], [8185, 4000]):
        run = graphed.decode_run(keys, 12)
        each = [graphed.seconds([1] * len(keys), [k + j for k in keys]) for j in range(12)]
        assert run == pytest.approx(each, rel=1e-12)
    crossing = step.with_graphs(vllm_v0_graphs(256)).decode_run([8185, 4000], 12)
    assert crossing[7] < step.seconds([1, 1], [8192, 4007]) and crossing[8] == pytest.approx(
        step.seconds([1, 1], [8193, 4008]), rel=1e-12)


def test_roofline_graph_steps_drop_the_overhead_of_the_graphs_blocks(llama, h100):
    """The roofline: a graphed decode step pays no per-block overhead for the blocks inside the
    graph (as simulate --cuda-graphs), the head's still."""
    roof = StepTime(llama, h100, time_model="roofline")
    leaves = CostModel(llama, serving_profile(llama), phase="decode").leaves
    subs = {k: v for k, v in inference_subs(llama, "bf16", 4, 1, context=500).items()}
    inside = sum(int(leaf.count.xreplace(subs)) for leaf in leaves if not _is_head(leaf)
                 and any(leaf.total(q).xreplace(subs) != 0 for q in ("flops_matmul", "bytes_matmul",
                                                                     "flops_other", "bytes_other")))
    graphed = roof.with_graphs(vllm_v0_graphs(256))
    assert roof.seconds([1] * 4, [500] * 4) - graphed.seconds([1] * 4, [500] * 4) == pytest.approx(
        inside * h100.overhead_s_per_block, rel=1e-9)
    assert graphed.decode_run([500] * 4, 3)[0] == pytest.approx(graphed.seconds([1] * 4, [500] * 4), rel=1e-12)
    assert graphed.seconds([30, 1], [30, 40]) == roof.seconds([30, 1], [30, 40])


def test_each_scheduler_states_its_engines_graphs(h100):
    """Every scheduler has its engine's default with a source (TensorRT-LLM's and SGLang's: decode graphs); the transformers engines, Orca,
    Sarathi-Serve and static batching run eagerly, and nothing is graphed on a CPU's file."""
    assert set(ENGINE_GRAPHS) == set(SCHEDULERS)
    for name in SCHEDULERS:
        graphs = engine_graphs("auto", name, 256, 2048, h100)
        assert isinstance(graphs, CudaGraphs) and graphs.source
        assert (graphs.mode != "none") == (name in ("vllm", "vllm-v0", "trtllm", "sglang"))
        assert engine_graphs("off", name, 256, 2048, h100) is EAGER
    assert engine_graphs("auto", "vllm-v0", 256, 2048, h100).mode == "decode"
    assert engine_graphs("auto", "vllm", 256, 2048, h100).mode == "piecewise"
    cpu = load_hardware("h100-sxm").__class__(**{**load_hardware("h100-sxm").__dict__, "sm_count": None})
    assert engine_graphs("auto", "vllm", 256, 2048, cpu) is EAGER
    with pytest.raises(ConfigError, match="needs a GPU"):
        engine_graphs("on", "vllm", 256, 2048, cpu)
    with pytest.raises(ConfigError, match="runs no CUDA graphs"):
        engine_graphs("on", "sarathi", 256, 2048, h100)
    with pytest.raises(ConfigError, match="--cuda-graphs must be auto, on or off"):
        engine_graphs("yes", "vllm", 256, 2048, h100)


def test_replica_takes_the_engines_graphs(llama, h100):
    """build_replica attaches the scheduler's graphs to the step model and names them in the setup."""
    seqs, tokens, _ = DEFAULT_BUDGETS["vllm-v0"]
    _, step, setup = build_replica(llama, h100, scheduler="vllm-v0")
    assert step.graphs == vllm_v0_graphs(seqs) and setup["cuda_graphs"] == "decode"
    _, eager, setup = build_replica(llama, h100, scheduler="vllm-v0", cuda_graphs="off")
    assert eager.graphs is EAGER and setup["cuda_graphs"] == "none"
    assert step.seconds([1] * 8, [400] * 8) < eager.seconds([1] * 8, [400] * 8)
    assert step.seconds([400], [400]) == eager.seconds([400], [400])


def test_serve_under_graphs_is_the_graphed_step_model(step):
    """A lone request under vllm (auto): its TTFT is the graphed prefill step (512 tokens: captured)
    and each decode step the graphed one; the same run eager is slower by their launches."""
    graphed = step.with_graphs(vllm_v1_graphs(1024, 8192))
    run = costmodel.serve("llama3-8b", rate=0.001, requests=2, prompt="512", output="16", seed=3, sampling=None)
    eager = costmodel.serve("llama3-8b", rate=0.001, requests=2, prompt="512", output="16", seed=3, cuda_graphs="off",
                            sampling=None)  # the forward's steps (the sampler after it: tests/test_sampler_cost.py)
    assert run.setup["cuda_graphs"] == "piecewise" and eager.setup["cuda_graphs"] == "none"
    assert run.requests["ttft_s"].to_numpy() == pytest.approx([graphed.seconds([512], [512])] * 2, rel=1e-12)
    decode = np.mean([graphed.seconds([1], [512 + i]) for i in range(1, 16)])
    assert run.requests["tpot_s"].to_numpy() == pytest.approx([decode] * 2, rel=1e-12)
    assert (run.requests["tpot_s"] < eager.requests["tpot_s"]).all()


def test_transformers_schedulers_are_unchanged(llama, h100):
    """The transformers engines' schedulers run eagerly whatever --cuda-graphs auto says."""
    for name in ("hf-fifo", "hf-prefill-first", "static"):
        _, step, setup = build_replica(llama, h100, scheduler=name)
        assert step.graphs is EAGER and setup["cuda_graphs"] == "none"


def test_cli_cuda_graphs(capsys):
    base = ["serve", "--model", "llama3-8b", "--rate", "5", "--requests", "20", "--json"]
    assert main(base + ["--cuda-graphs", "off"]) == 0
    assert '"cuda_graphs": "none"' in capsys.readouterr().out
    assert main(base + ["--scheduler", "vllm-v0"]) == 0
    assert '"cuda_graphs": "decode"' in capsys.readouterr().out
    assert main(base + ["--scheduler", "trtllm"]) == 0
    assert '"cuda_graphs": "decode"' in capsys.readouterr().out
    assert main(base + ["--scheduler", "sarathi", "--cuda-graphs", "on"]) == 2
    err = capsys.readouterr().err
    assert "runs no CUDA graphs" in err and len(err.strip().splitlines()) == 1
    assert main(base + ["--cuda-graphs", "sometimes"]) == 2
    capsys.readouterr()
    # plan --serve without --rate times its layouts' decode from graphs (tests/test_smoke4_defects.py);
    # a training plan has no decode to replay
    assert main(["plan", "--model", "llama3-8b", "--gpus", "8", "--cuda-graphs", "on"]) == 2
    err = capsys.readouterr().err
    assert "add --serve" in err and len(err.strip().splitlines()) == 1
