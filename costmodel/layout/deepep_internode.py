"""DeepEP's internode normal kernels at the rate DeepSeek measured them: the flex dispatcher on
--ep-dispatcher deepep where the expert-parallel group spans more than one node (NVLink domain).

Without this, such a dispatch or combine is charged as two transfers one after the other
(collectives.node_once_seconds): the token's copies to other nodes at the inter-node link's rule
(the NIC at nccl_facts' 73%, 36.5 GB/s on a 400 Gb/s card) plus the NVLink forwarding as an
all-to-all inside the node. DeepEP's kernel pipelines the two (deepseek-ai/DeepEP
csrc/kernels/legacy/internode.cu: RDMA senders, NVLink forwarders and receivers are warps of one
kernel) and DeepSeek published its time (kernel_facts.json "deepep_internode": H800 with one CX7
400 Gb/s card a GPU, 8 GPUs a node, 4,096 tokens of 7,168, top-8 experts): 43 / 43 GB/s dispatch /
combine at EP 16 (2 nodes), 58 / 57 at EP 32 (4 nodes), 51 / 50 at EP 64 (8 nodes), each the bytes
DeepEP's test divides, the distinct nodes a token's experts are on, its own included, x hidden x
element bytes, over the kernel's time. So here one pass of `payload` bytes (each token once; half
dispatched, half combined, as layout/experts.flex_seconds counts the NVLink-domain rates) takes

    payload x nodes / 2 / dispatch rate + payload x nodes / 2 / combine rate

with nodes the expected distinct nodes of a token (layout/experts.py flex_copies, the model's own
routing) and the rates log-linear in the group's nodes between the measured 2, 4 and 8 (the end
values outside). Stated assumptions: the rates are per NIC, so they hold for any GPU with the same
400 Gb/s card a GPU (the hardware file's inter-node link equal to the fact's nic_bytes_per_s; another
card keeps the link rule), the H800's slower NVLink (160 GB/s) included in the figures as measured,
and the group's ranks a node other than 8 (under tensor parallelism) read by its nodes; Megatron-Core's bf16 dispatch
moves its bytes at the rate measured for DeepEP's FP8 dispatch (bytes over the same card); the
rows' SMs (Megatron-Core's default 20, nccl_facts.json flex_dispatcher_sms) against the table's 24
are not scaled (no internode figure by SMs is published); the notify kernel and the host's wait for
the received counts are not in the figure (the host sync is layout/host_syncs.py's).
"""

from __future__ import annotations

from typing import Any

from ..kernel_rates import kernel_facts, log_linear

#: DeepEP's internode test runs 8 ranks a node (tests/legacy/test_internode.py: num_local_ranks == 8),
#: so the table's EP 16, 32 and 64 are 2, 4 and 8 nodes.
MEASURED_RANKS_A_NODE = 8


def facts() -> dict[str, Any]:
    return kernel_facts()["deepep_internode"]


def measured_rates(entry: dict[str, Any], at: int, per: int, copies: str) -> dict[str, Any]:
    """The dispatch and combine rates of a measured table by EP ranks (`entry`'s "dispatch_bytes_per_s" and
    "combine_bytes_per_s") read at `at` units of `per` ranks (per = the ranks a node it was measured at: nodes;
    1: ranks), log-linear between the measured points, the end values outside; `copies` names the bytes they
    divide (experts.flex_seconds). DeepEP's internode kernels and HybridEP's (layout/hybridep_rates.py) read
    theirs here."""
    def points(table: dict[str, float]) -> tuple[tuple[int, float], ...]:
        return tuple(sorted((int(ranks) // per, float(rate)) for ranks, rate in table.items()))

    return {"dispatch_bytes_per_s": log_linear(points(entry["dispatch_bytes_per_s"]), at),
            "combine_bytes_per_s": log_linear(points(entry["combine_bytes_per_s"]), at), "copies": copies}


def internode_rates(layout: Any, hardware: Any, local: int) -> dict[str, Any] | None:
    """The measured dispatch and combine rates for a deepep group spanning nodes of `local` of its
    ranks each, on a hardware whose inter-node link is the measured card's; None elsewhere (the
    NVLink-domain rates, HybridEP, the all-to-all dispatcher, another card: the existing rules)."""
    fact = facts()
    if layout.ep_dispatcher != "deepep" or layout.ep_span <= hardware.gpus_per_node:
        return None
    if hardware.inter_node_bandwidth_bytes_per_s != float(fact["nic_bytes_per_s"]):
        return None
    return measured_rates(fact, max(1, layout.ep // max(local, 1)), MEASURED_RANKS_A_NODE, "nodes")
