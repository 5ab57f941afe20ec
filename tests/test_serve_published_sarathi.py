"""benchmarks/published_sarathi.py: Sarathi-Serve's Table 2 as the source states it, and our rows computed
from its setup (model, hardware, tp, dtype, budgets and requests), not typed in. Split from
tests/test_serve_published.py."""

from __future__ import annotations

import pytest


@pytest.fixture
def script():
    from benchmarks import published_sarathi

    return published_sarathi


def test_sarathi_figures_are_table_2s_results_csv(script):
    # osdi-experiments/table-2/results.csv (batch_execution_time, linear, attention in ms) and runs.sh
    assert script.SARATHI_BATCHES == {
        (1024, 0, 1): (217.2359591349959, 160.9267194569111, 13.67039993405342),
        (0, 4, 4): (68.12209542840715, 25.50041586626321, 2.9952000081539154),
        (1021, 3, 4): (217.6498775370419, 158.9964799284935, 3.9936000108718868)}
    assert {k: v for k, v in script.SARATHI.items() if k != "runs"} == {
        "model": "yi-34b-200k", "hardware": "a100-pcie", "tp": 2, "dtype": "fp16", "requests": 8, "prompt": 1024,
        "output": 16, "max_model_len": 1040, "max_num_seqs": 4, "gpu_memory_utilization": 0.85}
    assert script.SARATHI["runs"] == (("vllm-v0", 1040), ("sarathi", 1024))


def test_batch_kinds_count_prefill_and_decode_tokens_as_sarathi_does(script):
    """Sarathi's scheduler, budget 5, two requests of 4 + 3 tokens at 0: r0's prompt and 1 of
    r1's (5 prefill tokens); r0's first decode beside r1's last 3 prompt tokens; both decode; r1's
    last decode alone."""
    from costmodel.serving.schedulers import SarathiScheduler

    requests = [script.Request(i, 0.0, 4, 3) for i in range(2)]
    timeline = script.simulate(requests, SarathiScheduler(script.BlockPool(100, 4), 8, 5), lambda q, k, e: 1.0, 512)
    assert [kind for kind, _ in script.batch_kinds(timeline, 4)] == [(5, 0, 2), (3, 1, 2), (0, 2, 2), (0, 1, 1)]


def test_sarathi_rows_are_computed_from_the_setup(script, monkeypatch):
    """Both runs are simulated with Table 2's model, hardware, tp, dtype, budgets and requests; each
    row is the median of our steps of the published kind (every kind occurs) and the projections'
    GEMMs of the step model at that batch's token count."""
    seen, steps = [], []
    real_build, real_simulate = script.build_replica, script.simulate

    def build(cfg, hardware, **options):
        seen.append(dict(model=cfg.name, hardware=hardware.name, **options))
        replica, step, setup = real_build(cfg, hardware, **options)
        steps.append(step)
        return replica, step, setup

    def simulate(requests, scheduler, step_seconds, max_model_len, *args, **options):
        seen[-1].update(requests={(r.arrival_s, r.prompt_tokens, r.output_tokens) for r in requests},
                        count=len(requests), max_model_len=max_model_len, host=options["host"].version)
        return real_simulate(requests, scheduler, step_seconds, max_model_len, *args, **options)

    monkeypatch.setattr(script, "build_replica", build)
    monkeypatch.setattr(script, "simulate", simulate)
    rows = script.sarathi_rows()
    common = {"model": "yi-34b-200k", "hardware": "a100-pcie", "tp": 2, "dtype": "fp16", "max_num_seqs": 4,
              "gpu_memory_utilization": 0.85, "cuda_graphs": "off", "requests": {(0.0, 1024, 16)}, "count": 8, "max_model_len": 1040,
              "all_reduce": "nccl",  # Sarathi-Serve's vLLM fork predates the custom all-reduce (wt40_customar)
              # the engine's host parts a step, Vidur's profile of Sarathi-Serve's engine, on each step (wt41_hostv1)
              "host_time": "sarathi-serve", "host": "sarathi-serve"}
    assert seen == [dict(common, scheduler="vllm-v0", max_batched_tokens=1040),
                    dict(common, scheduler="sarathi", max_batched_tokens=1024)]
    step = steps[-1]
    by_kind = {row["kind"]: row for row in rows}
    # results.csv's three kinds of batch and their median batch_execution_time and linear (ms)
    published = {(1024, 0, 1): (217.2359591349959, 160.9267194569111), (0, 4, 4): (68.12209542840715, 25.50041586626321),
                 (1021, 3, 4): (217.6498775370419, 158.9964799284935)}
    assert set(by_kind) == set(published) and all(row["steps"] > 0 for row in rows)
    # a prefill alone is one sequence of 1,024 tokens attending to its own 1,024 keys (its median step is vllm-v0's,
    # which samples its one row since session 34: steps[0].seconds), and the engine's serial host time at one
    # sequence: host_time.json sarathi-serve's line (Vidur's medians at 8-64 sequences) at 1, 1.4753 ms (wt41_hostv1)
    host = steps[0].host_time
    assert host.version == "sarathi-serve" and step.host_time == host
    assert by_kind[(1024, 0, 1)]["ours_ms"] == 1e3 * host.step(steps[0].seconds([1024], [1024]), 1)
    assert 1e3 * host.seconds(1) == pytest.approx(1.4753487501133762, rel=1e-12)
    # four decodes: vllm-v0's 4 + 4 x 15 steps and sarathi's all run at contexts 1,025-1,039 (vllm-v0's with its
    # sampler since session 34, steps[0]; sarathi's unpriced), each with the host's 2.0574 ms at four sequences
    decodes = [1e3 * host.step(step.seconds([1] * 4, [1025] * 4), 4),
               1e3 * host.step(steps[0].seconds([1] * 4, [1039] * 4), 4)]
    assert 1e3 * host.seconds(4) == pytest.approx(2.057386746648177, rel=1e-12)
    assert decodes[0] <= by_kind[(0, 4, 4)]["ours_ms"] <= decodes[1]
    for kind, row in by_kind.items():
        gemms = step.gemm_seconds_by_leaf(kind[0] + kind[1])
        # Sarathi's "linear": the four projections (attn_pre_proj, attn_post_proj, mlp_up_proj,
        # mlp_down_proj), i.e. every GEMM of the step but the LM head's
        assert set(gemms) == {"decoder.layer.self_attention.qkv", "decoder.layer.self_attention.out",
                              "decoder.layer.ffn.mlp", "head.lm_head"}
        linear = sum(seconds for path, seconds in gemms.items() if path != "head.lm_head")
        assert row["ours_linear_ms"] == pytest.approx(1e3 * linear, rel=1e-12)
        assert (row["published_ms"], row["published_linear_ms"]) == published[kind]
