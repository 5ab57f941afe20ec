"""A static cache attended whole (simulate --cache-size; simulate_inference's cache_size): every decode
step attends the allocated cache, filled or not, as torchao's generate.py --cache_size runs gpt-fast's
Transformer (pytorch/ao b4d0768: model.py setup_caches lines 156-185 allocate cache_size tokens,
KVCache.update lines 89-102 hands the whole cache back, Attention.forward lines 300-305 repeats it to
every query head and calls sdpa over every key with the mask's row; generate.py line 69 runs the decode
steps on sdpa's math backend). The step's copies of every key are kernel_facts.json "eager_step_copies"
gpt-fast, measured to the byte on validate/static_cache_bytes.py's reproduction; the int8 cache's
update ops are eager_step_ops' int8_kv_per_layer, counted on the same reproduction."""

from __future__ import annotations

import json

import pytest

from cli import main
from costmodel.config import ConfigError
from costmodel.eager_ops import step_copies, step_ops
from costmodel.hardware import load_hardware
from costmodel.presets import load_preset
from costmodel.roofline import simulate_inference
from costmodel import symbols as S

LLAMA3 = load_preset("llama3-8b")  # 32 layers, 32 heads, 8 KV heads of 128
#: torchao-kv-long's run: Llama-3.1-8B on an A100 80GB, eager, batch 1, 6 prompt tokens, 200 new ones
RUN = dict(prompt=6, gen=200, batch=1, dtype="bf16", attention="sdpa", kv_cache="static", cuda_graphs=False,
           implementation="gpt-fast", time_model="kernels")


def _bytes_per_key(copies: dict, **sizes) -> dict[str, int]:
    subs = {getattr(S, name): value for name, value in sizes.items()}
    return {name: int(part.bytes_per_key.xreplace(subs)) for name, part in copies["parts"].items()}


def test_the_copies_of_every_key_as_gpt_fast_eager_step_makes_them():
    """Per key and layer of Llama-3-8B (h 32, h_kv 8, d_h 128, bf16): repeat_interleave's clones
    2 x 128 x 2 x (8 + 32) = 20,480; the math backend's fp32 casts of K and V 2 x 128 x 32 x 6 and of
    the weights back 32 x 6 (49,344); the key's scaling 8 x 128 x 32 (32,768); its two bmm on fp32 K
    and V and the scores, less the tree's read of K and V (2 x 2 x 128 x 8): 32,768 + 256 - 4,096;
    the mask's row 1 + 2, its add 8 x 32 + 2, the softmax 8 x 32. 11 kernels a layer; the int8
    cache's two products add 2 x 8 x (128 + 2 + 256) = 6,176 B and 2 kernels."""
    sizes = dict(e=2, d_h=128, h=32, h_kv=8)
    bf16 = step_copies(LLAMA3, "gpt-fast", "sdpa", "bf16")
    assert _bytes_per_key(bf16, **sizes) == {
        "repeat_interleave": 20_480, "math_upcast": 49_344, "math_key_scale": 32_768,
        "math_products": 28_928, "mask_row": 3, "mask_add": 258, "softmax": 256}
    assert sum(_bytes_per_key(bf16, **sizes).values()) == 132_037
    assert sum(part.calls for part in bf16["parts"].values()) == 11
    int8 = step_copies(LLAMA3, "gpt-fast", "sdpa", "bf16", "int8")
    assert sum(_bytes_per_key(int8, **sizes).values()) == 132_037 + 6_176 == 138_213
    assert sum(part.calls for part in int8["parts"].values()) == 13
    # a step at a cache of 32,768 keys, 32 layers: 138,450,829,312 B copied (144,926,834,688 with int8)
    assert 132_037 * 32_768 * LLAMA3.n_layers == 138_450_829_312


def test_the_copies_apply_to_the_eager_half_precision_step_only():
    """Inductor generates its own attention (compiled, or CUDA graphs, which gpt-fast captures under
    torch.compile only: none; the compiled gpt-fast and torchao rows keep their figures); the math
    backend upcasts bf16 and fp16 only (fp32's parts are not stated); another attention or code states none."""
    assert step_copies(LLAMA3, "gpt-fast", "sdpa", "bf16", eager=False) is None
    a100 = load_hardware("a100-80gb")
    graphs = dict(RUN, cuda_graphs=True, kv_cache="static", prompt=6, gen=200)
    assert (simulate_inference(LLAMA3, a100, **graphs, cache_size=32_768)["decode"]["first_token"]["seconds"]
            < 0.03)  # no copies: the tree's leaves at 32,768 keys
    assert step_copies(LLAMA3, "gpt-fast", "sdpa", "fp32") is None
    assert step_copies(LLAMA3, "gpt-fast", "sdpa", "fp16") is not None
    assert step_copies(LLAMA3, "gpt-fast", "flash", "bf16") is None
    assert step_copies(LLAMA3, "transformers", "sdpa", "bf16") is None


@pytest.mark.slow
@pytest.mark.parametrize("int8, per_layer", [(False, 1_757), (True, 1_909)])
def test_the_stated_bytes_are_what_the_reproduction_moves(int8, per_layer):
    """validate/static_cache_bytes.py on the CPU (torch 2.13's math backend, dim 48, 4 heads, 2 KV
    heads of 12, bf16): the bytes a step moves per key of its cache and layer are the stated copies
    plus the tree's sdpa read of K and V (2 x 2 x 12 x 2 = 96), op by op; the step's own 2 B a key
    are the mask's row, indexed once a step."""
    pytest.importorskip("torch")
    from validate.static_cache_bytes import counts

    measured = counts(int8)
    stated = _bytes_per_key(step_copies(LLAMA3, "gpt-fast", "sdpa", "bf16", "int8" if int8 else None),
                            e=2, d_h=12, h=4, h_kv=2)
    assert measured["per_layer"] == sum(stated.values()) + 96 == per_layer
    assert measured["per_step"] == 2
    ops = measured["per_layer_ops"]
    assert ops["aten.clone.default"] == stated["repeat_interleave"]
    assert ops["aten._to_copy.default"] == stated["math_upcast"]
    assert ops["aten.mul.Scalar"] == stated["math_key_scale"]
    assert ops["aten.bmm.default"] == stated["math_products"] + 96
    assert (ops["aten.where.self"], ops["aten.add.Tensor"], ops["aten._safe_softmax.default"]) == (
        stated["mask_row"], stated["mask_add"], stated["softmax"])
    assert ops.get("aten.mul.Tensor", 0) == stated.get("int8_dequantize", 0)


def test_the_int8_cache_update_issues_58_more_ops_a_layer():
    """validate/static_cache_bytes.py's int8 update (AffineQuantizedKVCache.update with torchao's
    quantize_activation_per_token_absmax, op for op) on validate/gpt_fast_ops.py's reproduction: 184
    ops a layer against the bf16 cache's 126; a step of Llama-3-8B issues (126 + 58) x 32 + 36 = 5,924."""
    pytest.importorskip("torch")
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from validate import gpt_fast_ops as g
    from validate.static_cache_bytes import _with_int8_cache

    def count(layers: int) -> int:
        model = _with_int8_cache(g.reference_modules()["Transformer"](layers, **g.SIZES).to(torch.bfloat16))
        ops = g.DispatchCounter()
        token, input_pos = torch.tensor([[3]], dtype=torch.int), torch.tensor([5], dtype=torch.int)
        with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), ops:
            g.decode_step_tail(model(token, input_pos), input_pos)
        return ops.count

    assert count(2) - count(1) == 126 + 58
    assert step_ops(LLAMA3, "gpt-fast", "bf16", "sdpa", "static", {"kv_dtype": "int8"}) == 5_924
    assert step_ops(LLAMA3, "gpt-fast", "bf16", "sdpa", "static") == 4_068


def test_every_step_is_the_step_at_the_whole_cache():
    """At cache 32,768 every one of the 199 steps takes what a step at 32,768 keys takes: the first
    and the last alike, their sum 199 of them; the copies at the timer's bandwidth (the a100-80gb
    file's 2.039 TB/s x 0.8) are 138,450,829,312 B / 1.6312 TB/s = 84.88 ms of the step."""
    a100 = load_hardware("a100-80gb")
    whole = simulate_inference(LLAMA3, a100, **RUN, cache_size=32_768)["decode"]
    assert whole["first_token"]["seconds"] == whole["last_token"]["seconds"]
    assert whole["decode_seconds"] == pytest.approx(199 * whole["first_token"]["seconds"], rel=1e-12)
    from costmodel.kernel_facts_file import fuses_qkv
    from costmodel.kernel_time import inference_subs, leaves_time
    from costmodel.roofline import KernelSteps, Roofline

    roof = Roofline(LLAMA3, a100, "bf16", None, "sdpa", "static", False, {}, "naive", decode_code="gpt-fast")
    steps = KernelSteps(roof, False, False, 4_068, fuses_qkv("gpt-fast"), step_copies(LLAMA3, "gpt-fast", "sdpa", "bf16"))
    subs = inference_subs(LLAMA3, "bf16", 1, 1, context=32_768, source_len=1)
    assert steps.decode_timer.bandwidth == pytest.approx(2.039e12 * 0.8)
    assert steps.copy_seconds(subs, 32_768) == pytest.approx(138_450_829_312 / 1.6312e12, rel=1e-12)  # 84.88 ms
    leaves = leaves_time(roof.step_leaves()[0], subs, steps.decode_timer)  # the tree's kernels at 32,768 keys
    assert whole["first_token"]["seconds"] == pytest.approx(
        leaves.seconds - leaves.launch_seconds + leaves.stream_seconds + 138_450_829_312 / 1.6312e12, rel=1e-12)
    # above the host's 28.88 ms; 97.35 ms before wt38_sweep gave the kernels their GPU-side launch cost (1.34 us each)
    assert whole["first_token"]["seconds"] == pytest.approx(0.09787, abs=1e-5)
    filled = simulate_inference(LLAMA3, a100, **RUN)["decode"]  # the prompt and the tokens so far: host-bound
    assert filled["first_token"]["seconds"] == pytest.approx(4_068 * 7.1e-6, rel=1e-12)
    # 10.31 first computed; 10.25 since wt38_sweep (the kernels' GPU-side launch cost)
    assert whole["end_to_end_tokens_per_second"] == pytest.approx(10.25, abs=0.01)


@pytest.mark.parametrize("change, message", [
    (dict(kv_cache="dynamic"), "add --kv-cache static"),
    (dict(cache_size=205), r"cannot hold the prompt and the generation \(6 \+ 200 tokens\)"),
])
def test_a_cache_that_cannot_apply_is_one_sentence(change, message):
    a100 = load_hardware("a100-80gb")
    with pytest.raises(ConfigError, match=message):
        simulate_inference(LLAMA3, a100, **{**RUN, "cache_size": 32_768, **change})


SIMULATE = ["simulate", "--model", "llama3-8b", "--hardware", "a100-80gb", "--prompt", "6", "--gen", "200",
            "--batch", "1", "--attention", "sdpa", "--decode-code", "gpt-fast"]


def test_the_cli_times_the_whole_cache(capsys):
    assert main([*SIMULATE, "--kv-cache", "static", "--cache-size", "32768", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["inputs"]["cache_size"] == 32_768
    whole = simulate_inference(LLAMA3, load_hardware("a100-80gb"), **RUN, cache_size=32_768)["decode"]
    assert out["decode"]["end_to_end_tokens_per_second"] == pytest.approx(whole["end_to_end_tokens_per_second"])
    assert main([*SIMULATE, "--kv-cache", "static", "--cache-size", "32768"]) == 0
    assert "static KV cache of 32,768 tokens, attended whole at every step" in capsys.readouterr().out


@pytest.mark.parametrize("args", [["--cache-size", "32768"], ["--kv-cache", "static", "--cache-size", "100"],
                                  ["--kv-cache", "static", "--cache-size", "32768", "--tp", "2"]])
def test_bad_input_is_one_line_and_status_2(capsys, args):
    assert main([*SIMULATE, *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--cache-size" in err
