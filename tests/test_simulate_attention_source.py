"""simulate says which attention it timed and why where none was typed (defaults.attention_source): one GPU
times transformers' eager path, a layout its framework's code (deepspeed and fsdp2: sdpa, transformers' own
default; megatron: flash), a class or GPU that cannot run that default its fallback. Round 29 found the two
defaults told apart by nothing but the figures (Llama 3 8B, 2,048 + 128, batch 8 on an H100: 3.27 s one-GPU,
2.44 s with --tp 1)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cli.simulate import simulate
from costmodel.defaults import attention_source

LLAMA = ["--model", "llama3-8b", "--hardware", "h100-sxm", "--prompt", "2048", "--gen", "128", "--batch", "8"]


def run(*args: str) -> dict:
    result = CliRunner().invoke(simulate, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_each_default_names_itself():
    assert attention_source(None, None, None, "llama").startswith("eager attention: the default without a layout")
    assert attention_source("deepspeed", None, None, "llama") == "sdpa attention: the deepspeed layout's default code"
    assert attention_source("megatron", None, None, "llama") == "flash attention: the megatron layout's default code"
    assert attention_source("megatron", None, None, "llama", flash=False) == (
        "eager attention: megatron's flash does not run on this GPU")
    assert attention_source("deepspeed", None, None, "gemma2").startswith("eager attention: the gemma2 class runs no sdpa")
    assert attention_source(None, None, "sdpa", "llama") is None  # typed: nothing to explain


@pytest.mark.slow
def test_one_gpu_and_a_layout_say_which_they_timed():
    one, layout = run(*LLAMA), run(*LLAMA, "--tp", "1")
    assert (one["inputs"]["attention"], layout["inputs"]["attention"]) == ("eager", "sdpa")
    assert "--attention sdpa times it" in one["inputs"]["attention_source"]
    # an inference layout names no framework (session 32: it read "the deepspeed layout's default code")
    assert layout["inputs"]["attention_source"] == "sdpa attention: an inference layout's default, transformers' own kernel"
    assert "attention_source" not in run(*LLAMA, "--attention", "sdpa")["inputs"]
    text = CliRunner().invoke(simulate, LLAMA).output.splitlines()[1]
    assert text.startswith("prompt 2048, generate 128, batch 8, attention eager, dynamic KV cache; eager attention: "
                           "the default without a layout")
