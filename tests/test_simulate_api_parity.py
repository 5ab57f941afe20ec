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
    ({"compiled": True}, ["--compile"]),  # wt39_review2: --compile and --eager-prefill reached the command alone
    ({"cuda_graphs": True, "compiled": True, "eager_prefill": True}, ["--cuda-graphs", "--compile", "--eager-prefill"]),
    ({"compiled": True, "eager_prefill": True, "layout": {"tp": 2}}, ["--compile", "--eager-prefill", "--tp", "2"]),
])
def test_api_equals_command_json(capsys, keywords, args):
    assert costmodel.simulate("llama3-8b", **keywords).to_dict() == command_json(capsys, *args)


@pytest.mark.parametrize("layout", [None, {"tp": 2}])
def test_eager_prefill_moves_the_prefill_alone(layout):
    """compiled=True, eager_prefill=True: the prefill is the uncompiled run's (70.05 ms one GPU, 30.86 ms
    at tp 2; compiled 70.44 / 31.44 ms: at the default 2,048-token prompt the compiled prefill's per-kernel
    cost outweighs its fusions), the decode steps the compiled run's."""
    plain, compiled, eager = (costmodel.simulate("llama3-8b", layout=layout, **k).to_dict() for k in (
        {}, {"compiled": True}, {"compiled": True, "eager_prefill": True}))
    assert eager["prefill"]["seconds"] == plain["prefill"]["seconds"] != compiled["prefill"]["seconds"]
    assert round(eager["prefill"]["seconds"] * 1e3, 2) == (70.05 if layout is None else 30.86)
    step = (lambda r: r["decode"]["time_per_output_token"]) if layout is None else (
        lambda r: r["token"]["seconds_per_token"])
    assert step(eager) == step(compiled)


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
    ({"eager_prefill": True}, "--eager-prefill runs the prefill eager beside compiled decode steps"),
    ({"eager_prefill": True, "layout": {"tp": 2}}, "--eager-prefill runs the prefill eager beside compiled decode steps"),
    ({"train": True, "eager_prefill": True}, "eager_prefill: inference keywords"),
    ({"train": True, "compiled": True}, "a compiled training step is `simulate --train --compile` with a layout"),
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
