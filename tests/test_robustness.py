"""Wrong input never gives a traceback; counts stay exact at any size; output is deterministic.

The property-based tests drive the config loader and the CLI with generated (mostly invalid)
inputs: over 2,000 per run. Every outcome must be a ModelConfig or a ConfigError (loader), and exit
status 0 or 2 with a single 'error:' line for 2 (CLI).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cli
from costmodel.config import ConfigError, ModelConfig, Workload
from costmodel.estimation import Estimate
from costmodel.presets import PRESET_DIR, parse_config, preset_names

ROOT = Path(__file__).resolve().parent.parent

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats(allow_nan=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
PRESET_TEXTS = {name: (PRESET_DIR / f"{name}.json").read_text() for name in preset_names()}


@st.composite
def mutated_configs(draw) -> str:
    """A preset's JSON with fields dropped, retyped or set to odd values, or cut short."""
    text = PRESET_TEXTS[draw(st.sampled_from(sorted(PRESET_TEXTS)))]
    how = draw(st.sampled_from(["mutate", "mutate", "mutate", "truncate", "garbage"]))
    if how == "truncate":
        return text[: draw(st.integers(0, len(text) - 1))]
    if how == "garbage":
        return draw(st.text(max_size=40))
    data = json.loads(text)
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(sorted(data)))
        action = draw(st.sampled_from(["drop", "value", "int"]))
        if action == "drop":
            data.pop(key, None)
        elif action == "value":
            data[key] = draw(JSON_VALUES)
        else:
            data[key] = draw(st.integers(-5, 10**12))
        if not data:
            break
    return json.dumps(data)


@pytest.mark.slow
@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_configs())
def test_config_loader_returns_a_config_or_one_clear_error(text):
    from costmodel.hf import SUPPORTED_MODEL_TYPES

    # one line, at most 250 characters of its own beyond the supported model types it may list
    # (test_cli requires an unsupported or missing model_type to name every one: 30 types, ~300
    # characters, a list that grows with each family added)
    limit = 250 + len(", ".join(SUPPORTED_MODEL_TYPES))
    try:
        cfg = parse_config(text, source="config.json", name="fuzz")
    except ConfigError as error:
        message = str(error)
        assert message and "\n" not in message and len(message) < limit
        return
    assert isinstance(cfg, ModelConfig)


@pytest.mark.parametrize("family", ["llama", "qwen2_moe", "gemma2", "deepseek_v3"])
def test_a_huge_layer_count_is_one_clear_error_not_a_memory_error(family):
    """The fuzz above once drew num_hidden_layers = 3,567,587,328: the per-layer pattern was built as a
    list of that length before any check (a MemoryError). Now the count is checked first."""
    text = json.dumps({"model_type": family, "num_hidden_layers": 3567587328, "hidden_size": 64,
                       "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100})
    with pytest.raises(ConfigError, match=r"^config.json: num_hidden_layers = 3567587328 is beyond 100,000; is it a typo\?$"):
        parse_config(text, source="config.json", name="fuzz")


def test_a_long_layer_pattern_is_built_in_linear_time():
    """The fuzz above once drew a Qwen2 config of ~100,000 layers with half of them sliding: the
    per-layer pattern tested each layer against a list (quadratic, minutes, the suite hung)."""
    import time

    layers = 99_999
    text = json.dumps({"model_type": "qwen2", "num_hidden_layers": layers, "hidden_size": 64,
                       "num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 128,
                       "vocab_size": 100, "use_sliding_window": True, "sliding_window": 16,
                       "max_window_layers": layers // 2})
    start = time.process_time()
    cfg = parse_config(text, source="config.json", name="fuzz")
    assert time.process_time() - start < 5  # the quadratic build took 38 s of CPU here
    assert len(cfg.layer_pattern) == layers
    assert cfg.layer_pattern.count("sliding") == layers - layers // 2


OPTION_VALUES = st.one_of(
    st.integers(-3, 3).map(str),
    st.integers(10**6, 10**12).map(str),
    st.sampled_from(["0", "-1", "1.5", "abc", "", "1e3", "2048", "fp8", "bf16", "float32", "eager",
                     "flash", "selective", "hf", "reference", "nan", "\u00e9"]),
    st.text(max_size=6),
)
OPTIONS = ["--seq-len", "--batch", "--dtype", "--impl", "--attention", "--recompute", "--gen-tokens",
           "--optimizer", "--tgt-len", "--model", "--config", "--bogus"]


@st.composite
def cli_arguments(draw) -> list[str]:
    args = [draw(st.sampled_from(["estimate", "estimate", "estimate", "formulas", "models", "nope"]))]
    if draw(st.booleans()):
        args += ["--model", draw(st.sampled_from(sorted(PRESET_TEXTS) + ["llama2-7x", "", "../x"]))]
    for _ in range(draw(st.integers(0, 3))):
        option = draw(st.sampled_from(OPTIONS))
        args.append(option)
        if draw(st.integers(0, 9)):  # now and then an option with its value missing
            args.append(draw(OPTION_VALUES))
    if draw(st.booleans()):
        args.append("--json")
    return args


@pytest.mark.slow
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cli_arguments())
def test_cli_exits_0_or_2_with_one_line(args):
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(args)
    assert code in (0, 2), (args, code, err.getvalue())
    if code == 2:
        lines = [line for line in err.getvalue().splitlines() if not line.startswith("warning: ")]
        assert len(lines) == 1 and lines[0].startswith("error: "), (args, err.getvalue())


def test_counts_are_exact_at_the_extremes():
    # ~1.2e15 parameters: d = 2^20, d_ff = 4d + 1, 96 layers, an odd vocabulary; n ~ 10^7,
    # b ~ 10^6. Odd sizes, so that a float (53-bit mantissa) could not hold the counts.
    d, d_ff, layers, vocab, n, b = 2**20, 2**22 + 1, 96, 2**18 + 3, 10**7 - 1, 10**6 - 1
    cfg = ModelConfig(
        name="huge", family="llama", vocab_size=vocab, d_model=d, n_heads=2**10, d_ff=d_ff,
        n_decoder_layers=layers, position="rope", norm="rmsnorm", activation="swiglu",
        qkv_bias=False, out_bias=False, ffn_bias=False, tie_embeddings=False, max_positions=n,
    )
    result = Estimate(cfg, Workload(seq_len=n, batch=b))
    params = layers * (4 * d * d + 3 * d * d_ff + 2 * d) + 2 * vocab * d + d
    assert params > 10**15
    assert result.total("params") == params
    forward = 2 * b * n * (layers * (4 * d * d + 3 * d * d_ff) + d * vocab) + layers * 4 * b * n * n * d
    assert result.total("flops_matmul") == forward
    assert result.total("flops_matmul_backward") == 2 * forward
    assert int(float(forward)) != forward  # a float would have drifted
    assert result.memory_numbers()["kv_cache"] == layers * 2 * b * n * d * 2


def test_json_integers_survive_the_command_line(tmp_path):
    d, layers, vocab, n, b = 2**20, 96, 2**18, 10**7, 10**6
    config = {
        "name": "huge", "family": "llama", "vocab_size": vocab, "d_model": d, "n_heads": 1024,
        "d_ff": 4 * d, "n_decoder_layers": layers, "position": "rope", "norm": "rmsnorm",
        "activation": "swiglu", "qkv_bias": False, "out_bias": False, "ffn_bias": False,
        "tie_embeddings": False, "max_positions": n,
    }
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(config))
    out = subprocess.run(
        [sys.executable, "cli.py", "estimate", "--config", str(path), "--seq-len", str(n),
         "--batch", str(b), "--json"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout
    data = json.loads(out)
    forward = 2 * b * n * (layers * (4 * d * d + 3 * d * 4 * d) + d * vocab) + layers * 4 * b * n * n * d
    assert data["flops"]["forward"] == forward
    assert data["params"]["total"] == layers * (4 * d * d + 3 * d * 4 * d + 2 * d) + 2 * vocab * d + d


def test_absurd_sizes_are_rejected():
    try:
        Workload(seq_len=10**12)
    except ConfigError as error:
        assert "typo" in str(error)
    else:
        raise AssertionError("a 10^12-token sequence was accepted")


def test_json_output_is_byte_identical_across_runs():
    command = [sys.executable, "cli.py", "estimate", "--model", "t5-small", "--gen-tokens", "7", "--json"]
    first = subprocess.run(command, cwd=ROOT, capture_output=True, check=True).stdout
    second = subprocess.run(command, cwd=ROOT, capture_output=True, check=True).stdout
    assert first == second and len(first) > 1000


def test_no_code_from_input():
    # Nothing a user passes may reach eval, exec, pickle or remote code: configs are JSON only.
    sources = [ROOT / "cli.py", *sorted((ROOT / "cli").rglob("*.py")), *sorted((ROOT / "costmodel").rglob("*.py")),
               *sorted((ROOT / "validate").rglob("*.py")), *sorted((ROOT / "reports").rglob("*.py"))]
    assert len(sources) > 20
    import re

    forbidden = re.compile(
        r"(?<![\w.])(eval|exec)\(|import pickle|pickle\.load|trust_remote_code|yaml\.load\(|parse_expr\("
    )
    for path in sources:
        match = forbidden.search(path.read_text())
        assert match is None, f"{path.relative_to(ROOT)} contains {match.group(0)!r}"


@pytest.mark.slow
def test_unwritable_outputs_are_one_line_errors(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    for args in (["sweep", "--model", "gpt2", "--seq-len", "128:1024:x2", "--csv", "/proc/x.csv"],
                 ["sweep", "--model", "gpt2", "--seq-len", "128:1024:x2", "--csv", str(blocker / "x.csv")],
                 ["plot", "regimes", "--model", "gpt2", "--out", "/nonexistent/dir/x.png"],
                 ["train-demo", "--steps", "1", "--out", str(blocker / "loss.png")]):
        assert cli.main(args) == 2, args
        err = capsys.readouterr().err.strip().splitlines()
        assert len([line for line in err if line.startswith("error: ")]) == 1, (args, err)
        assert not any("Traceback" in line for line in err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # nothing half-written


def test_tgt_len_on_a_model_without_a_decoder_input_names_its_kind(capsys):
    """--tgt-len on an encoder or a decoder: one error line, with the article its kind takes."""

    for model, kind in (("bert-base-uncased", "an encoder"), ("gpt2", "a decoder")):
        assert cli.main(["estimate", "--model", model, "--tgt-len", "16"]) == 2
        assert capsys.readouterr().err.strip() == \
            f"error: tgt_len applies only to encoder-decoder models; {model} is {kind}."
