"""A new user's twenty-first round (session 25; validate/FINDINGS.md "A new user's twenty-first round").
Each test failed before its fix; the numbers are exact, or the figure another command prints for the
same case."""

from __future__ import annotations

import pytest

from tests.cli_run import one_error_line, run_json

# 1. plan --json's split of a step: its parts add up to step_time, as simulate's do

PLAN_FP8 = ["--model", "llama3-8b", "--hardware", "h100", "--seq-len", "4096", "--framework", "megatron",
            "--fp8", "delayed", "--global-batch", "64"]


def test_plan_split_adds_up_to_the_step_simulate_times(capsys):
    """`plan --fp8 delayed --json`'s split left out the overlap contention (21.06 ms of a 1.1999 s step:
    compute 1.1058 + communication 0.0670 + optimizer 0.0060 = 1.1788 s) and autocast's casts, so its
    parts fell short of step_time, and report's step figure drew bars shorter than the step."""
    # --overlap-grad-reduce: the hidden reduction whose contention the split must carry (Megatron-LM's
    # default reduces after the backward, hiding nothing)
    plan = run_json(["plan", *PLAN_FP8, "--overlap-grad-reduce", "--gpus", "16", "--top", "1"], capsys)["feasible"][0]
    lay = plan["layout"]
    assert (lay["tp"], lay["pp"], lay["dp"], lay["zero"], lay["microbatches"]) == (1, 1, 16, 1, 4)
    sim = run_json(["simulate", "--train", *PLAN_FP8, "--overlap-grad-reduce", "--dp", "16", "--zero", "1",
                    "--microbatches", "4"], capsys)
    step = sim["step"]
    assert plan["step_time"] == step["seconds"]
    split = plan["split"]
    assert split["overlap_contention"] == step["overlap_contention_seconds"] > 0.02
    assert split["autocast"] == step["autocast_seconds"]
    assert split["communication"] == sum(step["exposed_communication_seconds"].values())
    assert sum(split.values()) == pytest.approx(plan["step_time"], rel=1e-12)


def test_report_step_figure_stacks_every_part():
    from reports import layout_figures
    assert [name for name, _ in layout_figures.STEP_PARTS] == [
        "compute", "communication", "bubble", "optimizer", "gradient_accumulation", "autocast",
        "overlap_contention", "host", "fsdp_copies",  # host, fsdp_copies since session 32 (test_smoke31_defects)
        "dtensor_copies"]  # since session 33 (test_smoke32_defects): every part of layout/step_parts.py's split


# 2. plot generation (and report) on a model of Mamba-1, Gated DeltaNet or post-normed mixers

def _default_config(tmp_path, model_type: str) -> str:
    transformers = pytest.importorskip("transformers")
    path = tmp_path / f"{model_type}.json"
    transformers.AutoConfig.for_model(model_type).to_json_file(str(path))
    return str(path)


@pytest.mark.parametrize("model_type", ["jamba", "qwen3_next", "olmo_hybrid"])
def test_plot_generation_of_a_hybrid_is_drawn_not_a_traceback(model_type, tmp_path, capsys):
    """`plot generation --config jamba.json` (and `report`'s generation figure) raised a traceback:
    the tiny member of the family set ssm_state None beside Mamba-1 layers, chunk_size None beside
    Gated DeltaNet's, and kept OLMo Hybrid's attention without the mlp layer its post-norm needs."""
    from tests.cli_run import run_main
    out = tmp_path / "generation.png"
    code, _, err = run_main(["plot", "generation", "--config", _default_config(tmp_path, model_type),
                             "-o", str(out)], capsys)
    assert code == 0 and "Traceback" not in err and out.stat().st_size > 0, err


def test_the_tiny_member_keeps_every_mixers_sizes_at_its_scale(tmp_path):
    from costmodel.api import load_model
    from reports.measured import tiny
    jamba = tiny(load_model(_default_config(tmp_path, "jamba")))
    assert jamba.layer_pattern == ("mamba1", "mlp", "moe", "attention")
    # JambaConfig: d 4096, mamba_expand 2 (8192 inner), dt_rank ceil(4096 / 16) = 256; at d 64: 128 and 4
    assert (jamba.ssm_state, jamba.mamba1_inner, jamba.dt_rank, jamba.chunk_size) == (16, 128, 4, None)
    qwen = tiny(load_model(_default_config(tmp_path, "qwen3_next")))
    assert qwen.layer_pattern == ("deltanet", "moe", "attention")
    # Qwen3NextConfig: 16 key heads, 32 value heads of 128 beside attention heads of 256; at d_head 16: 8
    assert (qwen.deltanet_k_heads, qwen.deltanet_v_heads, qwen.deltanet_k_dim, qwen.deltanet_v_dim,
            qwen.chunk_size, qwen.ssm_state) == (2, 4, 8, 8, 16, None)
    olmo = tiny(load_model(_default_config(tmp_path, "olmo_hybrid")))
    assert olmo.layer_pattern == ("deltanet", "mlp", "attention", "mlp") and olmo.post_norm_mixers == ("attention",)


# 3. --tokens' help: it takes 15T, so its metavar is not FLOAT

@pytest.mark.parametrize("command", ["simulate", "plan"])
def test_tokens_help_names_a_token_count_not_a_float(command, capsys):
    """`simulate --help` showed `--tokens FLOAT ... (e.g. 2e12 or 2T)`; a float is refused 15T's T."""
    from tests.cli_run import run_main
    code, out, _ = run_main([command, "--help"], capsys)
    flat = " ".join(out.split())
    assert code == 0 and "--tokens TOKENS" in flat and "--tokens FLOAT" not in flat
    assert "k, M, B (G) or T: 15T" in flat
    data = run_json(["simulate", "--train", "--model", "llama3-8b", "--hardware", "h100", "--seq-len", "4096",
                     "--dp", "8", "--tokens", "15T"], capsys)
    assert data["cost"]["tokens"] == 15_000_000_000_000


# 4. simulate --train --json says which overlap conventions timed the step

INTERLEAVED = ["simulate", "--train", "--model", "llama3-8b", "--hardware", "h100", "--dp", "4", "--pp", "2",
               "--framework", "megatron", "--schedule", "interleaved", "--virtual-stages", "2", "--microbatches", "8"]


def test_training_json_names_the_overlap_it_was_timed_under(capsys):
    """`--no-align-grad-reduce` moved the step (0.89218 -> 0.88916 s, the dp exposure 28.5 -> 22.0 ms)
    and no key of either --json said why: the overlap options were recorded nowhere."""
    from costmodel import json_units
    aligned = run_json(INTERLEAVED, capsys)
    moved = run_json([*INTERLEAVED, "--no-align-grad-reduce", "--dp-overlap", "0.5"], capsys)
    # pp 1.0: Megatron's default overlap_p2p_comm on this interleaved layout, dp 0.0 its default
    # --overlap-grad-reduce off (layout/overlap.py framework_overlap); ub "" no userbuffers config (wt35_ubsms's
    # --tp-comm-overlap not given)
    assert aligned["inputs"]["overlap"] == {"tp": 0.0, "dp": 0.0, "prefetch": True, "slowdown": 0.189, "pp": 1.0,
                                            "params": 0.0, "ep": 0.0, "align_grad": True, "async_tp": False,
                                            "ub": ""}
    assert (moved["inputs"]["overlap"]["align_grad"], moved["inputs"]["overlap"]["dp"]) == (False, 0.5)
    assert moved["step"]["seconds"] != aligned["step"]["seconds"]
    assert "inputs.overlap" in aligned["units"] == json_units.JSON_UNITS["simulate"]
