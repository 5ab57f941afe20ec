"""validate/moe_layer_host.py: the aten ops one real Megatron-Core MoE layer dispatches a forward and a
backward (session 22; validate/FINDINGS.md "why Megatron MoE training rows are too fast"). The counts
need Megatron-Core's source (MEGATRON_SRC, NVIDIA/Megatron-LM d98e8a64dd); the counts (forward 65 + 12 E
aten ops, backward 42 + 20 E) are in FINDINGS; CI has no Megatron-Core, so only the bad-input
check runs here."""

from __future__ import annotations

from validate.moe_layer_host import main


def test_without_megatron_source_it_is_one_error_line_and_status_2(capsys, monkeypatch):
    monkeypatch.delenv("MEGATRON_SRC", raising=False)
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: set MEGATRON_SRC") and err.count("\n") == 1
