"""A Megatron-Core MoE layer's host sync windows (costmodel/layout/host_syncs.py; the kernel model's default,
`published --no-host-syncs` leaves them out).

Counts are kernel_facts.json megatron_host_calls (call sites read in NVIDIA/Megatron-LM d98e8a64dd);
the per-call time is TransformerEngine issue #2053's torch.nn.Linear forward CPU time."""

from __future__ import annotations

import dataclasses

import pytest

from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.layout.host_syncs import block_calls, exposed_seconds, host_facts, stage_calls, stage_host_seconds, syncs
from costmodel.layout.timing import step_time
from costmodel.presets import load_preset
from reports.published_runs import other_runs_data, train_setup, train_tokens

QWEN_B200 = "megatron-bridge-moe 26.02 qwen3-30b-a3b mxfp8 8xb200"


def _row(run_id):
    data = other_runs_data()
    run = next(r for r in data["runs"] if r["id"] == run_id)
    return run, data["sources"][run_id.split()[0]]


def test_the_counted_calls_a_block():
    """Forward call sites and the Python autograd Functions among them, per block."""
    facts = host_facts()
    assert {k: len(v) for k, v in facts["forward"].items()} == {"attention": 9, "dense_mlp": 4, "moe": 26, "mamba": 7}
    assert {k: len(v) for k, v in facts["backward"].items()} == {"attention": 7, "dense_mlp": 3, "moe": 16, "mamba": 4}
    assert facts["graph_scopes"]["moe_router"] == {"moe": {"forward": 7, "backward": 5}}
    assert facts["graph_scopes"]["moe_preprocess"] == {"moe": {"forward": 7, "backward": 1}}
    assert facts["graph_scopes"]["attn"] == {"attention": {"forward": 9, "backward": 7}}


def test_calls_a_layer_for_stated_recipes():
    """Qwen3 (QK norm, 16 local experts at EP 8): eager 9 + 26 forward; with TE graphs of moe_router and
    moe_preprocess each scope's 7 forward calls are one replay, 26 - 6 - 6 = 14, and the router's 5
    backward Functions one, 16 - 4 = 12; with attn the attention is one replay each way. GPT-OSS (no
    QK norm, biased experts): 7 + 26 + 2 + 2 x the local experts."""
    assert block_calls("attention", 16, True, False) == (9, 7)
    assert block_calls("moe", 16, True, False) == (26, 16)
    assert block_calls("moe", 16, True, False, ("moe_router", "moe_preprocess")) == (14, 12)
    assert block_calls("attention", 16, True, False, ("attn",)) == (1, 1)
    assert block_calls("attention", 16, False, False, ("attn",)) == (1, 1)
    assert block_calls("attention", 2, False, True) == (7, 5)
    assert block_calls("moe", 2, False, True) == (26 + 2 + 4, 16)
    assert block_calls("moe", 16, False, True) == (26 + 2 + 32, 16)
    assert block_calls("mamba", 0, False, False, ("mamba",)) == (1, 1)


@pytest.mark.parametrize("run_id, forward, backward", [
    (QWEN_B200, 48 * (9 + 14), 48 * (7 + 12)),  # graphs of moe_router + moe_preprocess (97ad8cc6f, v0.3.0)
    ("megatron-bridge-moe 26.02.01 qwen3-30b-a3b mxfp8 8xb200", 48 * (1 + 14), 48 * (1 + 12)),  # and attn
    ("megatron-bridge-moe 26.04 qwen3-30b-a3b mxfp8 8xb200", 48 * 35, 48 * 23),  # no scope stated: eager
    ("megatron-bridge-moe 26.04.01 gpt-oss-120b bf16 64xgb200", 36 * (7 + 32), 36 * (5 + 16)),  # EP 64: 2 local experts
    ("megatron-bridge-moe 26.04.01 gpt-oss-120b bf16 64xb200", 36 * (7 + 60), 36 * (5 + 16)),  # EP 8: 16 local experts
    # Nemotron 3 Nano: 23 Mamba, 23 MoE, 6 attention layers (no QK norm); its recipe's router unfused
    # (layout/router_fusion.py: a sigmoid router with the seq aux loss, 27 forward ops for 3 fused calls, the 2
    # fused Functions' Python backward gone)
    ("megatron-bridge-moe 26.06 nemotron-3-nano fp8 16xh100", 23 * 7 + 23 * (26 + 27 - 3) + 6 * 7,
     23 * 4 + 23 * (16 - 2) + 6 * 5),
])
def test_stage_calls_of_published_rows(run_id, forward, backward):
    run, source = _row(run_id)
    estimate, _, _ = train_setup(run, source)
    assert stage_calls(estimate, estimate.stages[0], tuple(run.get("cuda_graph_scope", ()))) == (forward, backward)


def test_a_window_by_hand():
    """1,104 calls at 13.48 us = 14.88192 ms (the 26.02 row's forward; its backward's 912 calls 12.29376
    ms); a micro-batch of 30 ms on the GPU: the forward's windows 10 ms of GPU -> 4.88192 ms exposed;
    the backward's 20 ms hides its 12.29376 ms."""
    host, back = 1104 * 13.48e-6, 912 * 13.48e-6
    assert exposed_seconds(host, back, 30e-3) == pytest.approx(4.88192e-3, abs=1e-12)
    assert exposed_seconds(host, back, 60e-3) == 0.0
    assert exposed_seconds(0.05, 0.05, 30e-3) == pytest.approx(0.04 + 0.03, abs=1e-12)


def test_the_step_adds_each_micro_batch_window():
    """The 26.02 Qwen3 30B B200 row (PP 1, 64 micro-batches) on a host 22x slower than the Xeon's
    13.48 us: the step grows by 64 x the window's excess, reported as host_sync_seconds."""
    run, source = _row(QWEN_B200)
    estimate, hardware, options = train_setup(run, source)
    assert hardware.host_module_call_s == 13.48e-6 and estimate.layout.microbatches == 64
    slow = dataclasses.replace(hardware, host_module_call_s=300e-6)
    plain = step_time(estimate, slow, time_model="kernels", host_syncs=None, **options)
    timed = step_time(estimate, slow, time_model="kernels", host_syncs=("moe_router", "moe_preprocess"), **options)
    times = plain.stage(estimate.stages[0])
    gpu = sum(times[k] for k in ("compute", "tp", "ep", "cp", "amax"))
    expected = 64 * exposed_seconds(1104 * 300e-6, 912 * 300e-6, gpu)
    step = timed.step()
    assert expected > 0 and step["host_sync_seconds"] == pytest.approx(expected, rel=1e-12)
    assert step["seconds"] - plain.step()["seconds"] == pytest.approx(expected, rel=1e-9)
    assert "host_sync_seconds" not in plain.step()


def test_the_sourced_time_moves_no_row_it_was_checked_on():
    """At #2053's figures the host's forward is below the GPU's on the 2.83x row: unchanged; a
    drop-and-pad row (25.09) syncs nowhere; a dense row has no MoE layer to sync."""
    for run_id in (QWEN_B200, "megatron-bridge-moe 25.09 qwen3-30b-a3b fp8 8xb200"):
        run, source = _row(run_id)
        assert train_tokens(run, source, "kernels") == train_tokens(run, source, "kernels", host_syncs=False)
    run, source = _row(QWEN_B200)
    estimate, _, _ = train_setup(run, source)
    assert syncs(estimate.cfg, estimate.layout) and not syncs(estimate.cfg, estimate.layout, ("full_iteration",))
    assert not syncs(estimate.cfg, dataclasses.replace(estimate.layout, capacity_factor=1.0, pad_to_capacity=True))
    assert syncs(estimate.cfg, dataclasses.replace(estimate.layout, capacity_factor=1.0))  # dropping, unpadded: synced
    assert not syncs(load_preset("llama3-8b"), estimate.layout)


def test_the_hardware_files_state_the_sourced_host_times():
    assert [load_hardware(n).host_module_call_s for n in ("h100-sxm", "b200", "gb200", "gb300")] == \
        [13.48e-6, 13.48e-6, 37.08e-6, 37.08e-6]
    assert load_hardware("a100-80gb").host_module_call_s is None


def test_bad_input_is_one_sentence():
    run, source = _row(QWEN_B200)
    estimate, hardware, _ = train_setup(run, source)
    with pytest.raises(ConfigError, match="states no host_module_call_s"):
        stage_host_seconds(estimate, dataclasses.replace(hardware, host_module_call_s=None), estimate.stages[0], 1.0)
    with pytest.raises(ConfigError, match="unknown CUDA graph scope 'attention'"):
        stage_host_seconds(estimate, hardware, estimate.stages[0], 1.0, ("attention",))


def test_the_window_script(capsys):
    from validate.moe_host_windows import main

    assert main(["--row", QWEN_B200]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith(f"| {QWEN_B200} | moe_router+moe_preprocess | 1,104 / 912 | 13.48 | 14.88 |")
    assert main(["--row", "no such row"]) == 2
    assert capsys.readouterr().err.startswith("error: 'no such row' is not a Megatron MoE training row")


def test_the_cli_flag_is_documented():
    from click.testing import CliRunner

    from cli.published import published

    result = CliRunner().invoke(published, ["--help"])
    assert result.exit_code == 0 and "--host-syncs" in result.output


def test_the_sync_is_the_kernel_models_default_for_a_megatron_moe_step():
    """The 26.02 Qwen3 30B B200 row with no scope stated is eager: 48 x (9 + 26) = 1,680 forward and
    48 x (7 + 16) = 1,104 backward calls, priced by default on a host 22x slower than the Xeon's
    (64 micro-batches x the window's excess); a whole-iteration graph (cuda_graphs) and host_syncs=None
    price nothing; under FSDP2 (not Megatron-Core's code) nothing syncs as counted."""
    from costmodel.layout.host_syncs import applies
    from costmodel.layout.rank import ParallelEstimate

    run, source = _row(QWEN_B200)
    estimate, hardware, options = train_setup(run, source)
    slow = dataclasses.replace(hardware, host_module_call_s=300e-6)
    assert stage_calls(estimate, estimate.stages[0]) == (1680, 1104)
    plain = step_time(estimate, slow, time_model="kernels", host_syncs=None, **options)
    times = plain.stage(estimate.stages[0])
    gpu = sum(times[k] for k in ("compute", "tp", "ep", "cp", "amax"))
    default = step_time(estimate, slow, time_model="kernels", **options).step()
    assert default["host_sync_seconds"] == pytest.approx(64 * exposed_seconds(1680 * 300e-6, 1104 * 300e-6, gpu),
                                                         rel=1e-12)
    graphed = step_time(estimate, slow, time_model="kernels", cuda_graphs=True, **options).step()
    assert "host_sync_seconds" not in graphed and "host_sync_seconds" not in plain.step()
    assert applies(estimate) and not applies(ParallelEstimate(
        estimate.cfg, estimate.workload, dataclasses.replace(estimate.layout, framework="fsdp2", zero=3)))


def test_a_hardware_without_a_module_calls_time_says_so():
    """MI355X (Primus's rows) states no host_module_call_s: the step is the one without the term, and
    says why."""
    run, source = _row(QWEN_B200)
    estimate, hardware, options = train_setup(run, source)
    bare = dataclasses.replace(hardware, host_module_call_s=None)
    step = step_time(estimate, bare, time_model="kernels", **options).step()
    assert step["host_syncs_note"].endswith("states no host_module_call_s (a module call's host time).")
    assert step["seconds"] == step_time(estimate, bare, time_model="kernels", host_syncs=None, **options).step()["seconds"]


def test_published_prices_the_syncs_unless_the_row_drops_and_pads():
    """The 25.09 Qwen3 235B FP8 GB200 row pads to capacity (run_script.py, a28844195): 5,758.3 tokens/s a
    GPU by the kernel model (5,762.8 before session 31's loss traffic); were it dropless its host (37.08 us a
    call on Grace) would pass its GPU's forward and the row would read 5,698.2."""
    run, source = _row("megatron-bridge-moe 25.09 qwen3-235b-a22b fp8 64xgb200")
    assert run.get("moe_token_drop", source.get("moe_token_drop")) is True
    assert round(train_tokens(run, source, "kernels"), 1) == 5685.9  # 5,752.0 before session 34's per-expert FP8 casts, 5,662.3 before session 43's one QKV GEMM
    assert round(train_tokens({**run, "moe_token_drop": False}, source, "kernels"), 1) == 5648.7  # 5,633.2 before session 43's one QKV GEMM; 5,692.0 before


def test_simulate_takes_the_runs_cuda_graph_scopes():
    """`simulate --train` of Qwen3 30B-A3B on 8 GB200 (EP 8, 1 x 256 tokens, --framework megatron): the
    host binds both windows, so graphing moe_router and moe_preprocess saves 48 x (26 - 14) forward and
    48 x (16 - 12) backward calls, 768 x Grace's 37.08 us; full_iteration syncs nowhere (the step without
    the term). Another framework or no --train: one error line, exit 2."""
    import json

    from click.testing import CliRunner

    import cli

    base = ["simulate", "--model", "qwen3-30b-a3b", "--train", "--hardware", "gb200", "--dp", "8", "--ep", "8",
            "--seq-len", "256", "--batch", "1", "--framework", "megatron", "--json"]

    def step(*scopes):
        args = base + [part for scope in scopes for part in ("--cuda-graph-scope", scope)]
        result = CliRunner().invoke(cli.cli, args)
        assert result.exit_code == 0, result.output
        return json.loads(result.output[result.output.index("{"):])["step"]

    eager, routed, whole = step(), step("moe_router", "moe_preprocess"), step("full_iteration")
    assert eager["host_sync_seconds"] - routed["host_sync_seconds"] == pytest.approx(768 * 37.08e-6, rel=1e-9)
    assert "host_sync_seconds" not in whole
    assert eager["seconds"] - whole["seconds"] == pytest.approx(eager["host_sync_seconds"], rel=1e-9)
    fsdp = CliRunner().invoke(cli.cli, base[:-2] + ["fsdp2", "--zero", "3", "--cuda-graph-scope", "attn"])
    assert fsdp.exit_code == 2 and "needs --framework megatron, not fsdp2" in fsdp.output
    inference = CliRunner().invoke(cli.cli, ["simulate", "--model", "qwen3-30b-a3b", "--cuda-graph-scope", "attn"])
    assert inference.exit_code == 2 and "--cuda-graph-scope: training options" in inference.output
