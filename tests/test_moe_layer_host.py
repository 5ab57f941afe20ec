"""validate/moe_layer_host.py: the aten ops one real Megatron-Core MoE layer dispatches a forward and a
backward (session 22; validate/FINDINGS.md "why Megatron MoE training rows are too fast"). The counts
need Megatron-Core's source (MEGATRON_SRC, NVIDIA/Megatron-LM d98e8a64dd); without it only the
bad-input check runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from validate.moe_layer_host import main

ROOT = Path(__file__).resolve().parents[1]


def test_without_megatron_source_it_is_one_error_line_and_status_2(capsys, monkeypatch):
    monkeypatch.delenv("MEGATRON_SRC", raising=False)
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: set MEGATRON_SRC") and err.count("\n") == 1


def _count(experts: int) -> dict:
    result = subprocess.run([sys.executable, "validate/moe_layer_host.py", "--tokens", "64", "--hidden", "32",
                             "--ffn", "48", "--experts", str(experts), "--topk", "2"], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("MEGATRON_SRC"), reason="needs Megatron-Core's source (MEGATRON_SRC)")
def test_the_layer_dispatches_a_fixed_part_and_a_part_per_local_expert():
    # Megatron-LM d98e8a64dd MoELayer, all-to-all dispatcher, SequentialMLP, unfused permute, fp32 on
    # the CPU: forward 65 + 12 E aten ops (34 + 6 E not views), backward 42 + 20 E (24 + 13 E): each
    # local expert runs its fc1, activation and fc2 (and their gradients) as separate calls.
    four, eight = _count(4), _count(8)
    assert (four["forward"], four["backward"]) == ({"aten_ops": 113, "non_view_ops": 58},
                                                    {"aten_ops": 122, "non_view_ops": 76})
    assert (eight["forward"], eight["backward"]) == ({"aten_ops": 161, "non_view_ops": 82},
                                                      {"aten_ops": 202, "non_view_ops": 128})
