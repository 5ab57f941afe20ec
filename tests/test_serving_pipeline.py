"""Pipeline parallelism in the serving simulator: a batch's step is the stages in sequence plus
pp - 1 sends of its hidden states; a replica holds pp batches in flight (pp virtual engines, each
with 1/pp of the KV blocks, as vLLM's pipeline parallelism runs it); each GPU holds 1/pp of the
weights and of the KV bytes per token."""

from __future__ import annotations

import json

import pytest

import costmodel
from cli import main
from costmodel.hardware import load_hardware
from costmodel.serving.kvcache import cache_sizing
from costmodel.serving.steptime import StepTime, serving_profile


@pytest.fixture(scope="module")
def llama():
    return costmodel.load_model("llama3-8b")


def test_step_adds_the_sends_between_stages(llama):
    hardware = load_hardware("h100-sxm")
    from costmodel.collectives import collective_seconds

    one, two = (StepTime(llama, hardware, tp=2, time_model="roofline"),
                StepTime(llama, hardware, tp=2, pp=4, time_model="roofline"))
    send = 4096 * 2 / hardware.link(8)  # d x bf16 bytes per token, stage to stage
    for query, keys in (([1, 1, 1], [100, 200, 300]), ([512, 1], [512, 900])):
        tokens = sum(query)
        expected = one.seconds(query, keys) + 3 * (tokens * send + hardware.collective_latency_s)
        assert two.seconds(query, keys) == pytest.approx(expected, rel=1e-12)
    assert list(two.decode_run([100, 200], 3)) == pytest.approx(
        [two.seconds([1, 1], [100 + i, 200 + i]) for i in range(3)], rel=1e-12)
    # The kernel model (the default): the sends from costmodel/collectives.py.
    one, two = StepTime(llama, hardware, tp=2), StepTime(llama, hardware, tp=2, pp=4)
    assert two.time_model == "kernels"
    for query, keys in (([1, 1, 1], [100, 200, 300]), ([512, 1], [512, 900])):
        sends = 3 * collective_seconds(hardware, "send", sum(query) * 4096 * 2, 2, 8)
        assert sends > 0
        assert two.seconds(query, keys) == pytest.approx(one.seconds(query, keys) + sends, rel=1e-12)
    assert list(two.decode_run([100, 200], 3)) == pytest.approx(
        [two.seconds([1, 1], [100 + i, 200 + i]) for i in range(3)], rel=1e-12)


def test_each_gpu_holds_its_stage_share(llama):
    profile = serving_profile(llama)
    whole = cache_sizing(llama, profile, 2, 80 * 2**30, 0.9, 512 * 2**20, 16, 2048, tp=2)
    staged = cache_sizing(llama, profile, 2, 80 * 2**30, 0.9, 512 * 2**20, 16, 2048, tp=2, pp=4)
    assert staged.weight_bytes == -(-whole.weight_bytes * 2 // 8)
    assert staged.kv_bytes_per_token == 131072 * 32 // 32 // 8 == 16384  # 32 layers x 2 x 8 heads x 128 x 2 B
    assert staged.activation_bytes == whole.activation_bytes


def _serve(tmp_path, rows, **options):
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps({"arrival": a, "prompt_tokens": p, "output_tokens": o}) + "\n"
                            for a, p, o in rows))
    return costmodel.serve("llama3-8b", "h100-sxm", trace=str(path), num_blocks=64,
                           **{"cuda_graphs": "off", "sampling": None, **options})  # the forward (no sampler)


def test_two_stages_run_two_batches_at_once(tmp_path, llama):
    rows = [(0.0, 300, 2), (0.0, 300, 2)]
    staged = _serve(tmp_path, rows, pp=2)
    step = StepTime(llama, load_hardware("h100-sxm"), profile=serving_profile(llama), pp=2)
    assert sorted(staged.steps["replica"].unique()) == [0, 1]
    assert staged.requests["ttft_s"].tolist() == pytest.approx([step.seconds([300], [300])] * 2, rel=1e-12)
    assert staged.setup["gpus"] == 2 and staged.setup["num_blocks"] == 64
    together = _serve(tmp_path, rows, pp=1)  # one engine: both prompts in one batch
    one = StepTime(llama, load_hardware("h100-sxm"), profile=serving_profile(llama))
    assert together.requests["ttft_s"].tolist() == pytest.approx([one.seconds([300, 300], [300, 300])] * 2,
                                                                 rel=1e-12)


def test_bad_pp_is_one_line(capsys):
    assert main(["serve", "--model", "llama3-8b", "--rate", "1", "--pp", "0"]) == 2
    assert "--pp must be between 1 and the model's 32 layers" in capsys.readouterr().err


@pytest.mark.slow
def test_capacity_search_takes_pipeline_stages(capsys):
    args = ["plan", "--serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--rate", "4", "--slo-ttft", "1",
            "--slo-tpot", "0.05", "--requests", "40", "--tp", "1", "--pp", "2", "--json"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["configurations"] == 9 and result["feasible"]
    assert all(row["pp"] == 2 and row["gpus"] == 2 * row["replicas"] for row in result["feasible"])
    assert main(args[:-1]) == 0 and " pp " in capsys.readouterr().out
