"""serve's KV cache and simulate's/plan's fits read one rule for the memory a serving engine fills
(costmodel/hardware.py serving_memory: floor(memory x utilization) - memory_reserve_bytes). serve
once sized its blocks from floor(memory x utilization) alone: Llama 3 8B on an H100, 28,203 blocks
where the same hardware file's fits left 27,947 (at 80 GiB, with all 8,192 positions' logits as the
activation peak). The memory is what the H100 reports, 81,117 MiB (device_memory_bytes), and the
activation peak vLLM v1's profile run's (profile_run.json): 28,431 blocks."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.hardware import load_hardware, serving_memory
from costmodel.presets import load_preset
from costmodel.serving.replica import build_replica

# Llama 3 8B on h100-sxm (tests/test_serving.py test_blocks_from_memory_left): its weights; vLLM v1's
# profile-run peak at serve's defaults there (1,024 sequences, 8,192 tokens): the logits of 1,024
# sampled rows, the 8,192 x 4,096 hidden states, the ids and RoPE's buffer; a block of 16 tokens.
WEIGHTS, ACTIVATIONS, BLOCK = 16_060_522_496, 1024 * 128_256 * 2 + 8192 * 4096 * 2 + 66_048, 16 * 131_072
DEVICE = 81_117 * 2**20  # what the H100 reports (h100-sxm's device_memory_bytes)


def _kv_cache(capsys, *args: str) -> dict:
    assert cli.main(["serve", "--model", "llama3-8b", "--rate", "1", "--requests", "3", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["setup"]["kv_cache"]


def test_serve_fills_what_simulate_and_plan_fit_against():
    hardware = load_hardware("h100-sxm")
    _, _, setup = build_replica(load_preset("llama3-8b"), hardware)
    sizing = setup["kv_cache"]
    assert ACTIVATIONS == 329_843_200 and sizing["activation_bytes"] == ACTIVATIONS
    assert hardware.serving_memory_bytes == 76_551_605_452 - 536_870_912  # floor(0.9 x 81,117 MiB) less 512 MiB
    assert sizing["kv_budget_bytes"] + sizing["weight_bytes"] + sizing["activation_bytes"] \
        == hardware.serving_memory_bytes
    assert sizing["memory_reserve_bytes"] == 536_870_912 and setup["num_blocks"] == 28_431


def test_a_files_reserve_moves_the_blocks(tmp_path, capsys):
    """A copy of h100-sxm with a 1 GiB reserve: 512 MiB more off, 256 blocks of 2 MiB fewer:
    (76,551,605,452 - 1,073,741,824 - 16,060,522,496 - 329,843,200) // 2,097,152 = 28,175."""
    assert cli.main(["hardware", "--show", "h100-sxm"]) == 0
    data = json.loads(capsys.readouterr().out)
    data.update(name="h100-1gib-reserve", memory_reserve_bytes=2**30)
    path = tmp_path / "h100-1gib-reserve.json"
    path.write_text(json.dumps(data))
    kv = _kv_cache(capsys, "--hardware", str(path))
    assert kv["kv_budget_bytes"] == 76_551_605_452 - 2**30 - WEIGHTS - ACTIVATIONS
    assert kv["num_blocks"] == kv["kv_budget_bytes"] // BLOCK == 28_175
    assert kv["kv_budget_bytes"] + WEIGHTS + ACTIVATIONS == load_hardware(str(path)).serving_memory_bytes


def test_the_option_changes_the_fraction_not_the_reserve(capsys):
    """--gpu-memory-utilization 0.5: floor(81,117 MiB x 0.5) = 42,528,669,696 less the same reserve:
    (42,528,669,696 - 536,870,912 - 16,060,522,496 - 329,843,200) // 2,097,152 = 12,207."""
    kv = _kv_cache(capsys, "--gpu-memory-utilization", "0.5")
    assert kv["kv_budget_bytes"] == serving_memory(DEVICE, 0.5, 512 * 2**20) - WEIGHTS - ACTIVATIONS
    assert kv["num_blocks"] == 12_207


def test_no_room_names_the_reserve(capsys):
    """Llama 3 70B's 141 GB of bf16 weights on one H100: one sentence, exit status 2."""
    assert cli.main(["serve", "--model", "llama3-70b", "--rate", "1", "--requests", "3"]) == 2
    error = capsys.readouterr().err
    assert "against 90% of 79.22 GiB less the 512 MiB reserve" in error and "Traceback" not in error


@pytest.mark.parametrize("memory, utilization, reserve, plannable", [
    (80 * 2**30, 0.9, 512 * 2**20, 76_772_540_416),  # floor(77,309,411,328.0) - 536,870,912
    (1000, 0.3337, 7, 326),                          # floor(333.7) - 7: floored, not rounded
])
def test_serving_memory_floors_then_subtracts(memory, utilization, reserve, plannable):
    assert serving_memory(memory, utilization, reserve) == plannable


def test_the_text_names_the_reserve(capsys):
    assert cli.main(["serve", "--model", "llama3-8b", "--rate", "1", "--requests", "3"]) == 0
    assert "KV cache per replica: 28,431 blocks of 16 tokens" in (out := capsys.readouterr().out)
    assert "per GPU; 90% of 79.22 GiB less the 512 MiB reserve)" in out
