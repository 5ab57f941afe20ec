"""Where Hugging Face generate's decoding step waits for the GPU (kernel_facts.json "generate_windows",
costmodel/generate_windows.py, counted by validate/generate_syncs.py under transformers 4.46.0 and
4.51.3): the ops issued outside the forward's window between reads add their host time to a GPU-bound
step; sampling as the checkpoint's generation_config.json asks adds its processors' ops. No read
inside a layer: with a mask of ones the flash path never runs _upad_input."""

import pytest

from costmodel.config import ConfigError
from costmodel.eager_ops import step_ops
from costmodel.generate_windows import StepWindows, step_windows
from costmodel.hardware import load_hardware
from costmodel.kernel_time import kernel_facts
from costmodel.presets import load_preset
from costmodel.roofline import simulate_inference


def test_the_counted_windows_of_both_releases():
    qwen2, qwen3 = load_preset("qwen2.5-7b-instruct"), load_preset("qwen3-8b")
    assert step_windows(qwen2, "transformers-4.46", "flash") == StepWindows(per_step=73, serial=15, syncs=3)
    assert step_windows(qwen2, "transformers-4.46", "flash", "sampled") == StepWindows(114, 41, 5)
    assert step_windows(qwen3, "transformers-4.51", "flash") == StepWindows(75, 18, 4)
    assert step_windows(qwen3, "transformers-4.51", "flash", "sampled") == StepWindows(110, 44, 6)
    # counted for these codes and families under flash only
    assert step_windows(qwen2, "transformers", "flash") is None
    assert step_windows(qwen2, "transformers-4.46", "sdpa") is None
    assert step_windows(load_preset("qwen3-30b-a3b"), "transformers-4.51", "flash", "sampled") is None
    with pytest.raises(ValueError, match="sampling must be one of greedy, sampled"):
        step_windows(qwen2, "transformers-4.46", "flash", "beam")


def test_the_source_text_says_no_layer_reads_the_gpu():
    source = kernel_facts()["generate_windows"]["source"]
    assert "modeling_qwen2.py line 943" in source and "never _upad_input" in source


def test_sampling_takes_the_releases_own_step_ops():
    cfg = load_preset("qwen2.5-7b-instruct")  # 28 layers of 81 + repeat_kv's 8 (eager_step_ops)
    assert step_ops(cfg, "transformers-4.46", "bf16", "flash", "dynamic") == 28 * 89 + 73 == 2_565
    assert step_ops(cfg, "transformers-4.46", "bf16", "flash", "dynamic", sampling="sampled") == 28 * 89 + 114


def test_the_serial_ops_join_a_gpu_bound_step_and_leave_a_host_bound_one():
    cfg, a100 = load_preset("qwen2.5-7b-instruct"), load_hardware("a100-80gb")
    op_s = a100.eager_op_s
    assert op_s == pytest.approx(7.1e-6)

    def step(prompt, sampling):
        result = simulate_inference(cfg, a100, prompt=prompt, gen=2, batch=1, attention="flash",
                                    time_model="kernels", implementation="transformers-4.46", sampling=sampling)
        return result["decode"]["last_token"]["seconds"], result["decode"]["host"]

    (host_bound, greedy), (host_bound_sampled, sampled) = step(1, "greedy"), step(1, "sampled")
    assert greedy["bound"] and sampled["bound"]  # 2,565 and 2,606 ops at 7.1 us: the host's step
    assert host_bound == pytest.approx(2_565 * op_s) and host_bound_sampled == pytest.approx(2_606 * op_s)
    assert (sampled["serial_ops_per_step"], sampled["loop_reads_per_step"]) == (41, 5)
    (gpu_bound, greedy), (gpu_bound_sampled, _) = step(30720, "greedy"), step(30720, "sampled")
    assert not greedy["bound"]  # the kernels pass the host: the serial ops are what sampling adds
    assert gpu_bound_sampled - gpu_bound == pytest.approx((41 - 15) * op_s)


def test_an_unknown_sampling_is_one_line():
    with pytest.raises(ConfigError, match="sampling must be one of greedy, sampled, got 'beam'"):
        simulate_inference(load_preset("qwen2.5-0.5b"), load_hardware("a100-80gb"), prompt=1, gen=2, batch=1,
                           implementation="transformers-4.46", sampling="beam")


@pytest.mark.parametrize("sampled", [False, True])
def test_the_counting_script_recounts_or_refuses_another_transformers(capsys, sampled):
    transformers = pytest.importorskip("transformers")
    from validate import generate_syncs

    if transformers.__version__ in generate_syncs.SAMPLING:  # a wheel first on the path: count again
        counts = generate_syncs.counts(sampled)
        name = {"4.46.0": ("transformers-4.46", "qwen2"), "4.51.3": ("transformers-4.51", "qwen3")}[transformers.__version__]
        entry = next(e for e in kernel_facts()["generate_windows"]["implementations"] if (e["name"], e["family"]) == name)
        stated = entry["sampled" if sampled else "greedy"]
        assert (counts["per_step"], counts["serial_per_step"], counts["syncs_per_step"]) == (
            stated["per_step"], stated["serial_per_step"], stated["syncs_per_step"])
        layers = next(e for e in kernel_facts()["eager_step_ops"]["implementations"]
                      if (e["name"], e["family"]) == name)["ops"]["bf16"]  # 4.46: 81 + repeat_kv's 8
        assert counts["per_layer_with_the_call"] == layers["per_layer"] + layers.get("grouped_kv_per_layer", 0)
        return
    with pytest.raises(SystemExit) as exit_:
        generate_syncs.counts(sampled)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith("error: transformers 4.46.0 or 4.51.3 must come first on the path")


def test_one_simulate_looks_the_windows_up_once_and_an_uncounted_step_not_at_all(monkeypatch):
    # session 36 looked them up twice (eager_ops.step_ops_split, then simulate_inference for the serial ops),
    # and step_ops_split before its early return for weights it does not count
    from costmodel import generate_windows

    calls = []
    real = generate_windows.step_windows
    monkeypatch.setattr(generate_windows, "step_windows", lambda *args: calls.append(args) or real(*args))
    cfg = load_preset("qwen2.5-0.5b")
    result = simulate_inference(cfg, load_hardware("a100-80gb"), prompt=64, gen=2, batch=1, attention="flash",
                                time_model="kernels", implementation="transformers-4.46", sampling="sampled")
    assert len(calls) == 1
    assert result["decode"]["host"]["ops_per_step"] == 24 * 89 + 114
    assert result["decode"]["host"]["serial_ops_per_step"] == 41
    calls.clear()
    assert step_ops(cfg, "transformers-4.46", "bf16", "flash", "dynamic", {"fp8_gemm": "tensorwise"}) is None
    assert calls == []
    with pytest.raises(ConfigError, match="got 'beam'"):  # a typo is still one line on that early return
        step_ops(cfg, "transformers-4.46", "bf16", "flash", "dynamic", {"fp8_gemm": "tensorwise"}, "beam")


def test_a_tensor_parallel_run_stating_sampling_is_refused_not_timed_as_greedy():
    """The layout model's decode counts greedy's step (DECODE_SETTINGS): session 36 read a tp > 1 run's
    "sampling" and dropped it."""
    from reports.published_decode import decode_run
    from reports.published_runs import other_runs_data

    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == "gpt-fast llama2-7b tp2")
    source = data["sources"][run["id"].split()[0]]
    assert decode_run(run, source, "kernels") > 0  # greedy, as its source states
    with pytest.raises(ConfigError, match="sampling 'sampled' is counted by one GPU's simulate only"):
        decode_run({**run, "sampling": "sampled"}, source, "kernels")


def test_the_windows_are_generates_default_cache_only():
    """Counted under generate()'s DynamicCache (validate/generate_syncs.py passes no cache): a static cache's
    step is not that count (session 36 matched the windows whatever the cache)."""
    qwen2 = load_preset("qwen2.5-7b-instruct")
    assert step_windows(qwen2, "transformers-4.46", "flash", "sampled", "dynamic") == StepWindows(114, 41, 5)
    assert step_windows(qwen2, "transformers-4.46", "flash", "sampled", "static") is None
    # generate()'s entries only; wt40_litgpt added lit-gpt's, whose generate/base.py keeps its own static cache
    assert {e["kv_cache"] for e in kernel_facts()["generate_windows"]["implementations"]
            if e["name"].startswith("transformers")} == {"dynamic"}
    assert {e["kv_cache"] for e in kernel_facts()["generate_windows"]["implementations"]
            if e["name"].startswith("lit-gpt")} == {"static"}
