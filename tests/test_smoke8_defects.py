"""The eighth new-user round's defects (validate/FINDINGS.md "Issue 18: the eighth new-user round"),
each typed as the user typed it: `--framework fsdp2` without `--zero` refused a `--zero 0` nobody
typed, and DeepSpeed's pipeline engine was timed under schedules it does not run."""
import json

import pytest

import cli
from costmodel.config import ConfigError
from costmodel.layout import Layout
from tests.cli_run import run_json

TRAIN = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--seq-len", "4096",
         "--batch", "1", "--gpus", "8"]


def _one_line(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_fsdp2_without_zero_is_fully_shard_default(capsys):
    """`--framework fsdp2` alone said "fsdp2 supports --zero 2, 3 ..., not 0" (Layout's zero
    defaulted to 0 whatever the framework); it is now fully_shard's default, ZeRO 3."""
    alone = run_json(["estimate", "--model", "llama3-8b", "--gpus", "8", "--framework", "fsdp2"], capsys)
    typed = run_json(["estimate", "--model", "llama3-8b", "--gpus", "8", "--framework", "fsdp2", "--zero", "3"], capsys)
    assert alone["parallel"]["layout"]["zero"] == 3
    assert alone["parallel"] == typed["parallel"]
    # the weights' fp32 shard: 8,030,261,248 parameters x 4 B / 8 ranks (FSDP2 pads each tensor's rows)
    assert abs(alone["parallel"]["per_rank"]["weights"] - 8_030_261_248 * 4 / 8) < 1e6
    assert Layout(framework="fsdp2").zero == 3 and Layout().zero == 0 and Layout(framework="megatron").zero == 0


def test_simulate_fsdp2_without_zero_runs(capsys):
    alone = run_json(TRAIN + ["--framework", "fsdp2"], capsys)
    typed = run_json(TRAIN + ["--framework", "fsdp2", "--zero", "3"], capsys)
    assert alone == typed


@pytest.mark.parametrize("schedule", ["interleaved", "zbv", "zb-h1", "gpipe"])
def test_deepspeed_pipeline_runs_1f1b_only(schedule, capsys):
    """`--pp 2 --schedule zbv` (the default framework, deepspeed) was timed as DeepSpeed's pipeline
    engine under a zero-bubble V schedule; its engine builds schedule.TrainSchedule (1F1B) only."""
    args = TRAIN + ["--pp", "2", "--microbatches", "4", "--schedule", schedule]
    assert cli.main(args) == 2
    assert _one_line(capsys) == (f"error: layout: deepspeed's pipeline engine runs the 1f1b schedule only, not "
                                 f"'{schedule}' (DeepSpeed's PipelineEngine builds schedule.TrainSchedule); add "
                                 "--framework megatron or fsdp2 for another.")
    assert cli.main(args + ["--framework", "megatron"]) == 0
    capsys.readouterr()


def test_the_api_refuses_it_too():
    import costmodel

    with pytest.raises(ConfigError, match="runs the 1f1b schedule only"):
        costmodel.estimate("llama3-8b", layout={"pp": 2, "microbatches": 4, "schedule": "interleaved",
                                                "virtual_stages": 2})


def test_plan_ranks_no_interleaved_deepspeed_layout(capsys):
    """plan listed DeepSpeed layouts under "interleaved x2" (Llama 2 70B, 64 H100s, pp 4: its
    third row, 8 x 4 x 2 deepspeed, 1.2 min, 41.0%); now 168 layouts, every deepspeed one 1F1B."""
    data = run_json(["plan", "--model", "llama2-70b", "--hardware", "h100-sxm", "--gpus", "64", "--seq-len", "4096",
                  "--global-batch", "1024", "--framework", "deepspeed", "--pp", "4"], capsys)
    schedules = {row["layout"]["schedule"] for row in data["feasible"] + data["infeasible"]}
    assert schedules == {"1f1b"}
    megatron = run_json(["plan", "--model", "llama2-70b", "--hardware", "h100-sxm", "--gpus", "64", "--seq-len", "4096",
                      "--global-batch", "1024", "--framework", "megatron", "--pp", "4"], capsys)
    assert "interleaved" in {row["layout"]["schedule"] for row in megatron["feasible"]}


T5 = ["--model", "t5-small", "--prompt", "512", "--gen", "10"]
ON_A_LAYOUT = ("error: layout: inference on a layout (--tp, --pp, --dp) is modelled for decoder-only models; "
               "'t5-small' is encoder-decoder: leave the layout out (one GPU).")


@pytest.mark.parametrize("layout", [["--tp", "2"], ["--dp", "1"]])
def test_an_encoder_decoder_on_a_layout_is_refused(layout, capsys):
    """simulate --model t5-small --tp 1 --dp 1 held 48.02 MiB of weights a rank (its decoder's
    layers: the encoder and the shared embedding were dropped; 60,506,624 parameters are 115.41
    MiB) and decoded at context 522, the source read as the decoder's prompt."""
    assert cli.main(["simulate", *T5, *layout]) == 2
    assert _one_line(capsys) == ON_A_LAYOUT


def test_plan_serve_refuses_an_encoder_decoder(capsys):
    """plan --serve --model t5-small --gpus 2 listed tp 2 at 61.40 MiB a GPU."""
    assert cli.main(["plan", "--serve", "--model", "t5-small", "--gpus", "2"]) == 2
    assert _one_line(capsys) == ON_A_LAYOUT


@pytest.mark.parametrize("split", [["--gpus", "2"], ["--tp", "2"]])
def test_estimate_serves_an_encoder_decoder_whole_on_each_gpu(split, capsys):
    """estimate --hardware h100-sxm --gpus 2 said 'tensor parallel: 61.40 MiB per GPU' for T5-small; now
    a whole copy on each: its one-GPU inference total, 121,013,248 B of weights (60,506,624 x 2 B) among
    166,503,424 B."""
    data = run_json(["estimate", "--model", "t5-small", "--seq-len", "512", "--hardware", "h100-sxm", *split], capsys)
    assert data["memory"]["weights"] == 60_506_624 * 2
    assert data["fit"]["inference"]["memory"] == data["memory"]["inference_total"] == 166_503_424
    assert data["fit"]["inference"]["split"] == "a whole copy on each"


def test_an_encoder_decoder_generation_checks_the_decoder_it_runs(capsys):
    """simulate --model t5-small --prompt 512 --gen 10 warned 'target length 522 is beyond the context'
    while it timed the decoder from its start token (contexts 2 to 10, decoder_prompt 1)."""
    assert cli.main(["simulate", *T5, "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert captured.err == ""
    assert data["inputs"]["decoder_prompt"] == 1 and data["decode"]["decode_steps"] == 9
    assert cli.main(["simulate", "--model", "t5-small", "--prompt", "512", "--gen", "600"]) == 0
    assert ("warning: target length 600 is beyond the context of model 't5-small' (512 tokens)."
            in capsys.readouterr().err)


MIXTRAL = ["simulate", "--model", "mixtral-8x7b", "--hardware", "h100-sxm", "--prompt", "2048", "--gen", "128"]


def test_expert_parallel_serving_holds_its_share_of_the_experts(capsys):
    """simulate --model mixtral-8x7b --ep 2 --dp 2 (an inference layout docs/commands.md lists) held
    every expert on each rank: 86.99 GiB, 'does NOT fit', and the note that each replica holds the
    whole model. Each rank holds E / ep of the routed experts, as a training rank does: (46,702,792,704
    - 45,097,156,608 / 2) x 2 B = 48,308,428,800 B (44.99 GiB), estimate's megatron weights at ep 2."""
    served = run_json(MIXTRAL + ["--ep", "2", "--dp", "2"], capsys)
    assert served["per_rank"]["weights"] == (46_702_792_704 - 45_097_156_608 // 2) * 2 == 48_308_428_800
    trained = run_json(["estimate", "--model", "mixtral-8x7b", "--ep", "2", "--dp", "2", "--framework", "megatron"],
                    capsys)
    assert trained["parallel"]["per_rank"]["weights"] == served["per_rank"]["weights"]
    assert run_json(MIXTRAL + ["--dp", "2"], capsys)["per_rank"]["weights"] == 46_702_792_704 * 2
    assert cli.main(MIXTRAL + ["--ep", "2", "--dp", "2"]) == 0
    text = capsys.readouterr().out
    assert "weights 44.99 GiB" in text and "holds the whole model" not in text


def test_quantized_experts_are_divided_too(capsys):
    """gpt-oss-20b's MXFP4 experts (the checkpoint's format) at ep 2: the non-expert bytes whole, the
    experts' stored bytes halved."""
    base = ["simulate", "--model", "gpt-oss-20b", "--hardware", "h100-sxm", "--prompt", "2048", "--gen", "128",
            "--dp", "2"]
    whole = run_json(base, capsys)["per_rank"]["weights"]
    split = run_json(base + ["--ep", "2"], capsys)["per_rank"]["weights"]
    assert 0.55 * whole < split < 0.7 * whole  # the experts are most of gpt-oss's bytes, not all


@pytest.mark.parametrize("args", [["simulate", "--model", "gpt-oss-20b", "--train", "--gpus", "8", "--seq-len", "4096"],
                                  ["estimate", "--model", "gpt-oss-20b", "--gpus", "8"],
                                  ["simulate", "--model", "gpt-oss-20b", "--dp", "2"]])
def test_a_framework_without_sdpa_runs_eager(args, capsys):
    """--gpus 8 on gpt-oss (DeepSpeed's default framework, which runs Hugging Face's class at its default
    kernel, sdpa) said "attention 'sdpa': gpt_oss's Hugging Face class has no scaled_dot_product_attention
    path; use --attention eager" though no --attention was typed; transformers falls back to eager for such a
    class. plan set 900 of gpt-oss-20b's 1,752 layouts on 8 H100s aside as unsupported (main at 7bee240)."""
    assert run_json(args, capsys)["inputs"]["attention"] == "eager"


def test_plan_sets_no_gpt_oss_layout_aside_for_sdpa(capsys):
    data = run_json(["plan", "--model", "gpt-oss-20b", "--gpus", "8", "--seq-len", "4096", "--global-batch", "64"],
                 capsys)
    assert [row for row in data["infeasible"] if row.get("reason") == "unsupported"] == []
    # 1,800 layouts: 1,584, and from session 26 (gpt-oss's expert biases under fsdp2 with EP) fsdp2's EP 2, 4
    # and 8 too (120 + 72 + 24 = 216); 579 fit at 80 GiB, 567 at what the H100 reports (h100-sxm's
    # device_memory_bytes, 81,117 MiB): 12 layouts need between that less the reserve and 80 GiB less it
    assert len(data["feasible"]) == 567 and len(data["infeasible"]) == 1233
    assert {row["layout"]["attention"] for row in data["feasible"] if row["layout"]["framework"] != "megatron"} \
        == {"eager"}


def test_the_api_simulates_what_the_command_does(capsys):
    """costmodel.simulate defaulted to the A100 80GB and to eager attention with any layout while
    `simulate` defaults to the H100 and to the layout's framework's kernel (sdpa under DeepSpeed):
    Llama 3 8B, dp 8, 4,096 tokens: 0.7157 s from the API, 0.5290 s from the command (0.5302 s since session 31's
    loss traffic, blocks/head.py fused_loss_bytes)."""
    import costmodel

    command = run_json(TRAIN + ["--seq-len", "4096"], capsys)
    api = costmodel.simulate("llama3-8b", train=True, seq_len=4096, batch=1, layout={"dp": 8}).to_dict()
    assert api["step"]["seconds"] == command["step"]["seconds"]
    assert api["inputs"]["hardware"] == "h100-sxm" and api["inputs"]["attention"] == "sdpa"
    assert round(command["step"]["seconds"], 4) == 0.5306
    one = run_json(["simulate", "--model", "llama3-8b"], capsys)
    assert costmodel.simulate("llama3-8b").to_dict()["prefill"] == one["prefill"]


def test_a_training_layout_names_the_code_it_timed(capsys):
    """simulate --train --gpus 8 timed sdpa (DeepSpeed's Hugging Face code) and said neither that nor
    the activation profile, in the text or the JSON; one GPU's report says both."""
    assert cli.main(TRAIN) == 0
    assert capsys.readouterr().out.splitlines()[0] == ("llama3-8b training on 8 x h100-sxm (bf16): seq_len 4096, "
                                                       "impl hf, attention sdpa, recompute none; sdpa attention: "
                                                       "the deepspeed layout's default code")  # and why (session 31)
    inputs = run_json(TRAIN + ["--framework", "megatron"], capsys)["inputs"]
    assert (inputs["impl"], inputs["attention"]) == ("megatron", "flash")


def test_expert_and_tensor_parallel_serving_gives_advice_it_can_take(capsys):
    """simulate --model mixtral-8x7b --tp 2 --ep 2 --dp 2 (inference) said to fold with --etp 1 --sp
    --framework megatron, options an inference layout refuses ("training layout options, read only
    with --train")."""
    assert cli.main(MIXTRAL + ["--tp", "2", "--ep", "2", "--dp", "2"]) == 2
    assert _one_line(capsys) == ("error: layout: expert parallelism with tensor parallelism is not modelled for "
                                 "inference (the experts' own tensor parallelism, expert_tensor_parallel_size = tp); "
                                 "give --ep with --tp 1, or --tp without --ep.")
    assert cli.main(MIXTRAL + ["--tp", "2", "--ep", "2", "--dp", "2", "--etp", "1", "--sp", "--framework",
                               "megatron"]) == 2
    assert "read only with --train" in _one_line(capsys)


def test_serve_plans_with_the_hardware_files_utilization(tmp_path, capsys):
    """A hardware file's serving_memory_utilization (0.8 here) set simulate's and plan's fits but not
    serve's KV cache, which took vLLM's 0.9 whatever the file said; now the file's, unless
    --gpu-memory-utilization is given (the presets all say 0.9, so their figures do not move)."""
    assert cli.main(["hardware", "--show", "h100-sxm"]) == 0
    data = json.loads(capsys.readouterr().out)
    data.update(name="h100-at-80", serving_memory_utilization=0.8)
    path = tmp_path / "h100-at-80.json"
    path.write_text(json.dumps(data))
    serve = ["serve", "--model", "llama3-8b", "--rate", "1", "--requests", "5", "--hardware"]
    kv = run_json(serve + [str(path)], capsys)["setup"]["kv_cache"]
    assert kv["gpu_memory_utilization"] == 0.8
    assert kv["kv_budget_bytes"] == (int(85_057_339_392 * 0.8) - 536_870_912  # the device's total, the file's reserve
                                     - kv["weight_bytes"] - kv["activation_bytes"])
    assert run_json(serve + [str(path), "--gpu-memory-utilization", "0.9"], capsys)["setup"]["kv_cache"] == \
        run_json(serve + ["h100-sxm"], capsys)["setup"]["kv_cache"]
    assert run_json(serve + ["h100-sxm"], capsys)["setup"]["num_blocks"] == 28_431  # test_serving_reserve.py


def test_plan_serve_rate_refuses_a_mamba_model_in_one_line(capsys, tmp_path):
    """The capacity search set every deployment aside with the same whole-model sentence (36 times
    for Nemotron 3 Super) and exited 0; the model's refusal is now one line, exit 2, as serve's.
    (Hybrids with attention are served since session 18, serving/state_slots.py: the refusal left is
    a stack of Mamba-2 layers alone, with no KV block to size its state slots by.)"""
    import json

    from tests.cli_run import run_main
    from tests.test_hf_hybrid import MAMBA2

    path = tmp_path / "config.json"
    path.write_text(json.dumps(MAMBA2))
    code, out, err = run_main(["plan", "--serve", "--config", str(path), "--rate", "1", "--slo-ttft", "1",
                               "--slo-tpot", "0.1"], capsys)
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 2 and out == "" and len(errors) == 1 and "has no attention layer" in errors[0]
