"""costmodel.simulate's parity with `simulate`: cuda_graphs and cache_size as --cuda-graphs and --cache-size
(the same roofline.simulate_inference, the same refusals), and dtype/kv_cache in any case, as the command's
case-insensitive choices take them (wt37_api, session 37)."""

from __future__ import annotations

import json

import pytest

import cli
import costmodel
from costmodel import spec
from costmodel.config import ConfigError


def command_json(capsys, *args: str) -> dict:
    assert cli.main(["simulate", "--model", "llama3-8b", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("keywords, args", [
    ({"kv_cache": "static", "cache_size": 4096}, ["--kv-cache", "static", "--cache-size", "4096"]),
    ({"cuda_graphs": True}, ["--cuda-graphs"]),
    ({"dtype": "BF16", "kv_cache": "Static"}, ["--dtype", "BF16", "--kv-cache", "Static"]),
])
def test_api_equals_command_json(capsys, keywords, args):
    assert costmodel.simulate("llama3-8b", **keywords).to_dict() == command_json(capsys, *args)


def test_cache_size_and_graphs_move_the_decode():
    plain = costmodel.simulate("llama3-8b", kv_cache="static").to_dict()
    whole = costmodel.simulate("llama3-8b", kv_cache="static", cache_size=4096).to_dict()
    graphs = costmodel.simulate("llama3-8b", cuda_graphs=True).to_dict()
    assert whole["inputs"]["cache_size"] == 4096 and "cache_size" not in plain["inputs"]
    # every step attends the whole 4,096-token cache: the first step reads what the last does
    assert whole["decode"]["first_token"]["bytes"] == whole["decode"]["last_token"]["bytes"]
    assert whole["decode"]["first_token"]["bytes"] > plain["decode"]["first_token"]["bytes"]
    assert graphs["inputs"]["cuda_graphs"] is True
    assert graphs["decode"]["time_per_output_token"] < costmodel.simulate("llama3-8b").to_dict()["decode"][
        "time_per_output_token"]  # no launch overhead per kernel


@pytest.mark.parametrize("keywords, message", [
    ({"cache_size": 4096}, "--cache-size is a static cache's allocated length"),
    ({"kv_cache": "static", "cache_size": 100}, "--cache-size 100 cannot hold the prompt and the generation"),
    ({"kv_cache": "static", "cache_size": 0}, "--cache-size must be a positive number of tokens, got 0."),
    ({"kv_cache": "static", "cache_size": 4096, "layout": {"tp": 2}}, "--cache-size is one GPU's decode"),
    ({"train": True, "cuda_graphs": True}, "cuda_graphs: inference keywords"),
    ({"train": True, "cache_size": 4096}, "cache_size: inference keywords"),
    ({"kv_cache": "Sttic"}, "kv_cache must be one of dynamic, static, got 'Sttic'."),
    ({"dtype": "BF61"}, "unknown dtype 'BF61'"),
])
def test_bad_values_one_line(keywords, message):
    with pytest.raises(ConfigError) as error:
        costmodel.simulate("llama3-8b", **keywords)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_spelled_casefolds_to_the_canonical_spelling():
    assert spec.DTYPES.spelled("BF16") == "bf16" and spec.DTYPES.spelled("BFloat16") == "bfloat16"
    assert spec.KV_CACHES.spelled("STATIC") == "static" and spec.KV_CACHES.spelled("stat") == "stat"
    assert spec.DTYPES.spelled(None) is None
    upper = costmodel.simulate("llama3-8b", dtype="FP16").to_dict()
    assert upper == costmodel.simulate("llama3-8b", dtype="fp16").to_dict() and upper["inputs"]["dtype"] == "fp16"
