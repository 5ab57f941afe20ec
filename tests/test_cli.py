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
from costmodel.presets import PRESET_DIR, load_preset

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
        "recompute": "none", "gen_tokens": 0, "optimizer": "adamw", "precision": "mixed",
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


def test_estimate_does_not_import_torch_matplotlib_or_pandas():
    code = (
        "import sys, cli; cli.main(['estimate', '--model', 'llama2-7b', '--json']); "
        "print(sorted(m for m in ('torch', 'matplotlib', 'pandas', 'numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
