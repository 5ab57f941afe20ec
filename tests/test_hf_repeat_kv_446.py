"""transformers 4.46.0's decode step of Qwen2 under flash_attention_2 (the decode code
"transformers-4.46", kernel_facts.json eager_step_copies): Qwen2FlashAttention2.forward runs repeat_kv on
the cached K and V before flash (modeling_qwen2.py lines 402-403), so every step copies the whole cache
to every query head and the flash kernel reads h heads, not h_kv; Qwen2.5's speed benchmark states that
release, so its A100 rows charge both."""

from types import SimpleNamespace

import pytest

from costmodel.eager_ops import step_copies, step_ops
from costmodel.hardware import load_hardware
from costmodel.kernel_time import inference_subs
from costmodel.presets import load_preset
from costmodel.roofline import KernelSteps, simulate_inference
from costmodel.roofline_model import Roofline
from reports.published_decode import decode_run
from reports.published_runs import other_runs_data

A100_BANDWIDTH = 2.039e12 * 0.8  # a100-80gb's HBM at the timer's memory efficiency (no cold copies stated)


def test_qwen2_7b_copies_16384_and_reads_12288_bytes_more_a_cached_key_and_layer():
    cfg = load_preset("qwen2.5-7b-instruct")
    assert (cfg.family, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.d_head) == ("qwen2", 28, 28, 4, 128)
    parts = step_copies(cfg, "transformers-4.46", "flash")["parts"]
    subs = inference_subs(cfg, "bf16", 1, 1, context=100)
    per_key = {name: int(part.bytes_per_key.xreplace(subs)) for name, part in parts.items()}
    # repeat_kv: K and V each read 4 heads and write 28 of 128 bf16; flash then reads 28 - 4 heads more of each
    assert per_key == {"repeat_kv": 2 * 2 * 128 * (4 + 28), "flash_reads_repeated": 2 * 2 * 128 * (28 - 4)}
    assert per_key == {"repeat_kv": 16_384, "flash_reads_repeated": 12_288}
    assert (parts["repeat_kv"].op, parts["repeat_kv"].calls) == ("clone", 2)


def test_the_copies_apply_to_grouped_heads_under_flash_in_4_46_only():
    cfg = load_preset("qwen2.5-7b-instruct")
    assert step_copies(cfg, "transformers", "flash") is None  # 5.24's flash path repeats nothing
    assert step_copies(cfg, "transformers-4.46", "sdpa") is None  # not read for sdpa here
    multi_head = SimpleNamespace(family="qwen2", n_heads=28, n_kv_heads=28)  # what step_copies reads of a config
    assert step_copies(multi_head, "transformers-4.46", "flash") is None  # repeat_kv returns its input
    assert step_copies(SimpleNamespace(family="qwen2", n_heads=28, n_kv_heads=4), "transformers-4.46", "flash")
    assert step_copies(load_preset("llama3-8b"), "transformers-4.46", "flash") is None  # Llama's 4.46 FA2 does not repeat
    # its ops: 4.46's own count (validate/generate_ops_446.py), 28 x (81 + 8 of repeat_kv) + 73, against 5.24's 28 x 76 + 56
    assert step_ops(cfg, "transformers", "bf16", "flash", "dynamic") == 28 * 76 + 56 == 2184
    assert step_ops(cfg, "transformers-4.46", "bf16", "flash", "dynamic") == 28 * (81 + 8) + 73 == 2565
    assert step_ops(load_preset("qwen2.5-0.5b"), "transformers-4.46", "bf16", "flash", "dynamic") == 24 * 89 + 73
    assert step_ops(load_preset("llama3-8b"), "transformers-4.46", "bf16", "flash", "dynamic") == 2488  # 5.24's (no entry)
    assert step_ops(load_preset("qwen3-30b-a3b"), "transformers-4.46", "bf16", "flash", "dynamic") is None  # experts


def test_the_4_46_count_is_stated_and_the_script_refuses_another_transformers(capsys):
    from costmodel.kernel_time import kernel_facts

    entry = next(e for e in kernel_facts()["eager_step_ops"]["implementations"] if e["name"] == "transformers-4.46")
    assert (entry["family"], entry["attention"]) == ("qwen2", "flash")
    assert entry["ops"] == {"bf16": {"per_layer": 81, "per_step": 73, "grouped_kv_per_layer": 8}}
    transformers = pytest.importorskip("transformers")
    from validate import generate_ops_446

    assert generate_ops_446.FLASH_CALL_OPS == 5
    if transformers.__version__ == "4.46.0":  # the wheel first on the path: count again
        assert generate_ops_446.counts() == {"per_layer": 81, "grouped_kv_per_layer": 8, "per_step": 73}
        return
    with pytest.raises(SystemExit) as exit_:
        generate_ops_446.counts()
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith("error: transformers 4.46.0 must come first on the path")


def test_a_step_adds_the_copies_bytes_at_the_bandwidth():
    cfg, hardware = load_preset("qwen2.5-7b-instruct"), load_hardware("a100-80gb")
    roof = Roofline(cfg, hardware, "bf16", None, "flash", "dynamic", False, None, "naive")
    steps = KernelSteps(roof, False, False, 2565, copies=step_copies(cfg, "transformers-4.46", "flash"))
    subs = inference_subs(cfg, "bf16", 1, 1, context=30721)
    assert steps.copy_seconds(subs, 30721) == pytest.approx(28 * 28_672 * 30721 / A100_BANDWIDTH, rel=1e-12)
    assert KernelSteps(roof, False, False, 2184).copy_seconds(subs, 30721) == 0.0
    # the step at 30,721 keys: 4.46's kernels and copies against 5.24's (host-bound there)
    new, old = (simulate_inference(cfg, hardware, prompt=30720, gen=2, batch=1, dtype="bf16", attention="flash",
                                   kv_cache="dynamic", cuda_graphs=False, time_model="kernels",
                                   implementation=code)["decode"] for code in ("transformers-4.46", "transformers"))
    assert old["host"]["bound"] and new["first_token"]["seconds"] > 0.015119 + 0.0124


def test_the_qwen25_rows_charge_4_46s_copies():
    data = other_runs_data()
    source = data["sources"]["qwen2.5-speed-hf"]
    assert source["implementation"] == "transformers-4.46" and "4.46.0" in source["source"]
    runs = {r["id"]: r for r in data["runs"]}
    ratio = {p: decode_run(runs[f"qwen2.5-speed-hf qwen2.5-7b-instruct input {p}"], source, "kernels") / rate
             for p, rate in ((1, 40.38), (30720, 18.83))}
    # 1.36x and 1.80x greedy; sampled as the script's generation config asks (generate_windows: 41 ops more
    # a step, 41 of them issued outside the forward's window): 1.34x and 1.78x; session 38 (the eager kernels keep
    # their GPU-side launch cost, graph_kernel_s, 1.34 us a kernel on an A100): 1.338x and 1.748x
    assert source["sampling"] == "sampled"
    assert ratio[1] == pytest.approx(1.338, abs=0.0005) and ratio[30720] == pytest.approx(1.748, abs=0.0005)
