"""How a serving step's time is read (session 35, wt35_speed): the shortcuts that made `plan --serve --rate`
faster give the floats the plain rule gives. A step's context work is its decode sequences' table rows added in
running order, then its prefill chunks' rows (step_base.context_sums); the table is read once a step, a row not
filled yet reading NaN (kernel_steptime._decode_sum); the sampler's seconds are kept by rows (sampler.SamplerCost);
a search's KV sizings keep each figure by its tree, symbol values and tensor-parallel size (kvcache._sized)."""

from __future__ import annotations

import numpy as np
import pytest

import costmodel
from costmodel.hardware import load_hardware
from costmodel.serving import kvcache
from costmodel.serving.replica import build_replica
from costmodel.serving.sampler import sampler_cost
from costmodel.serving.steptime import StepTime

CONTEXTS = [700, 3, 5000, 64, 64, 129]


@pytest.fixture(scope="module")
def h100():
    return load_hardware("h100-sxm")


@pytest.fixture(scope="module")
def llama(h100):
    return StepTime(costmodel.load_model("llama3-8b"), h100)


def _in_running_order(step, contexts):
    """Each decode sequence's row (KernelStepTime._row at one query token), added one after another."""
    total = np.array(step._row(1, contexts[0]))
    for c in contexts[1:]:
        total = total + np.array(step._row(1, c))
    return total


def test_a_steps_decode_rows_add_in_running_order_then_its_chunk(llama):
    """A chunk at the step's end (sliced off) or among the decode rows (masked out): the same floats, the
    decode rows' sum in running order plus the chunk's row (256 new tokens against 768 keys)."""
    decode = _in_running_order(llama, CONTEXTS)
    chunk = np.array(llama._row(256, 768))
    at_end = llama.context_sums(np.array([1] * 6 + [256]), np.array(CONTEXTS + [768]))
    among = llama.context_sums(np.array([1, 1, 1, 256, 1, 1, 1]), np.array(CONTEXTS[:3] + [768] + CONTEXTS[3:]))
    assert at_end.tolist() == among.tolist() == (decode + chunk).tolist()
    only_decode = llama.context_sums(np.array([1] * 6), np.array(CONTEXTS))
    assert only_decode.tolist() == decode.tolist()
    # a chunk alone (no decode rows): its row
    assert llama.context_sums(np.array([256]), np.array([768])).tolist() == chunk.tolist()


def test_the_decode_table_reads_nan_until_a_step_asks_for_a_row(h100):
    """A fresh table is grown with NaN; a step fills the rows it asks for (and no other), and gives the same
    seconds as a model that filled them before."""
    cfg = costmodel.load_model("llama3-8b")
    fresh, filled = StepTime(cfg, h100), StepTime(cfg, h100)
    filled.seconds([1], [41])
    filled.seconds([1, 1], [40, 2000])
    first = fresh.seconds([1, 1, 1], [40, 2000, 41])
    assert np.isnan(fresh._decode_table[42]).all() and np.isnan(fresh._decode_table[1999]).all()
    assert not np.isnan(fresh._decode_table[[40, 41, 2000]]).any()
    assert sorted(np.flatnonzero(fresh._known)) == [40, 41, 2000]
    assert first == filled.seconds([1, 1, 1], [40, 2000, 41]) == fresh.seconds([1, 1, 1], [40, 2000, 41])
    # past the table's end (it holds 4,096 rows now): grown, the row filled
    assert fresh.seconds([1], [9000]) == StepTime(cfg, h100).seconds([1], [9000])
    run = fresh.decode_run([100, 200], 3)
    assert list(run) == [StepTime(cfg, h100).seconds([1, 1], [100 + i, 200 + i]) for i in range(3)]


def test_the_samplers_seconds_kept_by_rows_are_its_passes_launch_and_gather(h100, llama):
    """vLLM's random sampling at tp 2 on Llama 3 8B: each row count's seconds are computed once and are the
    passes' bytes at the bandwidth, the eager launch and the logits' all-gather; no rows, no time."""
    cfg = costmodel.load_model("llama3-8b")
    cost = sampler_cost(llama, "vllm", "random", cfg, h100, None, 2)
    expected = cost.pass_seconds(37) + cost.launch_s + cost.gather_seconds(37)
    assert cost.gather_seconds(37) > 0 and cost.seconds(37) == expected == cost.seconds(37)
    assert cost.seconds(38) > expected and cost.seconds(0) == 0.0
    assert sorted(cost._by_rows) == [0, 37, 38]


def test_kv_sizings_keep_a_figure_per_tree_values_and_tp(h100):
    """Llama 3 70B's blocks at tp 4 and tp 8 (each its own weights and KV heads a GPU), with the memo
    empty and warm: the same counts, and tp 8 holds more blocks than tp 4 (a shared figure would not)."""
    cfg = costmodel.load_model("llama3-70b")
    blocks = lambda tp: build_replica(cfg, h100, tp=tp, max_num_seqs=64, max_batched_tokens=2048)[2]["num_blocks"]  # noqa: E731
    kvcache._sized.cache_clear()
    cold = (blocks(4), blocks(8))
    filled = kvcache._sized.cache_info()
    assert filled.currsize == filled.misses > 0
    warm = (blocks(4), blocks(8))
    assert kvcache._sized.cache_info().misses == filled.misses  # warm: no figure computed again
    assert cold == warm and cold[1] > cold[0] > 0
