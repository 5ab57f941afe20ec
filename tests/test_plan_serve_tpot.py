"""`plan --serve`'s time per output token: the mean of the generation's gen - 1 decode steps, each
at its own context, the same float `simulate` with that layout reports (its "generation"), not the
one step at context prompt + gen that it ranked by before (issue 18, session 16)."""

from __future__ import annotations

import json

import pytest

from costmodel.config import Workload
from costmodel.hardware import load_hardware
from costmodel.layout import Layout
from costmodel.layout.plan import plan_serving
from costmodel.layout.timing import generation_decode_seconds
from costmodel.presets import load_preset
from costmodel.roofline import decode_rates, generation_rates
from tests.cli_run import run_main

SHAPE = ["--model", "llama2-7b", "--hardware", "h100-sxm", "--prompt", "512", "--gen", "512", "--attention", "flash",
         "--json"]


@pytest.mark.parametrize("time_model", ["kernels", "roofline"])
def test_plan_serve_ranks_by_the_mean_decode_step_simulate_reports(capsys, time_model):
    # Llama-2-7B, 8 sequences of 512 + 512 tokens on 2 H100s: each of the three layouts
    # (tp 2, dp 2, pp 2) has simulate's mean step, to the bit, and the step at context 1,023 as its last
    # (512 + 511 fed back: the last token is never fed back).
    code, out, err = run_main(["plan", "--serve", "--gpus", "2", "--batch", "8", "--time-model", time_model, *SHAPE],
                               capsys)
    assert code == 0, err
    planned = json.loads(out)["feasible"]
    assert sorted((e["layout"]["tp"], e["layout"]["pp"], e["layout"]["dp"]) for e in planned) == \
        [(1, 1, 2), (1, 2, 1), (2, 1, 1)]
    for entry in planned:
        lay = entry["layout"]  # simulate's --batch is a replica's
        layout = ["--tp", str(lay["tp"]), "--pp", str(lay["pp"]), "--dp", str(lay["dp"]), "--batch", str(8 // lay["dp"])]
        code, out, err = run_main(["simulate", *layout, "--time-model", time_model, *SHAPE], capsys)
        assert code == 0, err
        simulated = json.loads(out)
        generation = simulated["generation"]
        assert generation["decode_steps"] == 511
        assert entry["time_per_output_token"] == generation["time_per_output_token"] \
            == generation["decode_seconds"] / 511
        assert entry["tokens_per_second"] == generation["decode_tokens_per_second"]
        assert entry["last_step"] == {"context": 1023, "seconds": simulated["token"]["seconds_per_token"]}
        assert entry["tp_all_reduce_seconds"] == simulated["token"]["tp_all_reduce_seconds"]
        # the steps grow with the context: their mean is below the last
        assert entry["time_per_output_token"] < entry["last_step"]["seconds"]
    assert [e["time_per_output_token"] for e in planned] == sorted(e["time_per_output_token"] for e in planned)


def test_the_mean_is_generation_decode_seconds_over_the_steps():
    cfg, hardware = load_preset("llama2-70b"), load_hardware("a100-80gb")
    (entry,) = plan_serving(cfg, hardware, 8, 32, 2048, 256, "bf16", {"tp": 8, "pp": 1}, kv_cache="static")["feasible"]
    workload = Workload(seq_len=2048, gen_tokens=256, batch=32, precision="pure", attention="flash",
                        kv_cache="static", mla="absorbed")
    decode_s = generation_decode_seconds(cfg, workload, Layout(tp=8, framework="deepspeed"), hardware,
                                         time_model="kernels")
    assert entry["time_per_output_token"] == decode_s / 255
    assert entry["tokens_per_second"] == 32 * 255 / decode_s


def test_one_generated_token_has_no_step_to_average():
    # gen 1: the prefill gives the token; the plan keeps a step at context prompt + 0 (nothing fed back).
    cfg, hardware = load_preset("llama2-7b"), load_hardware("h100-sxm")
    (entry,) = plan_serving(cfg, hardware, 1, 4, 128, 1, "bf16")["feasible"]
    assert entry["time_per_output_token"] == entry["last_step"]["seconds"]
    assert entry["last_step"]["context"] == 128
    assert entry["tokens_per_second"] == 4 / entry["last_step"]["seconds"]


def test_decode_rates_define_the_mean_once():
    # 3 sequences, 5 tokens each: 4 decode steps in 2 s, 0.5 s a token, 3 x 4 / 2 = 6 tokens/s.
    assert decode_rates(3, 5, 2.0) == {"decode_steps": 4, "decode_seconds": 2.0, "time_per_output_token": 0.5,
                                       "decode_tokens_per_second": 6.0}
    assert decode_rates(3, 1, 0.0)["time_per_output_token"] is None
    # end to end: 3 x 5 tokens over a 1 s prefill and the 2 s of steps
    assert generation_rates(3, 5, 1.0, 2.0)["end_to_end_tokens_per_second"] == 5.0


def test_the_text_names_the_attention_kernel_it_timed(capsys):
    """plan --serve defaults to flash, simulate to sdpa: the header and the footnote name the
    kernel, so the simulate command the footnote points to times the same steps."""
    code, out, err = run_main(["plan", "--serve", "--gpus", "2", "--batch", "8", *SHAPE[:-3]], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].endswith("512 + 512 generated tokens, flash attention; time model kernels")
    assert "`simulate` with the layout, `--batch` each replica's share of the 8 sequences (batch / dp) and `--attention flash` times them" in lines[-1]
