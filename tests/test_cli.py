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
from costmodel.model import CostModel
from costmodel.presets import PRESET_DIR, load_preset, preset_names
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
        "recompute": "none", "gen_tokens": 0, "optimizer": "adamw",
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
    assert "6,738,415,616" in out and "24,704.0 tokens" in out


@pytest.mark.parametrize(
    "args, needle",
    [
        (["estimate", "--model", "llama2-7x"], "llama2-7b"),
        (["estimate", "--model", "gpt2", "--dtype", "fp8"], "fp8"),
        (["estimate", "--model", "gpt2", "--seq-len", "0"], "seq_len"),
        (["estimate", "--model", "gpt2", "--seq-len", "-5"], "seq_len"),
        (["estimate", "--model", "gpt2", "--batch", "abc"], "--batch"),
        (["estimate", "--model", "gpt2", "--seq-len", "4096"], "learned positions"),
        (["estimate", "--model", "gpt2", "--impl", "vllm"], "impl"),
        (["estimate", "--model", "gpt2", "--attention", "ring"], "attention"),
        (["estimate", "--model", "gpt2", "--tgt-len", "5"], "encoder-decoder"),
        (["estimate"], "--model"),
        (["estimate", "--model", "gpt2", "--config", "x.json"], "exactly one"),
        (["estimate", "--config", "/nonexistent/config.json"], "no such file"),
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


@pytest.mark.parametrize(
    "content, needle",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"model_type": "mamba"}', "unsupported model_type 'mamba'"),
        ('{"model_type": "llama", "hidden_size": 64}', "missing field"),
        ('{"model_type": "llama", "vocab_size": 99, "hidden_size": 50, "intermediate_size": 37, '
         '"num_hidden_layers": 2, "num_attention_heads": 6}', "not divisible by n_heads"),
        ('{"model_type": "llama", "vocab_size": 99, "hidden_size": 48, "intermediate_size": 37, '
         '"num_hidden_layers": 2, "num_attention_heads": 6, "num_key_value_heads": 4}', "not divisible by n_kv_heads"),
        ('{"model_type": "gpt2", "n_embd": -768}', "d_model"),
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
    assert len(lines) == 2 + 14
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


def test_aliases_are_data_unique_and_cover_every_hub_model():
    from costmodel.presets import preset_aliases

    aliases = preset_aliases()
    assert list(aliases) == preset_names()  # aliases.json itself is not a preset
    spellings = [s.casefold() for name, more in aliases.items() for s in (name, *more)]
    assert len(spellings) == len(set(spellings))
    for name in preset_names():
        if "model_type" in json.loads((PRESET_DIR / f"{name}.json").read_text()):
            assert any("/" in alias for alias in aliases[name]), f"{name} has no Hub id"


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
    assert rows["llama2-7b"]["aliases"] == ["meta-llama/Llama-2-7b-hf"]
    assert rows["seed-toy"]["aliases"] == []
    code, out, _ = run_main(["models"], capsys)
    line = next(line for line in out.splitlines() if line.startswith("mistral-7b "))
    assert line.endswith("mistralai/Mistral-7B-v0.1")


def test_estimate_does_not_import_torch_matplotlib_or_pandas():
    code = (
        "import sys, cli; cli.main(['estimate', '--model', 'llama2-7b', '--json']); "
        "print(sorted(m for m in ('torch', 'matplotlib', 'pandas', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
