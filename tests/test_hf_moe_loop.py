"""transformers 4.51.3's Qwen3-MoE decode step (the decode code "transformers-4.51", kernel_facts.json
eager_step_ops): its Qwen3MoeSparseMoeBlock loops over every routed expert with a torch.where each (a
host sync on a GPU), 18 aten ops an expert, counted by validate/generate_ops_451.py; Qwen3's speed
benchmark states that release, so its Qwen3-30B-A3B rows charge the loop."""

import pytest

from costmodel.eager_ops import step_ops, step_syncs
from costmodel.kernel_time import kernel_facts
from costmodel.presets import load_preset
from reports.published_decode import decode_run
from reports.published_runs import other_runs_data

OP_S = 6.545241752576789e-06  # kernel_facts.json eager_host_op_default: the h20 file states no host time
QWEN3_MOE_451 = 48 * (98 + 18 * 128) + 72  # 48 layers of 128 experts: 115,368 ops a step


def _entry():
    return next(e for e in kernel_facts()["eager_step_ops"]["implementations"] if e["name"] == "transformers-4.51")


def test_the_counted_loop_is_stated_for_qwen3_moe_under_sdpa_and_flash():
    entry = _entry()
    assert (entry["family"], entry["attention"], entry["stands_for"], entry["kv_cache"]) == ("qwen3_moe", "sdpa", ["flash"], "dynamic")
    assert entry["ops"] == {"bf16": {"per_layer": 98, "per_expert": 18, "per_step": 72, "syncs_per_expert": 1}}
    assert kernel_facts()["eager_step_ops"]["code_bases"]["transformers-4.51"]["base"] == "transformers"


def test_qwen3_30b_a3b_issues_the_loop_over_all_128_experts_in_each_of_48_layers():
    cfg = load_preset("qwen3-30b-a3b")
    assert (cfg.n_layers, cfg.n_experts) == (48, 128)
    assert step_ops(cfg, "transformers-4.51", "bf16", "flash", "dynamic") == QWEN3_MOE_451 == 115_368
    assert step_syncs(cfg, "transformers-4.51", "bf16", "flash", "dynamic") == 48 * 128 == 6_144
    # transformers 5.24's grouped_mm block: 48 x 111 + 56, no sync in the layers
    assert step_ops(cfg, "transformers", "bf16", "flash", "dynamic") == 48 * 111 + 56 == 5_384
    assert step_syncs(cfg, "transformers", "bf16", "flash", "dynamic") == 0
    assert step_ops(cfg, "transformers-4.51", "fp32", "flash", "dynamic") is None  # counted in bf16 only


def test_a_family_without_experts_takes_5_24s_counts_and_another_moe_family_none():
    # Qwen3 under flash has its own 4.51.3 entry (validate/generate_syncs.py: 93 a layer with the call stood
    # in, less it, plus flash-attn 2.7.4's 7: 99; the step's own 75), 5.24's 92 and 56 before; under sdpa
    # 5.24's; Qwen2.5 (no 4.51 entry) 5.24's 76 and 56
    for name, ops in (("qwen3-8b", 36 * 99 + 75), ("qwen3-32b", 64 * 99 + 75), ("qwen2.5-7b-instruct", 2184)):
        assert step_ops(load_preset(name), "transformers-4.51", "bf16", "flash", "dynamic") == ops
    assert step_ops(load_preset("qwen3-8b"), "transformers-4.51", "bf16", "sdpa", "dynamic") == 36 * 92 + 56
    # Mixtral's 4.51 block loops too, but it is not counted: no host term rather than 5.24's grouped_mm count
    assert step_ops(load_preset("mixtral-8x7b"), "transformers-4.51", "bf16", "flash", "dynamic") is None


def test_the_qwen3_speed_source_states_4_51_and_its_moe_rows_charge_the_loop():
    data = other_runs_data()
    source = data["sources"]["qwen3-speed-hf"]
    assert source["implementation"] == "transformers-4.51" and "Transformers 4.51.3" in source["source"]
    assert data["sources"]["qwen2.5-speed-hf"]["implementation"] == "transformers-4.46"
    run = next(r for r in data["runs"] if r["id"] == "qwen3-speed-hf qwen3-30b-a3b input 1")
    # host-bound: every step is its ops at the borrowed op time; (1 + 2,048) tokens over the prefill and 2,047 steps
    rate = decode_run(run, source, "kernels")
    step = QWEN3_MOE_451 * OP_S
    assert step == pytest.approx(0.7551114505, rel=1e-9)
    assert 2049 / rate > 2047 * step and 2049 / rate - 2047 * step < 2.0  # the rest is the prefill
    assert rate / 1.89 == pytest.approx(0.70, abs=0.005)


def test_simulate_states_the_syncs():
    from costmodel.roofline import simulate_inference
    from costmodel.hardware import load_hardware

    cfg = load_preset("qwen3-30b-a3b")
    result = simulate_inference(cfg, load_hardware("h20"), prompt=1, gen=3, batch=1, dtype="bf16", attention="flash",
                                kv_cache="dynamic", cuda_graphs=False, time_model="kernels",
                                implementation="transformers-4.51")
    host = result["decode"]["host"]
    assert (host["ops_per_step"], host["syncs_per_step"], host["bound"]) == (115_368, 6_144, True)
    assert host["seconds_per_step"] == pytest.approx(115_368 * OP_S, rel=1e-12)
    plain = simulate_inference(cfg, load_hardware("h20"), prompt=1, gen=3, batch=1, dtype="bf16", attention="flash",
                               kv_cache="dynamic", cuda_graphs=False, time_model="kernels")
    assert "syncs_per_step" not in plain["decode"]["host"] and plain["decode"]["host"]["ops_per_step"] == 5_384


def test_the_counting_script_refuses_another_transformers(capsys):
    transformers = pytest.importorskip("transformers")
    from validate import generate_ops_451

    if transformers.__version__ == "4.51.3":  # the wheel first on the path: count again
        assert generate_ops_451.counts() == {"per_layer": 98, "per_expert": 18, "per_step": 72, "syncs_per_expert": 1,
                                            "cpu_only_per_layer": 3}  # the CPU counts 101 a layer
        return
    with pytest.raises(SystemExit) as exit_:
        generate_ops_451.counts()
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith("error: transformers 4.51.3 must come first on the path")
