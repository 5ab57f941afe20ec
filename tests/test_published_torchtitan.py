"""torchtitan's rows added in issue 18's CP round (wt_cp), typed here from their sources as
tests/test_published_runs.py types the others: docs/performance.md at eaea6f6 Tables 2, 3 and 6
and benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md's vanilla-TP columns."""

from __future__ import annotations

import pytest

from costmodel.config import Workload
from tests.test_published_runs import _runs, check_stated

# (published tokens/s a GPU, tp, pp, dp, micro-batch, global batch, sequence, recomputation)
TORCHTITAN = {
    # Table 3's compiled rows; Table 2 (8B, 8 GPUs, local batch 1, full AC: FSDP 8/cp x CP cp at
    # 32,768 cp tokens); Table 6 (405B, TP 8, PP 8, 1F1B, local batch 8 in 8 micro-batches of 1)
    "torchtitan llama3.1-8b fsdp compile 128 GPUs": (6514, 1, 1, 128, 2, 256, 8192, "torchtitan-op"),
    "torchtitan llama3.1-8b fsdp compile float8 128 GPUs": (8380, 1, 1, 128, 2, 256, 8192, "torchtitan-op"),
    "torchtitan llama3.1-8b fsdp8 cp1 32768 compile float8 8 GPUs": (3890, 1, 1, 8, 1, 8, 32768, "full"),
    "torchtitan llama3.1-8b fsdp4 cp2 65536 compile float8 8 GPUs": (2540, 1, 1, 4, 1, 4, 65536, "full"),
    "torchtitan llama3.1-8b fsdp2 cp4 131072 compile float8 8 GPUs": (1071, 1, 1, 2, 1, 2, 131072, "full"),
    "torchtitan llama3.1-8b fsdp1 cp8 262144 compile float8 8 GPUs": (548, 1, 1, 1, 1, 1, 262144, "full"),
    "torchtitan llama3.1-405b fsdp8 cp1 tp8 pp8 32768 1f1b compile float8 512 GPUs": (76, 8, 8, 8, 1, 64, 32768, "full"),
    "torchtitan llama3.1-405b fsdp4 cp2 tp8 pp8 65536 1f1b compile float8 512 GPUs": (47, 8, 8, 4, 1, 32, 65536, "full"),
    "torchtitan llama3.1-405b fsdp2 cp4 tp8 pp8 131072 1f1b compile float8 512 GPUs": (31, 8, 8, 2, 1, 16, 131072, "full"),
    "torchtitan llama3.1-405b fsdp1 cp8 tp8 pp8 262144 1f1b compile float8 512 GPUs": (16, 8, 8, 1, 1, 8, 262144, "full"),
    # torchtitan benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md, the Vanilla TP column: 70B FSDP 32
    # x TP 8, local batch 16, full AC; 8B FSDP 8 x TP 8, local batch 12, per op SAC
    "torchtitan-asynctp llama3.1-70b fsdp32 tp8 compile 256 GPUs": (597.3, 8, 1, 32, 16, 512, 8192, "full"),
    "torchtitan-asynctp llama3.1-70b fsdp32 tp8 compile float8 tensorwise 256 GPUs": (809.8, 8, 1, 32, 16, 512, 8192, "full"),
    "torchtitan-asynctp llama3.1-70b fsdp32 tp8 compile float8 rowwise 256 GPUs": (599.6, 8, 1, 32, 16, 512, 8192, "full"),
    "torchtitan-asynctp llama3.1-8b fsdp8 tp8 compile 64 GPUs": (4378, 8, 1, 8, 12, 96, 8192, "torchtitan-op"),
    "torchtitan-asynctp llama3.1-8b fsdp8 tp8 compile float8 tensorwise 64 GPUs": (5078.1, 8, 1, 8, 12, 96, 8192, "torchtitan-op"),
    "torchtitan-asynctp llama3.1-8b fsdp8 tp8 compile float8 rowwise 64 GPUs": (3708.5, 8, 1, 8, 12, 96, 8192, "torchtitan-op"),
}


@pytest.mark.parametrize("run_id", sorted(TORCHTITAN))
def test_each_torchtitan_row_is_expressed_as_its_source_states_it(run_id):
    check_stated(run_id, TORCHTITAN[run_id])


def test_the_cp_rows_hold_32768_tokens_a_rank_and_move_every_query_heads_keys():
    """Tables 2 and 6 grow the sequence with cp: every rank holds 32,768 tokens of one sequence
    (local batch 1); torchtitan's Llama repeats K and V before sdpa, so the source states
    cp_kv_heads repeated. Llama 3.1's sizes within 1% of 8B and 405B."""
    from costmodel.estimation import Estimate
    from reports.published_runs import train_setup

    runs, sources = _runs()
    assert sources["torchtitan"]["cp_kv_heads"] == "repeated"
    cp_rows = [run_id for run_id in TORCHTITAN if " cp" in run_id]
    assert len(cp_rows) == 8
    for run_id in cp_rows:
        estimate, _, _ = train_setup(runs[run_id], sources["torchtitan"])
        assert estimate.workload.seq_len // estimate.layout.cp == 32768
        assert estimate.layout.cp_kv_heads == "repeated"
        params = Estimate(estimate.cfg, Workload(seq_len=8)).total("params")
        assert params == pytest.approx(8e9 if "8b" in run_id else 405e9, rel=0.01)
