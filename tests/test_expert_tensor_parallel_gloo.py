"""Expert tensor parallelism at 1 < etp < tp and at etp > tp, measured on gloo (wt42_etp): four ranks as one
expert grid of etp 2 x ep 2 (validate/distributed/expert_tensor_parallel.py, Megatron-Core's dispatcher
pattern), beside the attention's tp 4 (each rank its sequence-parallel shard of a shared sequence) or tp 1
(each rank its own sequences). The model's layout at the same sizes gives each rank's expert bytes, the
gather and reduce-scatter over the expert-TP group, and the all-to-all, exactly, with the measured tokens
per expert as the load (costmodel/layout/experts.py, "Expert tensor parallelism"). About 40 s a case."""

from __future__ import annotations

import pytest

from costmodel.config import Workload
from costmodel.layout import Layout, ParallelEstimate


def _payload(result: dict, group: str, kinds: tuple[str, ...], dtype: str | None = None) -> int:
    return sum(r["payload"] for r in result["records"]
               if r["group"] == group and r["kind"] in kinds and (dtype is None or r["dtype"] == dtype))


@pytest.mark.slow
@pytest.mark.parametrize("tp", [4, 1])
def test_an_expert_tensor_parallel_moe_layer_on_gloo_moves_what_the_model_says(tp):
    """The world is one expert grid (expert_data_parallel_size 1), so the ETP group holding the most loaded
    experts gathers every slot routed to them: etp S f rows, f from the global counts. Per rank: E / ep = 2
    experts of 3 x 16 x 24 / 2 fp32 (4,608 bytes); the gather (etp broadcasts, their buffers the
    all-gather's output) and the reduce-scatter each etp S f d e forward and again backward, as the model's
    `etp` group; the all-to-all of the ETP pair together etp times the model's most loaded rank's (each
    member sends its own S slots, and the two receive etp S f between them)."""
    from costmodel.hf import from_hf_config
    from validate.distributed.experts import ExpertCase
    from validate.distributed.expert_tensor_parallel import measure_expert_tensor_parallel
    from validate.distributed.launch import run_gloo

    case = ExpertCase(seq_len=12, tp=tp)
    results = run_gloo(measure_expert_tensor_parallel, 4, case, 2, 2, timeout_s=240)
    counts = tuple(results[0]["counts"])
    assert sum(counts) == 4 * case.batch * (case.seq_len // tp) * case.k
    tiny = dict(model_type="mixtral", hidden_size=16, intermediate_size=24, num_local_experts=4,
                num_experts_per_tok=2, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=4,
                vocab_size=32, max_position_embeddings=64, tie_word_embeddings=False)
    cfg = from_hf_config(tiny, "tiny-moe")
    workload = Workload(seq_len=case.seq_len, batch=case.batch, dtype="fp32", precision="pure", expert_load=counts)
    layout = Layout(tp=tp, sp=tp > 1, dp=4 // tp, ep=2, etp=2, framework="megatron")
    rank = ParallelEstimate(cfg, workload, layout)
    key = next(k for k in rank.structure["layers"])
    assert {r["expert_bytes"] for r in results} == {4 * rank.part(key, "expert_params") // 2} == {2 * 3 * 16 * 12 * 4}
    moved = rank.to_dict()["communication"]
    gathered = [_payload(r, "etp", ("broadcast",), "float32") for r in results]
    scattered = [_payload(r, "etp", ("reduce_scatter",), "float32") for r in results]
    assert moved["etp"] == {"all_gather": max(gathered), "reduce_scatter": max(scattered)}
    hottest = gathered.index(max(gathered))
    assert (hottest // 2) % 2 == rank.load.rank and gathered[hottest] == gathered[hottest + 1]  # the pair alike
    pair = [_payload(r, "ep", ("all_to_all",)) for r in results[hottest:hottest + 2]]
    assert sum(pair) == 2 * moved["ep"]["all_to_all"]
