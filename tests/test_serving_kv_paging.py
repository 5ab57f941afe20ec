"""Layer-group paging of the KV cache (costmodel/serving/kv_paging.py): the blocks a sequence
holds per group as vLLM v1's hybrid KV cache manager and transformers' sliding allocator count
them, vLLM's grouping of layers, the pool's blocks from the tree's bytes, and a serve run's capacity."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from costmodel.config import ConfigError
from costmodel.presets import load_preset
from costmodel.serving.kv_paging import CHUNKED, FULL, SLIDING, Paging, kv_paging
from costmodel.serving.kvcache import BlockPool
from costmodel.serving.scheduler_state import Sequence
from costmodel.serving.schedulers import VLLMScheduler
from costmodel.serving.workload import Request

# gpt-oss's shape: one full and one sliding table of window 128, blocks of 16 tokens
VLLM = Paging("vllm", 16, ((FULL, None), (SLIDING, 128)), 18, (18, 18))
HF = Paging("transformers", 16, ((SLIDING, 128), (FULL, None)), 18, (18, 18))


def test_vllm_window_128_block_16_at_300_tokens() -> None:
    """vLLM (single_type_kv_cache_manager.py): after computing 300 tokens, the allocation for the
    301st frees the blocks before the window: skipped = 300 - 128 + 1 = 173 tokens, 173 // 16 = 10
    blocks of the ceil(301 / 16) = 19 in the table; the sliding group holds 9, the full one 19."""
    assert VLLM.by_table(300, 301) == [19, 9]
    assert VLLM.held(300, 301) == 28
    # while a single chunk prefills the 300 tokens, nothing is computed yet: all 19 are held
    assert VLLM.by_table(0, 300) == [19, 19]
    # the window is 128 tokens + the block the next token starts: 127 tokens before it skip nothing
    assert VLLM.by_table(127, 128) == [8, 8]
    assert VLLM.by_table(144, 145) == [10, 9]  # 144 - 127 = 17 skipped: one block


def test_transformers_window_128_block_16_at_300_tokens() -> None:
    """transformers (cache_allocators/sliding_attention.py): a ring buffer of
    ceil(min(t, 128) / 16) = 8 blocks whatever was computed; the full allocator 19."""
    assert HF.by_table(300, 301) == [8, 19]
    assert HF.by_table(0, 300) == [8, 19]
    assert HF.held(0, 100) == 7 + 7


def test_vllm_chunked_local_attention() -> None:
    """ChunkedLocalAttentionManager: the tokens before the current chunk are skipped; chunk 8192,
    9000 computed: 8192 tokens = 512 blocks of the ceil(9001 / 16) = 563, so 51 held."""
    paging = Paging("vllm", 16, ((FULL, None), (CHUNKED, 8192)), 12, (12, 36))
    assert paging.by_table(9000, 9001) == [563, 51]
    assert paging.by_table(8191, 8192) == [512, 512]
    assert paging.by_table(8192, 8193) == [513, 1]


@pytest.mark.parametrize("name, tables, layers", [
    ("gpt-oss-120b", ((FULL, None), (SLIDING, 128)), 18),  # 18 + 18
    ("gemma3-27b", ((FULL, None),) + ((SLIDING, 1024),) * 6, 10),  # 10 full, 52 sliding: ceil(52 / 10)
    ("llama4-scout", ((FULL, None),) + ((CHUNKED, 8192),) * 3, 12),  # 12 full, 36 chunked
    ("mistral-7b", ((SLIDING, 4096),), 32),  # every layer slides: one group
])
def test_vllm_groups_from_presets(name: str, tables: tuple, layers: int) -> None:
    """kv_cache_utils.py _get_kv_cache_groups_uniform_page_size: groups of the smaller layer count."""
    paging = kv_paging(load_preset(name), "vllm", 16)
    assert (paging.tables, paging.layers_per_block) == (tables, layers)


def test_vllm_group_size_rule_of_one_and_a_half() -> None:
    """12 sliding + 13 full: 13 < 1.5 x 12, so groups of 13 (12 sliding padded to 13): 2 tables;
    10 + 20: groups of 10, 3 tables."""
    cfg = SimpleNamespace(name="t", n_decoder_layers=25, n_window_layers=12, sliding_window=64, chunked_window=False)
    paging = kv_paging(cfg, "vllm", 16)
    assert (len(paging.tables), paging.layers_per_block) == (2, 13)
    cfg = SimpleNamespace(name="t", n_decoder_layers=30, n_window_layers=20, sliding_window=64, chunked_window=False)
    paging = kv_paging(cfg, "vllm", 16)
    assert (len(paging.tables), paging.layers_per_block) == (3, 10)


def test_full_models_and_other_schedulers_are_paged_as_before() -> None:
    assert kv_paging(load_preset("llama3-8b"), "vllm", 16) is None
    for scheduler in ("sarathi", "orca", "static", "vllm-v0"):
        assert kv_paging(load_preset("gpt-oss-120b"), scheduler, 16) is None


def test_transformers_refusals() -> None:
    with pytest.raises(ConfigError, match="chunked attention"):
        kv_paging(load_preset("llama4-scout"), "hf-fifo", 16)
    with pytest.raises(ConfigError, match="sectors"):
        kv_paging(load_preset("gemma3-27b"), "hf-prefill-first", 16)
    assert kv_paging(load_preset("gpt-oss-20b"), "hf-fifo", 16).tables == ((SLIDING, 128), (FULL, None))


def test_room_stops_before_a_block_leaves_the_window() -> None:
    """Decode steps from 200 computed (13 blocks allocated for 201 tokens = 208 slots): a new
    block at 208; the window's next skipped block at (73 // 16 + 1) * 16 + 127 = 207."""
    held = VLLM.held(200, 201)
    assert VLLM.room(200, 201, held) == 7
    assert VLLM.room(200, 201, held + 1) == 0  # blocks not yet freed: allocate first
    assert HF.room(200, 201, HF.held(0, 201)) == 8  # no frees: only the full table's new block


def _vllm_run(paging, steady: bool, blocks: int):
    from costmodel.serving.engine import simulate

    class Scheduler(VLLMScheduler):
        steady_decode = steady

    requests = [Request(i, 0.3 * i, 200 + 37 * i, 150 + 11 * i) for i in range(12)]
    pool = BlockPool(blocks, 16, paging)
    one_step = lambda query, keys, emitting: 0.05  # noqa: E731
    return simulate(requests, Scheduler(pool, 8, 256), one_step, 4096)


@pytest.mark.parametrize("blocks", [120, 400])
def test_steady_decode_advance_equals_step_by_step(blocks: int) -> None:
    """The event loop's several-steps-at-once advance (engine._steady_steps, bounded by room)
    gives the schedule the step-by-step loop gives, free blocks included, with blocks leaving
    the window and, with 120 blocks, preemptions."""
    fast, slow = _vllm_run(VLLM, True, blocks), _vllm_run(VLLM, False, blocks)
    assert fast.schedule() == slow.schedule()
    if blocks == 120:
        assert sum(step.preempted for step in slow.steps) > 0


def test_a_sequence_frees_its_window_as_it_decodes() -> None:
    pool = BlockPool(100, 16, VLLM)
    scheduler = VLLMScheduler(pool, 4, 512)
    sequence = Sequence(Request(0, 0.0, 300, 10))
    assert scheduler.allocate(sequence, 300) and sequence.blocks == 38 and pool.free == 62
    sequence.computed = 300
    assert scheduler.allocate(sequence, 301) and sequence.blocks == 28 and pool.free == 72


def test_serve_capacity_gpt_oss_doubles() -> None:
    """gpt-oss-120b (mxfp4 weights) on an H100: vLLM's KV budget in blocks of 18 layers, not 36: twice
    the blocks (10,306,838,860 B // 589,824 = 17,474 against // 1,179,648 = 8,737: floor(81,117 MiB x
    0.9) less the 512 MiB reserve, the weights and vLLM v1's profile-run peak, the logits of its 1,024
    sampled rows and the 8,192 x 2,880 hidden states); sarathi, paged whole, sizes its peak as the
    logits of all 8,192 positions (3,294,691,584 B): 6,333 blocks of 36 layers. A request of 8192 +
    512 tokens holds 544 + 9 of them, not 544 of twice the size."""
    from costmodel.api import load_model
    from costmodel.hardware import load_hardware
    from costmodel.serving.replica import build_replica

    cfg, hardware = load_model("gpt-oss-120b"), load_hardware("h100-sxm")
    _, _, paged = build_replica(cfg, hardware, weight_dtype="mxfp4")
    _, _, full = build_replica(cfg, hardware, weight_dtype="mxfp4", scheduler="sarathi", max_batched_tokens=8192)
    budget = paged["kv_cache"]["kv_budget_bytes"]
    assert paged["kv_cache"]["activation_bytes"] == 1024 * 201_088 * 2 + 8192 * 2880 * 2 + 65_792 == 459_079_936
    assert budget == 85_057_339_392 * 9 // 10 - 536_870_912 - 65_248_815_744 - 459_079_936 == 10_306_838_860
    assert full["kv_cache"]["kv_budget_bytes"] == budget + 459_079_936 - 3_294_691_584
    assert paged["kv_cache"]["paged_block_bytes"] == 18 * 2048 * 16 == 589_824
    assert (paged["num_blocks"], budget // 1_179_648, full["num_blocks"]) == (17_474, 8_737, 6_333)
    assert VLLM.held(8191 + 511, 8192 + 511) == 544 + 9


def test_serve_names_the_layer_groups() -> None:
    """The setup and serve's text name the groups and a block's bytes: gpt-oss-20b, 12 full + 12
    sliding layers of 64 x 8 x 2 x 2 = 2,048 B per token each; a block of 12 layers and 16 tokens
    is 393,216 B. A model without windows has neither key."""
    import costmodel
    from reports.serving import render_serve

    run = costmodel.serve("gpt-oss-20b", "h100-sxm", rate=1.0, requests=3, prompt="300", output="4")
    assert run.setup["kv_paging"] == "vllm layer groups: 1 full, 1 sliding 128; a block holds 12 layers"
    assert run.setup["kv_cache"]["paged_block_bytes"] == 12 * 2048 * 16 == 393_216
    assert "vllm layer groups: 1 full, 1 sliding 128; a block holds 12 layers (393,216 B per block per GPU)" \
        in render_serve(run.summary())
    plain = costmodel.serve("llama3.2-1b", "h100-sxm", rate=1.0, requests=3, prompt="300", output="4")
    assert "kv_paging" not in plain.setup and "paged_block_bytes" not in plain.setup["kv_cache"]
