"""Megatron-Bridge's CUDA-graph guide's two Qwen3-30B-A3B runs among the published runs
(costmodel/published_runs.json "megatron-bridge-docs": docs/training/cuda-graphs.md at 1faf74e32, the
layout from PR #3868's experiment handoff): each row's figures as the page prints them, the layout
train_setup builds, and what the kernel model makes of the pair."""

from __future__ import annotations

from reports.published_runs import train_step, train_setup
from tests.megatron_bridge_pages import runs_and_source

EAGER = "megatron-bridge-docs qwen3-30b-a3b cuda-graphs eager bf16 16xh100"
GRAPHS = "megatron-bridge-docs qwen3-30b-a3b cuda-graphs te-scoped bf16 16xh100"


def test_the_rows_are_the_pages_step_times_over_the_handoffs_layout():
    """'replay iterations 5-8 averaged 42.00 s versus 41.36 s for eager'; 16 GPUs, TP 1, PP 1, EP 16,
    MBS 1, GBS 1024, sequence 4,096: tokens/s per GPU = 1024 x 4096 / seconds / 16."""
    runs, _ = runs_and_source("megatron-bridge-docs")
    for run_id, seconds, scopes in ((EAGER, 41.36, []), (GRAPHS, 42.00, ["attn", "moe_router", "moe_preprocess"])):
        run = runs[run_id]
        assert run["published_seconds_per_step"] == seconds
        assert run["published_tokens_per_s_per_gpu"] == round(1024 * 4096 / seconds / 16, 3)
        assert (run["gpus"], run["tp"], run["pp"], run["dp"], run["ep"]) == (16, 1, 1, 16, 16)
        assert (run["micro_batch"], run["global_batch"], run["seq_len"]) == (1, 1024, 4096)
        assert run["cuda_graph_scope"] == scopes and "ep_dispatcher" not in run and "overlap" not in run
    assert runs[EAGER]["published_tokens_per_s_per_gpu"] == 6338.104


def test_the_layout_is_the_all_to_all_over_two_nodes_in_bf16():
    runs, source = runs_and_source("megatron-bridge-docs")
    estimate, hardware, _ = train_setup(runs[EAGER], source)
    layout = estimate.layout
    assert (layout.ep, layout.ep_dispatcher, layout.microbatches) == (16, "alltoall", 64)
    assert layout.grad_reduce_dtype == "bf16" and layout.fp8 is None and hardware.name == "h100-sxm"
    assert layout.ep > hardware.gpus_per_node  # EP 16 spans the two 8-GPU nodes


def test_the_exposed_all_to_all_is_most_of_the_step_and_the_graphs_change_nothing():
    """The kernel model: the EP all-to-all over the inter-node link, exposed (no EP overlap), is
    more than half the step, so the host's module calls hide under it and the TE-scoped graphs
    leave the step as it is (the page: 42.00 s with graphs against 41.36 s eager)."""
    runs, source = runs_and_source("megatron-bridge-docs")
    eager, _ = train_step(runs[EAGER], source, "kernels")
    graphs, _ = train_step(runs[GRAPHS], source, "kernels")
    assert eager["seconds"] == graphs["seconds"]
    assert eager["exposed_communication_seconds"]["ep"] > eager["seconds"] / 2
