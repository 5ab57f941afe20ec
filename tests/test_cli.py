"""The command line: the --json contract, help on every command, one-line errors with status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import cli
from costmodel import symbols as S
from costmodel.presets import PRESET_DIR, load_preset, preset_names
from costmodel.tree import CostModel
from tests.published import PUBLISHED

ROOT = Path(__file__).resolve().parent.parent


def run_main(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_contract(capsys):
    code, out, _ = run_main(
        ["estimate", "--model", "llama2-7b", "--seq-len", "4096", "--batch", "8", "--dtype", "bf16", "--json"],
        capsys,
    )
    assert code == 0
    data = json.loads(out)
    assert data["params"]["total"] == 6_738_415_616
    # 2*b*n*(L*(4d^2 + 3 d d_ff) + d V) + L*4*b*n^2*d at b=8, n=4096.
    b, n, L, d, d_ff, V = 8, 4096, 32, 4096, 11008, 32000
    assert data["flops"]["forward"] == 2 * b * n * (L * (4 * d * d + 3 * d * d_ff) + d * V) + L * 4 * b * n * n * d
    assert data["flops"]["training"] == 3 * data["flops"]["forward"]
    assert data["memory"]["weights"] == 2 * 6_738_415_616
    assert data["memory"]["kv_cache"] == L * 2 * b * n * d * 2
    assert isinstance(data["memory"]["activations"], int)
    assert data["regime"]["crossover_seq_len"] == 24704.0
    assert data["inputs"] == {
        "model": "llama2-7b", "family": "llama", "architecture": "decoder", "seq_len": 4096,
        "tgt_len": None, "batch": 8, "dtype": "bf16", "impl": "hf", "attention": "eager",
        "recompute": "none", "gen_tokens": 0, "optimizer": "adamw", "precision": "mixed", "mtp": 0,
    }


def test_defaults_follow_the_model_context(capsys):
    code, out, _ = run_main(["estimate", "--model", "gpt2", "--json"], capsys)
    data = json.loads(out)
    assert (data["inputs"]["seq_len"], data["inputs"]["batch"], data["inputs"]["dtype"]) == (1024, 1, "bf16")
    code, out, _ = run_main(["estimate", "--model", "llama2-7b", "--dtype", "float32", "--json"], capsys)
    data = json.loads(out)
    assert data["inputs"]["seq_len"] == 2048 and data["inputs"]["dtype"] == "fp32"
    assert data["memory"]["weights"] == 4 * 6_738_415_616


def test_config_file_input(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text((PRESET_DIR / "mistral-7b.json").read_text())
    code, out, _ = run_main(["estimate", "--config", str(config), "--seq-len", "2048", "--json"], capsys)
    assert code == 0
    assert json.loads(out)["params"]["total"] == 7_241_732_096


def test_t5_tgt_len(capsys):
    code, out, _ = run_main(["estimate", "--model", "t5-small", "--seq-len", "64", "--tgt-len", "16", "--json"], capsys)
    data = json.loads(out)
    assert (data["inputs"]["seq_len"], data["inputs"]["tgt_len"]) == (64, 16)


def test_human_output_names_every_section(capsys):
    code, out, _ = run_main(["estimate", "--model", "llama2-7b"], capsys)
    assert code == 0
    for heading in ("Parameters", "FLOPs", "Memory", "Regime", "Per block", "KV cache", "crossover n*"):
        assert heading in out
    assert "6,738,415,616" in out and "= 24,704 tokens" in out  # exact: an integer


@pytest.mark.parametrize(
    "args, needle",
    [
        (["estimate", "--model", "llama2-7x"], "llama2-7b"),
        (["estimate", "--model", "gpt2", "--dtype", "fp8"], "fp8"),
        # session 40: the length type (costmodel/sizes.py) refuses these, naming the option, before Workload's check
        (["estimate", "--model", "gpt2", "--seq-len", "0"], "'--seq-len' / '-n': '0' is not a length of at least 1"),
        (["estimate", "--model", "gpt2", "--seq-len", "-5"], "'--seq-len' / '-n': '-5' is not a length:"),
        (["estimate", "--model", "gpt2", "--batch", "abc"], "--batch"),
        (["estimate", "--model", "gpt2", "--seq-len", "4096"], "learned positions"),
        (["estimate", "--model", "gpt2", "--impl", "vllm"], "impl"),
        (["estimate", "--model", "gpt2", "--attention", "ring"], "attention"),
        (["estimate", "--model", "gpt2", "--tgt-len", "5"], "encoder-decoder"),
        (["estimate"], "--model"),
        (["estimate", "--model", "gpt2", "--config", "x.json"], "exactly one"),
        (["estimate", "--config", "/nonexistent/config.json"], "no such file"),
        (["estimate", "--model", "mixtral-8x7b", "--impl", "reference"], "does not build n_experts"),
        (["validate", "--model", "mpt-7b", "--target", "reference", "--seq-len", "8"],
         "does not build norm_bias"),
        (["plan", "--model", "bert-base-uncased", "--serve", "--gpus", "2"], "has no decoder"),
        (["simulate", "--model", "bert-base-uncased", "--tp", "2"], "has no decoder"),
        (["formulas", "--model", "gpt2", "--block", "nothing-like-this"], "no block"),
        (["formulas", "--model", "gpt2", "--quantity", "weight"], "quantity"),
        (["no-such-command"], "No such command"),
    ],
)
def test_bad_input_is_one_line_and_status_2(args, needle, capsys):
    code, out, err = run_main(args, capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert needle in lines[0]


def test_reference_refuses_an_activation_its_table_lacks(tmp_path, capsys):
    """xIELU (Apertus) is not in validate/reference_blocks.py's ACTIVATIONS: refused in one line."""
    from costmodel.presets import load_preset

    path = tmp_path / "config.json"
    path.write_text(json.dumps(load_preset("gpt2").replace(activation="xielu", name="x").to_dict()))
    for command in (["validate", "--target", "reference"], ["estimate", "--impl", "reference"]):
        code, out, err = run_main([*command, "--config", str(path), "--seq-len", "8"], capsys)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and err.startswith("error: ") and "activation xielu" in err


@pytest.mark.parametrize(
    "content, needle",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"model_type": "reformer"}', "unsupported model_type 'reformer'"),
        ('{"model_type": "llama", "hidden_size": 64}', "missing field"),
        ('{"model_type": "llama", "vocab_size": 99, "hidden_size": 50, "intermediate_size": 37, '
         '"num_hidden_layers": 2, "num_attention_heads": 6}', "hidden_size (50) is not divisible by num_attention_heads (6)"),
        ('{"model_type": "llama", "vocab_size": 99, "hidden_size": 48, "intermediate_size": 37, '
         '"num_hidden_layers": 2, "num_attention_heads": 6, "num_key_value_heads": 4}', "num_attention_heads (6) is not divisible by num_key_value_heads (4)"),
        ('{"model_type": "gpt2", "n_embd": -768}', "n_embd"),
        ('{"model_type": "gpt2", "n_layer": 2.5}', "n_layer"),
        ('{"model_type": "bert", "hidden_size": "768"}', "hidden_size"),
    ],
)
def test_bad_config_files(tmp_path, capsys, content, needle):
    path = tmp_path / "config.json"
    path.write_text(content)
    code, out, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and needle in err


def test_every_command_has_help():
    for name, command in cli.cli.commands.items():
        assert command.help and command.help.strip(), name
        result = CliRunner().invoke(cli.cli, [name, "--help"])
        assert result.exit_code == 0 and "Usage" in result.output


def test_model_and_config_help_name_the_paths_they_read():
    """--model takes a path to a config file or folder, --config a folder holding config.json
    (docs/commands.md); the help says so."""
    import click

    from cli.options import model_options

    @model_options
    def command(**_):
        pass

    options = {p.name: " ".join(p.help.split()) for p in click.command()(command).params}
    assert "path to a config file or a model's folder" in options["model"]
    assert "folder holding one" in options["config"] and "config.json" in options["config"]


def test_formulas_latex_prints_the_expressions_numbers_come_from(capsys):
    code, out, _ = run_main(["formulas", "--model", "llama2-7b", "--block", "attention", "--latex"], capsys)
    assert code == 0
    model = CostModel(load_preset("llama2-7b"))
    scores = [leaf for leaf in model.leaves if leaf.path == "decoder.layer.self_attention.scores"][0]
    assert f"flops_matmul = {S.latex(scores.cost.flops_matmul)}" in out
    assert S.latex(scores.cost.flops_matmul) == "2 b d_{h} h n^{2}"
    assert "decoder.layer.ffn.mlp" not in out  # only attention blocks were asked for


def test_models_lists_every_preset(capsys):
    code, out, _ = run_main(["models"], capsys)
    assert code == 0
    lines = out.strip().splitlines()
    # 14, issue 14's 16 flagships, Sarathi-Serve's Yi-34B-200K, gpt-oss-20b and gpt-oss-120b, the 13
    # users asked for, MPT-7B (llm-foundry's runs), Llama 4 Scout and Maverick, Mistral 7B v0.2 and
    # v0.3, Qwen2.5's 7B, 32B and 72B instruct checkpoints
    # then Qwen3's 14B, 4B and 1.7B and Qwen2.5's 14B and 3B base checkpoints
    # then Phi-3.5-mini (LongRoPE, 128K) and DeepSeek-R1-Distill-Qwen-1.5B
    # then Gemma 3 4B's language model
    # then Qwen3-235B-A22B-Instruct-2507 (a 262,144-token context)
    # then Kimi K2 (DeepSeek-V3's architecture at 1.03T)
    # then Qwen2.5-0.5B
    # then Nemotron 3 Nano (hybrid Mamba-2 / Transformer, nemotron_h)
    # then the models published runs and users name (issue 18): LLaMA 1 7B-65B, OPT 6.7B-175B,
    # BLOOM 176B, Falcon 40B and 180B, MPT-30B, GPT-3 175B; Code Llama 7B and 34B,
    # TinyLlama, SmolLM2-1.7B, Qwen2.5-1.5B-Instruct, Gemma 2 2B, Phi-3-medium, Yi-34B, DeepSeek LLM 67B,
    # Mistral Small 3, DeepSeek-V2, Qwen2.5-1.5B, Mistral Large 2, Qwen2.5-Coder-32B; GPT-3's five
    # consistent smaller sizes
    # then Nemotron 3 Super and Ultra (nemotron_h's latent experts)
    # then GLM-5 (glm_moe_dsa)
    # then Gemma 3 12B (google/gemma-3-12b-pt, session 28)
    assert len(lines) == 2 + 106
    assert any(line.startswith("llama2-70b") and "68.98 B" in line for line in lines)


@pytest.mark.parametrize("spelling, preset", [
    ("LLAMA2-7B", "llama2-7b"),
    ("Gpt2-Medium", "gpt2-medium"),
    ("meta-llama/Llama-2-7b-hf", "llama2-7b"),
    ("META-LLAMA/llama-2-7B-HF", "llama2-7b"),
    ("meta-llama/Llama-2-13b-hf", "llama2-13b"),
    ("meta-llama/Llama-2-70b-hf", "llama2-70b"),
    ("mistralai/Mistral-7B-v0.1", "mistral-7b"),
    ("openai-community/gpt2", "gpt2"),
    ("openai-community/gpt2-xl", "gpt2-xl"),
    ("google-t5/t5-small", "t5-small"),
    ("google-t5/t5-base", "t5-base"),
    ("google-bert/bert-base-uncased", "bert-base-uncased"),
])
def test_names_match_in_any_case_and_hub_ids_are_aliases(spelling, preset, capsys):
    code, out, err = run_main(["estimate", "--model", spelling, "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["inputs"]["model"] == preset  # reported under the preset's own name
    assert data["params"]["total"] == PUBLISHED[preset]


def test_report_commands_take_aliases_too():
    from reports.series import load_model, model_names

    assert [load_model(name).name for name in model_names("OpenAI-Community/GPT2,LLAMA2-70B")] == \
        ["gpt2", "llama2-70b"]


#: Presets of models whose weights were never on the Hugging Face Hub (OPT-175B: metaseq, on
#: request; GPT-3: not released), written as the config.json of the class that builds them.
NOT_ON_THE_HUB = {"opt-175b", "gpt3-125m", "gpt3-350m", "gpt3-760m", "gpt3-2.7b", "gpt3-6.7b",
                  "gpt3-175b"}


def test_aliases_are_data_unique_and_cover_every_hub_model():
    from costmodel.presets import preset_aliases

    aliases = preset_aliases()
    assert list(aliases) == preset_names()  # aliases.json itself is not a preset
    spellings = [s.casefold() for name, more in aliases.items() for s in (name, *more)]
    assert len(spellings) == len(set(spellings))
    for name in sorted(set(preset_names()) - NOT_ON_THE_HUB):
        if "model_type" in json.loads((PRESET_DIR / f"{name}.json").read_text()):
            assert any("/" in alias for alias in aliases[name]), f"{name} has no Hub id"
    for name in NOT_ON_THE_HUB:
        assert aliases[name] == ()


def test_an_alias_never_shadows_a_path(tmp_path, monkeypatch, capsys):
    """A file at ./openai-community/gpt2 is read as the file, by --config and by the report
    commands' --model (which also take paths), never replaced by the gpt2 preset."""
    (tmp_path / "openai-community").mkdir()
    (tmp_path / "openai-community" / "gpt2").write_text((PRESET_DIR / "seed-toy.json").read_text())
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(["estimate", "--config", "openai-community/gpt2", "--seq-len", "16",
                               "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["params"]["total"] == PUBLISHED["seed-toy"]
    code, out, err = run_main(["sweep", "--model", "openai-community/gpt2", "--seq-len", "16"], capsys)
    assert code == 0, err
    assert out.splitlines()[1].startswith("seed-toy,16,1,")  # the file's config, not gpt2's
    from reports.series import load_model

    assert load_model("openai-community/gpt2").n_layers == load_preset("seed-toy").n_layers


def test_models_shows_the_aliases(capsys):
    code, out, _ = run_main(["models", "--json"], capsys)
    rows = {row["name"]: row for row in json.loads(out)}
    assert rows["llama2-7b"]["aliases"] == ["meta-llama/Llama-2-7b-hf", "meta-llama/Llama-2-7b-chat-hf"]
    assert rows["seed-toy"]["aliases"] == []
    code, out, _ = run_main(["models"], capsys)
    line = next(line for line in out.splitlines() if line.startswith("mistral-7b "))
    assert line.endswith("mistralai/Mistral-7B-v0.1, mistralai/Mistral-7B-Instruct-v0.1")


def test_estimate_does_not_import_torch_matplotlib_or_pandas():
    code = (
        "import sys, cli; cli.main(['estimate', '--model', 'llama2-7b', '--json']); "
        "print(sorted(m for m in ('torch', 'matplotlib', 'pandas', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


# ---------------------------------------------------------------------------------------------
# Units and wording


def test_si_prefixes_reach_exa_and_round_into_the_next_prefix():
    from reports.text import binary_bytes, count, si

    assert si(1_612_510_000_000_000_000, "FLOP") == "1.61 EFLOP"  # not 1612.51 PFLOP
    assert si(3.2e22, "FLOP") == "32.00 ZFLOP" and si(4e24, "FLOP") == "4.00 YFLOP"
    assert si(999_999_999, "FLOP") == "1.00 GFLOP"  # not 1000.00 MFLOP
    assert si(999_990_000, "FLOP") == "999.99 MFLOP" and si(512) == "512"
    assert binary_bytes(3 * 2**60) == "3.00 EiB" and binary_bytes(2**30 - 1) == "1.00 GiB"
    assert count(999_999) == "1.00 M" and count(6_738_415_616) == "6.74 B"


def test_estimate_prints_exaflops(capsys):
    args = ["estimate", "--model", "llama2-7b", "--seq-len", "131072", "--batch", "64"]
    code, out, _ = run_main([*args, "--json"], capsys)
    b, n, L, d, d_ff, V = 64, 131072, 32, 4096, 11008, 32000
    forward = 2 * b * n * (L * (4 * d * d + 3 * d * d_ff) + d * V) + L * 4 * b * n * n * d
    assert json.loads(out)["flops"]["training"] == 3 * forward == 2_061_927_349_707_866_112
    code, out, _ = run_main(args, capsys)
    line = next(line for line in out.splitlines() if "training (fwd+bwd)" in line)
    assert "2.06 EFLOP" in line


def test_a_crossover_that_is_not_an_integer_shows_its_fraction(capsys):
    code, out, _ = run_main(["estimate", "--model", "t5-small"], capsys)
    assert "= 7168/3, about 2,389.3 tokens" in out  # (14/3) d at d = 512, source = target


def test_messages_name_the_model_without_a_broken_possessive(capsys):
    code, _, err = run_main(["estimate", "--model", "llama2-7b", "--seq-len", "8192"], capsys)
    assert code == 0
    assert err == ("warning: sequence length 8192 is beyond the context of model 'llama2-7b' "
                   "(4096 tokens).\n")
    code, _, err = run_main(["sweep", "--model", "llama2-7b", "--seq-len", "8192"], capsys)
    assert err.splitlines()[0] == ("warning: sequence length 8192 is beyond the context of model "
                                   "'llama2-7b' (4096 tokens).")
    code, _, err = run_main(["sweep", "--model", "gpt2", "--seq-len", "2048"], capsys)
    assert code == 2
    assert err == "error: sequence length 2048 exceeds the 1024 learned positions of model 'gpt2'.\n"


def test_one_batch_size_is_singular(capsys):
    code, _, err = run_main(["sweep", "--model", "gpt2", "--seq-len", "128", "--batch", "1"], capsys)
    assert code == 0
    assert err.startswith("1 point (1 length x 1 batch size) evaluated in ")
    code, _, err = run_main(["sweep", "--model", "gpt2", "--seq-len", "128,256", "--batch", "1:3"],
                            capsys)
    assert err.startswith("6 points (2 lengths x 3 batch sizes) evaluated in ")


def test_decode_lines_say_they_are_decode_steps_and_at_which_context(capsys):
    code, out, _ = run_main(["simulate", "--model", "llama2-7b", "--hardware", "h100-sxm",
                             "--prompt", "2048", "--gen", "256"], capsys)
    assert code == 0 and "output token" not in out
    first = next(line for line in out.splitlines() if "first decode step" in line)
    last = next(line for line in out.splitlines() if "last decode step" in line)
    # 256 tokens: the prefill's first, then 255 steps at contexts 2,049 .. 2,303 (the last token is never fed)
    assert first.endswith("; context 2,049") and last.endswith("; context 2,303")
    assert "255 decode steps after the prefill's first token" in out


def _dtype_commands(tmp_path):
    return [
        ["estimate", "--model", "gpt2"],
        ["simulate", "--model", "gpt2"],
        ["serve", "--model", "gpt2"],
        ["validate", "--model", "gpt2"],
        ["sweep", "--model", "gpt2"],
        ["report", "--model", "gpt2", "--out", str(tmp_path / "r")],
        ["plot", "memory", "--model", "gpt2", "--out", str(tmp_path / "m.png")],
    ]


def test_dtype_is_one_choice_everywhere(tmp_path, capsys):
    from costmodel.config import DTYPE_BYTES

    errors = set()
    for args in _dtype_commands(tmp_path):
        code, _, err = run_main([*args, "--dtype", "fp8"], capsys)
        assert code == 2, args
        errors.add(err)
        help_text = CliRunner().invoke(cli.cli, [*args[:2 if args[0] == "plot" else 1], "--help"],
                                       terminal_width=200).output
        assert "[" + "|".join(DTYPE_BYTES) + "]" in help_text, args
    # fp8 is no data dtype; the one line names the options that take it (a new user tried
    # `simulate --train --dtype fp8` for FP8 training)
    assert errors == {"error: Invalid value for '--dtype': 'fp8' is not one of 'fp32', 'float32', "
                      "'fp16', 'float16', 'bf16', 'bfloat16': --dtype is the data's dtype; FP8 training's "
                      "matmuls are --fp8, quantized weights --weight-dtype, a quantized KV cache --kv-dtype "
                      "(in the commands that have them).\n"}
    code, _, err = run_main(["simulate", "--model", "gpt2", "--dtype", "bogus"], capsys)
    assert code == 2 and err == ("error: Invalid value for '--dtype': 'bogus' is not one of 'fp32', 'float32', "
                                 "'fp16', 'float16', 'bf16', 'bfloat16'.\n")
    assert not list(tmp_path.iterdir())


def test_every_dtype_spelling_is_accepted_by_estimate_and_simulate(capsys):
    for spelling, canonical in (("float32", "fp32"), ("bfloat16", "bf16"), ("float16", "fp16")):
        code, out, _ = run_main(["estimate", "--model", "gpt2", "--dtype", spelling, "--json"], capsys)
        assert json.loads(out)["inputs"]["dtype"] == canonical
        code, out, _ = run_main(["simulate", "--model", "gpt2", "--prompt", "64", "--dtype", spelling,
                                 "--json"], capsys)
        assert json.loads(out)["inputs"]["dtype"] == canonical


# ---------------------------------------------------------------------------------------------
# validate: its table and its choice of n (no measurement: validate.compare.validate is replaced)


def _fake_validate(monkeypatch, seen):
    import validate.compare as compare
    from validate.compare import Row

    def fake(cfg, workload, **kwargs):
        seen.append(workload)
        return [Row("parameters", 10, 10)]

    monkeypatch.setattr(compare, "validate", fake)


@pytest.mark.measured  # validate.compare imports torch
def test_validate_table_labels_every_column(monkeypatch, capsys):
    _fake_validate(monkeypatch, [])
    code, out, _ = run_main(["validate", "--model", "llama2-7b"], capsys)
    assert code == 0
    header, _, row = out.splitlines()[1:4]
    assert header.split() == ["quantity", "block", "formula", "measured", "difference", "relative",
                              "status"]
    assert row.split()[-1] == "ok"


@pytest.mark.measured  # validate.compare imports torch
def test_validate_says_why_it_shortens_the_prompt(monkeypatch, capsys):
    seen = []
    _fake_validate(monkeypatch, seen)
    code, out, err = run_main(["validate", "--model", "gpt2", "--target", "reference", "--device",
                               "cpu"], capsys)
    # --gen-tokens 2 (validate's default) runs one decode step: the last token is never fed back
    assert code == 0 and seen[-1].seq_len == 1023 and "n=1023" in out
    assert ("note: [gpt2] n = 1023, not the default 2048: the prompt and the 1 decode step of "
            "--gen-tokens 2 must fit the 1024 positions of model 'gpt2'.") in err.splitlines()
    code, out, err = run_main(["validate", "--model", "t5-small", "-T", "0"], capsys)
    assert seen[-1].seq_len == 512
    assert "note: [t5-small] n = 512, not the default 2048: the prompt must fit the 512 positions" in err
    code, out, err = run_main(["validate", "--model", "llama2-7b"], capsys)
    assert seen[-1].seq_len == 2048 and "note:" not in err  # 2048 + 2 fit in 4096: nothing to say
    code, out, err = run_main(["validate", "--model", "gpt2", "--seq-len", "100"], capsys)
    assert seen[-1].seq_len == 100 and "note:" not in err


# ---------------------------------------------------------------------------------------------
# Issue 14's families through --config, quantized inference, the experts' load


@pytest.mark.parametrize("family", ["llama", "qwen2", "qwen3", "gemma", "gemma2", "phi3", "mistral",
                                    "gpt_neox", "falcon", "opt", "bloom", "mixtral", "qwen2_moe",
                                    "deepseek_v3"])
def test_every_family_estimates_from_a_config_json(family, tmp_path, capsys):
    from tests.family_odd_configs import ODD_FAMILY_CONFIGS

    config = tmp_path / "config.json"
    config.write_text(json.dumps(ODD_FAMILY_CONFIGS[family][0]))
    code, out, _ = run_main(["estimate", "--config", str(config), "--seq-len", "10", "--batch", "2",
                             "--dtype", "fp32", "--impl", "hf", "--attention", "eager", "--json"],
                            capsys)
    assert code == 0
    data = json.loads(out)
    for section, key in (("params", "total"), ("flops", "forward"), ("flops", "training"),
                         ("memory", "kv_cache"), ("memory", "activations")):
        assert isinstance(data[section][key], int) and data[section][key] > 0
    moe = family in ("mixtral", "qwen2_moe", "deepseek_v3")
    assert ("active" in data["params"]) == moe and ("moe" in data) == moe
    if moe:
        assert data["params"]["active"] < data["params"]["total"]


def test_unsupported_model_type_names_the_supported_ones(tmp_path, capsys):
    from costmodel.hf import SUPPORTED_MODEL_TYPES

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "reformer", "hidden_size": 8}))
    code, _, err = run_main(["estimate", "--config", str(config)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("error: ") and all(name in err for name in SUPPORTED_MODEL_TYPES)


def test_quantized_weights_and_cache_in_the_json(capsys):
    code, out, _ = run_main(["estimate", "--model", "llama3-8b", "--seq-len", "1024",
                             "--weight-dtype", "int4", "--kv-dtype", "fp8", "--json"], capsys)
    data = json.loads(out)
    q = data["memory"]["quantized_weights"]
    assert q["format"] == "int4, groups of 128"
    assert q["total"] == q["data"] + q["scales"] + q["zeros"] + q["tables"] + q["unquantized"]
    # 32 layers' matrices: (4096 (32 + 2*8) 128 + 4096^2 + 3 * 4096 * 14336) values, 4 bits each
    values = 32 * (4096 * 48 * 128 + 4096 * 4096 + 3 * 4096 * 14336)
    assert q["data"] == values // 2 and q["scales"] == 2 * values // 128
    # embeddings, head and norms stay bf16; the cache holds 1 byte per element + 8 B per layer
    assert q["unquantized"] == 2 * (2 * 128256 * 4096 + 65 * 4096)
    assert data["memory"]["kv_cache"] == 32 * (2 * 8 * 128 * 1024 + 8)
    assert data["inputs"]["weight_dtype"] == "int4" and data["inputs"]["kv_dtype"] == "fp8"


@pytest.mark.parametrize("args", [
    ["--weight-dtype", "int3"], ["--weight-dtype", "mxfp4", "--weight-group", "64"],
    ["--weight-dtype", "none", "--weight-group", "64"],
    ["--kv-dtype", "int4"], ["--weight-group", "0", "--weight-dtype", "int4"],
    ["--no-double-quant"], ["--expert-load", "1,2"], ["--expert-load", "x"],
])
def test_bad_inference_options_are_one_line(args, capsys):
    model = ["--model", "mixtral-8x7b"] if "--expert-load" in args else ["--model", "llama3-8b"]
    code, _, err = run_main(["estimate", *model, "--seq-len", "64", *args], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and err.startswith("error: ")


def test_expert_load_sets_tokens_per_expert_not_totals(capsys):
    base = ["estimate", "--model", "mixtral-8x7b", "--seq-len", "512", "--json"]
    balanced = json.loads(run_main(base, capsys)[1])
    skewed = json.loads(run_main([*base, "--expert-load", "3,1,1,1,1,1,1,1"], capsys)[1])
    assert balanced["moe"]["tokens_per_expert"] == [128] * 8  # 512 tokens * top-2 / 8
    assert skewed["moe"]["tokens_per_expert"] == [307.2] + [102.4] * 7
    assert skewed["flops"] == balanced["flops"]
