"""The decode code's KV cache reaches decode time (costmodel/decode_codes.py): a quantized cache's
bytes an element (blocks.attention.kv_element_bytes, the rule its size takes) on every path a decode
step goes through, and the heads the cache holds (Falcon's new layout: transformers' class broadcasts
K/V to all query heads; TensorRT-LLM, vLLM and gpt-fast cache the KV heads)."""

from __future__ import annotations

import pytest
import sympy as sp

from costmodel import symbols as S
from costmodel.decode_codes import cache_code, scheduler_code
from costmodel.hardware import load_hardware
from costmodel.presets import load_preset
from costmodel.roofline import simulate_inference
from costmodel.roofline_model import Roofline
from costmodel.tree import CostModel, model_values, profile_for
from costmodel.workload import Workload

# TinyLlama-1.1B: 22 layers, 32 heads, 4 KV heads of 64
CFG = "tinyllama-1.1b"
LAYERS, KV_HEADS, HEAD = 22, 4, 64


def _read_bytes_saved(batch: int, context: int) -> int:
    """Bytes a step no longer reads when its keys and values are read at 1 byte, not 2: the scores'
    keys and the weighted sum's values, every layer."""
    return LAYERS * 2 * batch * KV_HEADS * HEAD * context * (2 - 1)


@pytest.mark.parametrize("code, saved", [("transformers", False), ("gpt-fast", False), ("tensorrt-llm", True),
                                         ("vllm", True)])
def test_the_roofline_decode_step_reads_the_cache_at_the_codes_bytes(code, saved):
    """simulate's tree (Roofline.decode): the step's bytes drop by the cache's second byte where the
    code attends on a quantized cache as stored, and not where it is handed a dequantized copy."""
    cfg, h100 = load_preset(CFG), load_hardware("h100-sxm")
    plain = Roofline(cfg, h100, "bf16", attention="flash", kv_cache="static", decode_code=code)
    fp8 = Roofline(cfg, h100, "bf16", attention="flash", kv_cache="static", decode_code=code,
                   quantization={"kv_dtype": "fp8"})
    difference = plain.decode(8, 1000)[0].bytes - fp8.decode(8, 1000)[0].bytes
    assert difference == (_read_bytes_saved(8, 1000) if saved else 0) == (90_112_000 if saved else 0)
    assert cache_code(code).reads_as_stored is saved


def test_the_cache_size_and_the_read_take_one_rule():
    """kv_cache_bytes and cache_element_bytes: one byte an element of an FP8 cache, both from
    kv_element_bytes; the size adds the layer's two fp32 scales (8 bytes a layer)."""
    cfg = load_preset(CFG)
    for code in ("transformers", "tensorrt-llm"):
        tree = CostModel(cfg, profile_for(cfg, Workload(attention="flash", kv_cache="static", kv_dtype="fp8",
                                                         decode_code=code)), phase="decode")
        values = {**{k: sp.Integer(v) for k, v in model_values(cfg).items()}, S.b: 8, S.c: 1000, S.e: 2, S.n: 1}
        assert int(tree.total("kv_cache_bytes").xreplace(values)) == LAYERS * (2 * 8 * KV_HEADS * HEAD * 1000 + 8)


def test_simulate_and_the_layout_path_time_the_same_step():
    """--kv-dtype fp8 under --decode-code tensorrt-llm: simulate without a layout and the layout path
    at tp 1 give the same last step, shorter than the bf16 cache's; under transformers, the same as it."""
    from costmodel.layout import Layout
    from costmodel.layout.timing import simulate_decode

    cfg, h100 = load_preset(CFG), load_hardware("h100-sxm")
    steps = {}
    for code in ("transformers", "tensorrt-llm"):
        for kv in (None, "fp8"):
            one = simulate_inference(cfg, h100, prompt=2000, gen=2, batch=32, attention="flash", kv_cache="static",
                                     cuda_graphs=True, quantization={"kv_dtype": kv}, time_model="kernels",
                                     implementation=code)["decode"]["last_token"]["seconds"]
            workload = Workload(seq_len=2000, gen_tokens=2, batch=32, attention="flash", precision="pure",
                                kv_cache="static", kv_dtype=kv)
            layout = simulate_decode(cfg, workload, Layout(tp=1), h100, cuda_graphs=True, time_model="kernels",
                                     prefill=False, implementation=code)["token"]["seconds_per_token"]
            assert one == pytest.approx(layout, rel=1e-9), (code, kv)
            steps[code, kv] = one
    assert steps["transformers", "fp8"] == steps["transformers", None]
    assert steps["tensorrt-llm", "fp8"] < 0.9 * steps["tensorrt-llm", None]


def test_the_cli_times_the_same_step_with_and_without_a_layout(capsys):
    """simulate --kv-dtype fp8 --decode-code tensorrt-llm: the same last step without a layout and
    with --tp 1 (the layout path)."""
    import json

    from cli import main

    base = ["simulate", "--model", CFG, "--hardware", "h100-sxm", "--prompt", "2000", "--gen", "2", "--batch", "32",
            "--attention", "flash", "--kv-cache", "static", "--cuda-graphs", "--time-model", "kernels",
            "--decode-code", "tensorrt-llm", "--kv-dtype", "fp8", "--json"]
    assert main(base) == 0
    one = json.loads(capsys.readouterr().out)["decode"]["last_token"]["seconds"]
    assert main(base + ["--tp", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["token"]["seconds_per_token"] == pytest.approx(one, rel=1e-12)
    assert main(base[:-4] + ["--decode-code", "trt", "--json"]) == 2


def test_serve_reads_as_its_engine_does():
    """serve's profile (replica_profile): vLLM's and TensorRT-LLM's schedulers read an FP8 cache as
    stored, Hugging Face generate's static batch is handed it dequantized."""
    from costmodel.serving.replica import replica_profile

    cfg = load_preset(CFG)
    assert {s: replica_profile(cfg, s, kv_dtype="fp8").kv_read_as_stored for s in ("vllm", "trtllm", "static")} == \
        {"vllm": True, "trtllm": True, "static": False}
    assert (scheduler_code("trtllm"), scheduler_code("static"), scheduler_code("sarathi")) == ("tensorrt-llm", "transformers", "vllm")


# Falcon-180B: 80 layers, 232 query heads, 8 KV heads of 64
FALCON_HEADS = {"transformers": 232, "gpt-fast": 8, "tensorrt-llm": 8, "vllm": 8}


@pytest.mark.parametrize("code", sorted(FALCON_HEADS))
def test_falcons_cache_holds_the_heads_its_code_caches(code):
    """transformers' FalconAttention broadcasts K/V to all 232 heads before the cache update; TensorRT-LLM
    (num_kv_heads), vLLM (total_num_kv_heads = config.num_kv_heads) and gpt-fast (n_local_heads) cache 8."""
    cfg = load_preset("falcon-180b")
    tree = CostModel(cfg, profile_for(cfg, Workload(attention="flash", kv_cache="static", decode_code=code)),
                     phase="decode")
    values = {**{k: sp.Integer(v) for k, v in model_values(cfg).items()}, S.b: 1, S.c: 1000, S.e: 2, S.n: 1}
    assert int(tree.total("kv_cache_bytes").xreplace(values)) == 80 * 2 * FALCON_HEADS[code] * 64 * 1000 * 2


def test_the_layout_paths_falcon_cache_follows_the_code():
    """A layout's per-rank cache (the memory the decode rows check against the GPU; serving_memory
    reports the cache of the phase that peaks): transformers' 232 heads, 58 a rank at tp 4, peak at the
    last decode step (4,095 tokens: 155.7 GB, past an 80 GB H100), TensorRT-LLM's 8 KV heads, 2 a rank,
    whose prefill peaks (2,048 tokens: 2.7 GB)."""
    from costmodel.layout import Layout
    from costmodel.layout.timing import simulate_decode

    cfg, h100 = load_preset("falcon-180b"), load_hardware("h100-sxm")
    workload = Workload(seq_len=2048, gen_tokens=2048, batch=64, dtype="fp16", attention="flash", precision="pure",
                        kv_cache="static", kv_dtype="fp8", weight_dtype="fp8", fp8_gemm="w8a8")
    cache = {code: simulate_decode(cfg, workload, Layout(tp=4), h100, cuda_graphs=True, time_model="roofline",
                                   prefill=False, implementation=code)["per_rank"]["kv_cache"]
             for code in ("transformers", "tensorrt-llm")}
    # 80 layers x (64 sequences x tokens x K and V x heads a rank x 64 wide x 1 byte + two fp32 scales)
    assert cache == {"transformers": 80 * (64 * 4095 * 2 * 58 * 64 + 8), "tensorrt-llm": 80 * (64 * 2048 * 2 * 2 * 64 + 8)}


def test_an_unknown_code_is_one_clear_line():
    from costmodel.errors import ConfigError

    with pytest.raises(ConfigError, match="decode_code must be one of"):
        Workload(decode_code="tensorrt")
