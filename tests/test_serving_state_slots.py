"""Serving hybrid models (costmodel/serving/state_slots.py): a running request's Mamba-2 / Gated
DeltaNet states, from the decode tree's cache bytes that do not grow with the context, equal to the
byte what transformers' cache holds after a prefill of one sequence, whatever its length; the
simulator's admission bounded by the state slots where they, not the keys and values, bind; the
decode step's time paying for each request's states; transformers' engine refused in one line.
"""

from __future__ import annotations

import pytest

from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.hf import from_hf_config
from costmodel.serving.replica import build_replica
from tests.test_hf_hybrid import GRANITE, MAMBA2
from tests.test_hf_nemotron_h import DENSE, MOE
from tests.test_hf_qwen_next import QWEN3_NEXT

CONFIGS = {"nemotron_h_dense": DENSE, "nemotron_h_moe": MOE, "granitemoehybrid": GRANITE, "qwen3_next": QWEN3_NEXT}
H100 = load_hardware("h100-sxm")

#: By hand for each config's linear mixers (bf16 conv states, fp32 recurrent states, b = 1):
#: Nemotron-H (6 heads of 5, state 7, 2 groups, conv 3): conv (30 + 28) x 3 x 2 = 348, ssm
#: 6 x 5 x 7 x 4 = 840, 1,188 a layer; DENSE "M*-M-*" and MOE "ME*EM-" have 2 Mamba layers.
#: Granite (6 heads of 16, state 7, 2 groups, conv 3): (96 + 28) x 3 x 2 = 744 + 6 x 16 x 7 x 4 =
#: 2,688, 3,432 a layer, 3 Mamba layers. Qwen3-Next (2 key heads of 10, 6 value heads of 14, conv
#: 3): (40 + 84) x 3 x 2 = 744 + 6 x 10 x 14 x 4 = 3,360, 4,104 a layer, 3 DeltaNet layers.
BY_HAND = {"nemotron_h_dense": 2 * 1_188, "nemotron_h_moe": 2 * 1_188, "granitemoehybrid": 3 * 3_432,
           "qwen3_next": 3 * 4_104}


def hf_state_bytes(fields: dict, n: int) -> int:
    """Bytes of the conv and recurrent states in transformers' cache after a bf16 prefill of one
    sequence of n random tokens (its keys and values left out)."""
    import torch
    import transformers

    config = transformers.AutoConfig.for_model(**fields)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
    with torch.no_grad():
        cache = model(torch.randint(0, fields["vocab_size"], (1, n)), use_cache=True).past_key_values
    states = [t for layer in cache.layers for t in (*getattr(layer, "conv_states", {}).values(),
                                                    *getattr(layer, "recurrent_states", {}).values())]
    return sum(t.numel() * t.element_size() for t in states if isinstance(t, torch.Tensor))


def setup_of(name: str, **options) -> dict:
    cfg = from_hf_config(dict(CONFIGS[name]), name=name)
    return build_replica(cfg, H100, dtype="bf16", **options)[2]


@pytest.mark.parametrize("name", CONFIGS)
def test_state_bytes_equal_transformers_cache_after_prefill(name):
    """Shorter than the conv (2 < K = 3: the cache pads) and longer (11): the same bytes. The static
    scheduler (transformers' generate) keeps transformers' layout; vLLM's is test_vllm_state_layout's."""
    ours = setup_of(name, scheduler="static")["kv_cache"]["state_bytes_per_request"]
    assert ours == BY_HAND[name] == hf_state_bytes(CONFIGS[name], 2) == hf_state_bytes(CONFIGS[name], 11)


def test_state_blocks_are_whole_blocks_of_keys_and_values():
    """DENSE keeps 2 layers x 2 x 2 KV heads x 10 x 2 bytes = 160 bytes a token: a block of 16
    tokens is 2,560 bytes, so its 1,304 bytes of vLLM-layout states (VLLM_AUTO) take 1 block; at
    block size 4 (640 bytes), 3 blocks."""
    kv = setup_of("nemotron_h_dense")["kv_cache"]
    assert (kv["kv_bytes_per_token"], kv["state_bytes_per_request"], kv["state_blocks_per_request"]) == (160, 1_304, 1)
    kv = setup_of("nemotron_h_dense", block_size=4)["kv_cache"]
    assert kv["state_blocks_per_request"] == 3
    assert kv["state_slots"] == kv["num_blocks"] // 4


def test_the_slots_not_the_keys_bind_admission():
    """Qwen3-Next's odd config at block size 4: 2 x 2 x 12 x 2 = 96 bytes a token (one attention
    layer), a block 384 bytes, its 6,528 bytes of vLLM-layout states 17 blocks. With 3 x 18 + 16 = 70 blocks, 8
    clients of 3-token prompts (one KV block each) and --max-num-seqs 8: the keys and values alone
    would let all 8 run (8 blocks), the slots let 3; a fourth waits until one finishes."""
    import costmodel

    cfg = from_hf_config(dict(QWEN3_NEXT), name="qwen3_next")
    options = dict(scheduler="vllm", block_size=4, max_num_seqs=8, max_batched_tokens=64, dtype="bf16")
    run = costmodel.serve(cfg, "h100-sxm", concurrency=8, requests=16, prompt="3", output="1",
                          num_blocks=70, **options)
    kv = run.setup["kv_cache"]
    assert (kv["kv_bytes_per_token"], kv["state_blocks_per_request"]) == (96, 17)
    assert run.summary()["batch"]["max_sequences"] == 3
    assert run.setup["prefix_caching"] is False and "mamba_cache_mode" in run.setup["prefix_caching_note"]
    roomy = costmodel.serve(cfg, "h100-sxm", concurrency=8, requests=16, prompt="3", output="1",
                            num_blocks=8 * 18, **options)
    assert roomy.summary()["batch"]["max_sequences"] == 8


def test_decode_step_pays_for_each_requests_states():
    """Each running request's states are read and written once a step (2 x 24,965,120 bytes for
    Nemotron 3 Nano in vLLM's layout: 23 Mamba-2 layers of 64 heads of 64, state 128, 8 groups,
    conv 4, 3 conv columns, bf16 SSM state): 14.9 us at the H100's bandwidth. At 500 sequences (every expert active, no new GEMM tile at 501) one more
    request adds that beside its 6,144 bytes a token of keys and values and its GEMM rows (5 us
    without the states: the tree's chunk phase reads one set of states per 128 tokens)."""
    import numpy as np

    from costmodel.api import load_model
    from costmodel.hardware import Efficiency

    cfg = load_model("nemotron-3-nano")
    _, step, setup = build_replica(cfg, H100, cuda_graphs="off")
    state = setup["kv_cache"]["state_bytes_per_request"]
    assert state == 23 * ((64 * 64 + 2 * 8 * 128) * 3 * 2 + 64 * 64 * 128 * 2) == 24_965_120
    traffic = 2 * state / (H100.bandwidth_bytes_per_s * Efficiency(**H100.efficiency).memory)
    ones, keys = np.ones(500, int), np.full(500, 1024)
    assert step.seconds(ones, keys) - step.step.seconds(ones, keys) == pytest.approx(500 * traffic, rel=1e-12)
    assert step.decode_run(keys, 2) - step.step.decode_run(keys, 2) == pytest.approx(500 * traffic, rel=1e-12)
    one_more = step.seconds(np.ones(501, int), np.full(501, 1024)) - step.seconds(ones, keys)
    assert 2 * state / H100.bandwidth_bytes_per_s <= one_more < 2 * traffic


def test_transformers_engine_and_a_stack_without_attention_are_refused(capsys):
    from tests.cli_run import run_main

    with pytest.raises(ConfigError, match="Invalid layer type"):
        setup_of("granitemoehybrid", scheduler="hf-fifo")
    with pytest.raises(ConfigError, match="no attention layer"):
        build_replica(from_hf_config(dict(MAMBA2), name="m"), H100, dtype="bf16")
    code, out, err = run_main(["serve", "--model", "nemotron-3-nano", "--rate", "2", "--scheduler",
                               "hf-prefill-first"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "linear_attention" in err
    with pytest.raises(ConfigError, match="recurrent states to the decode pool"):
        import costmodel

        costmodel.serve(from_hf_config(dict(QWEN3_NEXT), name="q"), rate=1, requests=2, disaggregate=(1, 1))


def test_tensor_and_pipeline_parallel_shares_of_the_states():
    """tp 2 splits Nemotron 3 Nano's 64 Mamba-2 heads and 8 groups (layout/split.py mamba_split, as
    vLLM's mamba2_state_shape divides conv_dim and num_heads by the tp size): in vLLM's layout
    23 x ((32 x 64 + 2 x 4 x 128) x 3 x 2 + 32 x 64 x 128 x 2) = 12,482,560 bytes a GPU; pp 2
    halves the layers' states (ceil). The sarathi scheduler's (transformers' layout) at tp 2:
    23 x ((32 x 64 + 2 x 4 x 128) x 4 x 2 + 32 x 64 x 128 x 4) = 24,682,496."""
    from costmodel.api import load_model

    cfg = load_model("nemotron-3-nano")
    tp2 = build_replica(cfg, H100, tp=2)[2]["kv_cache"]["state_bytes_per_request"]
    pp2 = build_replica(cfg, H100, pp=2)[2]["kv_cache"]["state_bytes_per_request"]
    assert tp2 == 23 * ((32 * 64 + 2 * 4 * 128) * 3 * 2 + 32 * 64 * 128 * 2) == 12_482_560 == pp2
    sarathi = build_replica(cfg, H100, tp=2, scheduler="sarathi")[2]["kv_cache"]["state_bytes_per_request"]
    assert sarathi == 23 * ((32 * 64 + 2 * 4 * 128) * 4 * 2 + 32 * 64 * 128 * 4) == 24_682_496


@pytest.mark.parametrize("name", ["llama3-8b", "gemma2-9b"])
def test_fp8_kv_scales_are_not_states(name):
    """An fp8 KV cache's per-layer K/V scales do not grow with the context, yet are no recurrent
    state: a model without Mamba-2 / Gated DeltaNet layers holds none (no state slots, no traffic)."""
    from costmodel.api import load_model

    cache = build_replica(load_model(name), H100, kv_dtype="fp8")[2]["kv_cache"]
    assert "state_bytes_per_request" not in cache


def test_states_do_not_change_with_the_kv_dtype():
    """Nemotron-3-Nano's Mamba-2 states (vLLM's layout: bf16 conv and SSM) are the same with an fp8
    KV cache (vLLM's --mamba-cache-dtype stays auto)."""
    from costmodel.api import load_model

    cfg = load_model("nemotron-3-nano")
    states = [build_replica(cfg, H100, **kv)[2]["kv_cache"]["state_bytes_per_request"]
              for kv in ({}, {"kv_dtype": "fp8"})]
    assert states == [24_965_120, 24_965_120]


def test_state_slots_come_from_the_replica_pool():
    """--num-blocks 600: Nemotron-3-Nano's 254 state blocks and a KV block fit 600 // 255 = 2 requests,
    not the memory-sized pool's slots; the JSON, the text and the pool-use line say so."""
    import json

    from click.testing import CliRunner

    import cli

    args = ["serve", "-m", "nemotron-3-nano", "--rate", "2", "--requests", "10", "--num-blocks", "600"]
    text = CliRunner().invoke(cli.cli, args)
    assert text.exit_code == 0, text.output
    assert "254 blocks each while it runs: at most 2 requests at once" in text.output
    assert "pool blocks (KV and states) in use" in text.output and "KV blocks in use" not in text.output
    data = CliRunner().invoke(cli.cli, [*args, "--json"])
    kv = json.loads(data.output)["setup"]["kv_cache"]
    assert (kv["state_blocks_per_request"], kv["state_slots"]) == (254, 2)
