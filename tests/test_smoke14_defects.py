"""A new user's fourteenth round (session 20; validate/FINDINGS.md "A new user's fourteenth round").
Each test failed before its fix; the numbers are exact integers with their arithmetic or the
figure another command prints for the same case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_run import run_json, run_main


def test_plan_serve_names_the_latent_attention_form_simulate_needs(capsys):
    """`plan --serve` times latent attention absorbed (vLLM's form) and `simulate` naive (transformers'),
    but plan's footer said its rows were "`simulate` with the layout and `--attention flash`", which gives
    DeepSeek-V2-Lite's tp-2 row 18.18 ms a token against plan's 10.67 ms, and neither header nor JSON said
    which form ran. Both now name it; the footer's command reproduces the row exactly."""
    case = ["--model", "deepseek-v2-lite", "--hardware", "h100"]
    plan = run_json(["plan", *case, "--serve", "--gpus", "2", "--tp", "2"], capsys)
    assert plan["inputs"]["mla"] == "absorbed"
    row = plan["feasible"][0]
    layout = ["simulate", *case, "--tp", "2", "--prompt", "2048", "--gen", "128", "--batch", "32",
              "--attention", "flash"]
    absorbed = run_json([*layout, "--mla", "absorbed"], capsys)
    naive = run_json(layout, capsys)
    assert (absorbed["inputs"]["mla"], naive["inputs"]["mla"]) == ("absorbed", "naive")
    assert row["time_per_output_token"] == absorbed["generation"]["time_per_output_token"]
    assert naive["generation"]["time_per_output_token"] > 1.5 * row["time_per_output_token"]
    # (the cache at 2,048 + 127 tokens: 17,914,256,896 at 2,176 before session 23; 17,913,261,568
    # before session 26 counted the prefill's transients: now the prefill peaks, its dense layer's
    # FFN over one vLLM chunk of 8,192 tokens (the engine's budget on an H100, serving/budgets.py),
    # 3 x 2 B x 8,192 x 10,944 / 2 = 268,959,744 B, less the 127 tokens' cache (126,406,656), plus
    # the prompt's ids (524,288) less the step's (256) and logits (6,553,600))
    assert row["per_rank"]["total"] == \
        17_913_261_568 + 3 * 2 * 8_192 * 10_944 // 2 - 126_406_656 + 524_288 - 256 - 6_553_600
    # simulate with the layout sizes Hugging Face generate's prefill, the whole batch's 32 x 2,048 tokens
    # in one forward (3 x 2 B x 32 x 2,048 x 10,944 / 2 = 2,151,677,952 B of FFN tensors): the footer's
    # command reproduces the row's times, not its memory
    assert absorbed["per_rank"]["total"] == row["per_rank"]["total"] + 3 * 2 * (32 * 2_048 - 8_192) * 10_944 // 2
    code, out, _ = run_main(["plan", *case, "--serve", "--gpus", "2", "--tp", "2"], capsys)
    assert "flash attention, latent attention absorbed;" in out.splitlines()[0]
    assert "(batch / dp) and `--attention flash --mla absorbed` times them" in out
    code, out, _ = run_main(["simulate", *case, "--prompt", "512", "--gen", "4"], capsys)
    assert "attention eager, latent attention naive, dynamic KV cache" in out.splitlines()[1]
    # a model without latent attention says nothing of it
    sim = run_json(["simulate", "--model", "llama3.2-1b", "--hardware", "h100", "--prompt", "512", "--gen", "4"], capsys)
    assert sim["inputs"]["mla"] is None


def test_ssm_cache_dtype_is_refused_for_a_model_without_states(capsys):
    """`serve --mamba-ssm-cache-dtype float32` on Llama 3.2 1B (no Mamba-2 or Gated DeltaNet layer) was taken
    and changed nothing, while `--mla absorbed` on it is refused; `plan --serve --rate` with it set all 36
    configurations aside ("not feasible: 36 (--mamba-ssm-cache-dtype float32)") and exited 1, "nothing
    fits", for a typo-class input. Both are one error line, exit 2; a hybrid still takes it."""
    message = "error: --mamba-ssm-cache-dtype float32: model 'llama3.2-1b' has no Mamba-2 or Gated DeltaNet layer"
    for command in (["serve", "--model", "llama3.2-1b", "--hardware", "l4", "--rate", "2", "--requests", "5"],
                    ["plan", "--model", "llama3.2-1b", "--hardware", "l4", "--serve", "--rate", "2", "--slo-ttft", "1",
                     "--slo-tpot", "0.1", "--requests", "5"]):
        code, out, err = run_main([*command, "--mamba-ssm-cache-dtype", "float32"], capsys)
        assert (code, out) == (2, "")
        assert err.startswith(message) and err.count("\n") == 1
    # Nemotron 3 Nano: 23 Mamba-2 layers, vLLM's layout with the SSM state in fp32 (test_serving_vllm_states)
    setup = run_json(["serve", "--model", "nemotron-3-nano", "--hardware", "h100", "--rate", "2", "--requests", "5",
                   "--mamba-ssm-cache-dtype", "float32"], capsys)["setup"]
    assert setup["mamba_ssm_cache_dtype"] == "float32"


def test_no_room_for_a_kv_block_names_the_token_budget_when_activations_fill_the_gpu(capsys):
    """A step of the model's whole context (131,072 tokens) whose activations (31.3 GiB; the logits
    alone 131,072 x 128,256 x 2 B) fill an L4 that Llama 3.2 1B's 2.3 GiB of weights do not; the
    refusal advised only more GPUs or fewer weight bytes. It now names --max-batched-tokens first,
    and that budget serves. (This was `--scheduler vllm-v0`, whose budget is that context; vLLM's
    profile run computes logits for its 256 sampled rows only, profile_run.json, so it now serves
    there with 1.48 GiB of activations, the forward's own transients not modelled; sarathi sizes the
    logits of every position of its budget.)"""
    command = ["serve", "--model", "llama3.2-1b", "--hardware", "l4", "--rate", "2", "--requests", "5",
               "--scheduler", "sarathi", "--max-batched-tokens", "131072"]
    code, out, err = run_main(command, capsys)
    assert (code, out) == (2, "")
    assert "weights 2.3 GiB and activations 31.3 GiB per GPU" in err
    assert "; lower --max-batched-tokens (the activations are sized for a step of 131,072 tokens), spread it" in err
    setup = run_json([*command[:-1], "8192"], capsys)["setup"]
    assert setup["num_blocks"] == 34_490
    # where the weights are what does not fit, the advice is as before
    code, _, err = run_main(["serve", "--model", "llama3.2-1b", "--hardware", "l4", "--rate", "2", "--requests", "5",
                         "--gpu-memory-utilization", "0.05"], capsys)
    assert code == 2 and "--max-batched-tokens" not in err and "spread it over more GPUs (--tp, --pp)" in err


@pytest.mark.slow  # the whole `published` run (~15 s idle; 158 s of the fast tier at load 8-12, session 33)
def test_published_json_names_its_units(capsys, published_tables):
    """`published --json` was the one command's JSON without a `units` object: Korthikanti's
    full_published 1.42 (seconds an iteration), mfu_ours 37.6 (percent) and the summary's
    median_error 0.103 (a fraction, printed as 10.3%) said nothing of what they count. Every table
    now has its line in json_units.JSON_UNITS["published"]. The command prints the tables the test process computed once
    (published_tables, tests/conftest.py): the JSON and its units are what is checked here."""
    tables = run_json(["published"], capsys)
    units = tables.pop("units")
    named = {key for entry in units for key in entry.split(", ")}
    assert named == set(tables)
    assert tables["korthikanti_2022_table_5"][0]["full_published"] == 1.42  # Table 5's 22B, seconds
    assert "seconds an iteration" in units["korthikanti_2022_table_5"]
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    all_row = next(line for line in readme.splitlines() if line.startswith("| all |"))
    assert f"| {100 * tables['summary']['kernels']['median_error']:.1f}% |" in all_row  # README's "all" row
    assert "median_error: a fraction" in units["summary, summary_by_kind"]


FALCON_H1_SHAPED = dict(model_type="falcon_h1", hidden_size=3072, num_hidden_layers=44, num_attention_heads=12,
                        num_key_value_heads=2, head_dim=128, mamba_d_ssm=3072, mamba_n_heads=24, mamba_d_head=128,
                        mamba_d_state=256, mamba_n_groups=1, mamba_d_conv=4, mamba_expand=2,
                        max_position_embeddings=262144)  # test_hf_falcon_h1.SEVEN_B_SHAPED


def test_a_falcon_h1_pipeline_splits_whole_decoder_layers(tmp_path, capsys):
    """The tree holds each FalconH1DecoderLayer as three layers (mamba, attention, MLP), and the pipeline
    split them: a 44-layer config took `--pp 45`, its stage table said "layers 66" at pp 2, `--stage-layers
    22,22` was refused as "add up to 44, not the 132 layers", and pp 8 cut 132 into 17 x 4 + 16 x 4, inside
    decoder layers. Stages now hold whole decoder layers (ModelConfig.pipeline_unit), counted as
    num_hidden_layers counts them."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(FALCON_H1_SHAPED))
    train = ["simulate", "--config", str(path), "--hardware", "h100", "--train", "--seq-len", "2048"]
    code, out, err = run_main([*train, "--pp", "45"], capsys)
    assert code == 2 and err.startswith("error: layout: 45 pipeline stages for 44 layers:")
    even = run_json([*train, "--pp", "2"], capsys)["parallel"]["stages"]
    given = run_json([*train, "--pp", "2", "--stage-layers", "22,22"], capsys)["parallel"]["stages"]
    assert [s["layers"] for s in even] == [s["layers"] for s in given] == [22, 22]
    assert [s["total"] for s in even] == [s["total"] for s in given]
    eight = run_json([*train, "--pp", "8"], capsys)["parallel"]["stages"]
    assert [s["layers"] for s in eight] == [6, 6, 6, 6, 5, 5, 5, 5]
    # stages 1 and 4 hold decoder layers alone (no embedding, no head): weights in proportion 6 : 5
    assert 5 * eight[1]["weights"] == 6 * eight[4]["weights"]
    # serve's pipeline too: at most a stage a decoder layer
    code, _, err = run_main(["serve", "--config", str(path), "--hardware", "h100", "--rate", "2", "--requests", "3",
                         "--pp", "45"], capsys)
    assert code == 2 and err == "error: --pp must be between 1 and the model's 44 layers, got 45.\n"


def test_a_kv_dtype_on_an_encoder_says_it_changes_nothing(capsys):
    """`estimate --model bert-base-uncased --kv-dtype fp8` (and sweep's) was taken in silence, figures
    unchanged, while `--gen-tokens 4` on the same encoder warns that it is ignored. It now warns too;
    an encoder-decoder (T5: its decoder's cache) does not."""
    plain = run_json(["estimate", "--model", "bert-base-uncased"], capsys)
    code, out, err = run_main(["estimate", "--model", "bert-base-uncased", "--kv-dtype", "fp8", "--json"], capsys)
    assert code == 0 and json.loads(out)["memory"] == plain["memory"]  # no kv_cache_dtype note either
    assert err == ("warning: model 'bert-base-uncased' is an encoder: it keeps no KV cache, so the fp8 KV cache "
                   "asked for changes nothing.\n")
    code, _, err = run_main(["estimate", "--model", "t5-small", "--kv-dtype", "fp8"], capsys)
    assert code == 0 and "KV cache asked for" not in err


def test_simulate_takes_cuda_graphs_on_as_serve_and_plan_spell_it(capsys):
    """`serve` and `plan --serve` take `--cuda-graphs auto|on|off` (docs/commands.md: "unless `--cuda-graphs
    on` replays it ... as `simulate --cuda-graphs` times a layout"), but `simulate --cuda-graphs on` failed
    with click's "Got unexpected extra argument (on)". simulate now takes the same words; the flag alone
    is still on, and auto (Hugging Face generate's) and off are eager."""
    case = ["simulate", "--model", "llama3.2-1b", "--hardware", "h100", "--prompt", "512", "--gen", "8", "--tp", "1"]
    graphed = [run_json([*case, *words], capsys) for words in (["--cuda-graphs"], ["--cuda-graphs", "on"])]
    eager = [run_json([*case, *words], capsys) for words in ([], ["--cuda-graphs", "off"], ["--cuda-graphs", "auto"])]
    assert graphed[0] == graphed[1] and graphed[0]["inputs"]["cuda_graphs"] is True
    assert eager[0] == eager[1] == eager[2] and eager[0]["inputs"]["cuda_graphs"] is False
    assert graphed[0]["generation"]["time_per_output_token"] < eager[0]["generation"]["time_per_output_token"]


def test_serve_rates_json_names_the_deployment_and_its_units(capsys):
    """`serve --rates 1,2 --json` printed a bare list of rows: no model, hardware or scheduler (the text
    names them) and no `units`, the one serve JSON without them. It is now `serve --json`'s setup and
    units around the rows; each row is the `serve --rate R` run's figures."""
    case = ["serve", "--model", "llama3.2-1b", "--hardware", "l4", "--requests", "10"]
    sweep = run_json([*case, "--rates", "1,2"], capsys)
    one = run_json([*case, "--rate", "2"], capsys)
    assert {**sweep["setup"], "rate": 2.0} == one["setup"] and sweep["units"] == one["units"]  # rate: each row's
    assert (sweep["setup"]["model"], sweep["setup"]["hardware"], sweep["requests"]) == ("llama3.2-1b", "l4", 10)
    assert [r["rate"] for r in sweep["rates"]] == [1.0, 2.0]
    assert sweep["rates"][1]["ttft"] == one["ttft"] and sweep["rates"][1]["tpot"] == one["tpot"]


def test_an_moe_lora_target_refusal_speaks_of_its_own_experts(capsys):
    """Mixtral's `--lora-targets gate_proj` refusal ended "(target_parameters; Qwen3-MoE's down_proj too)",
    a clause about another family; it now speaks of the experts' down_proj, whichever MoE it is."""
    code, _, err = run_main(["finetune", "--model", "mixtral-8x7b", "--lora-targets", "gate_proj"], capsys)
    assert code == 2 and "Qwen3" not in err
    assert err.endswith("(target_parameters; the experts' down_proj too): not modelled.\n")
