"""HybridEP's dispatch and combine at the rates NVIDIA measured them: the flex dispatcher on
--ep-dispatcher hybridep, on the GPUs DeepEP's hybrid-ep README times (kernel_facts.json
"hybridep_measured": H100 across 2, 4 and 8 nodes; B200 inside one 8-GPU node; GB200 over 8 to 36
ranks of an NVL72 rack).

Without this, HybridEP's exchange is the link rule (collectives.node_once_seconds: the copies to
other nodes at the inter-node link's rate plus the NVLink fan-out as an in-node all-to-all). With
it, one pass of `payload` bytes (each token once; half dispatched, half combined) takes

    copies x payload / 2 / dispatch rate + copies x payload / 2 / combine rate

as layout/experts.flex_seconds prices DeepEP's measured kernels: inside an NVLink domain copies is
the distinct ranks a token reaches, its own included (FlexCopies.ranks: the README's NVLink bytes,
the tokens a rank receives); across nodes the distinct nodes, its own included (FlexCopies.nodes:
the README's IB bytes), plus the link rule's one latency. The rates are log-linear in the group's
ranks (across nodes: its nodes) between the measured points, the end values outside them.
Stated assumptions (the fact's source): the BF16 dispatch and the combine through the Torch API at
the most SMs measured; the H100 figures hold where the hardware file's inter-node link is the 400
Gb/s card the fact names; a GPU or a group the README does not time keeps the link rule.
"""

from __future__ import annotations

from typing import Any

from ..kernel_rates import kernel_facts
from .deepep_internode import measured_rates


def facts() -> dict[str, Any]:
    return kernel_facts()["hybridep_measured"]


def hybridep_rates(layout: Any, hardware: Any, local: int) -> dict[str, Any] | None:
    """The measured dispatch and combine rates of a hybridep group with `local` of its ranks a node
    (NVLink domain): the NVLink-domain figures where the group fits one domain of a measured GPU, the
    inter-node figures where it spans nodes of a measured GPU with the measured card; None elsewhere
    (the link rule)."""
    if layout.ep_dispatcher != "hybridep" or layout.ep <= 1:
        return None
    fact = facts()
    if layout.ep_span <= hardware.gpus_per_node:
        entry = fact["nvlink_domain"].get(hardware.network_name)
        return None if entry is None else measured_rates(entry, layout.ep, 1, "ranks")
    entry = fact["internode"].get(hardware.network_name)
    if entry is None or hardware.inter_node_bandwidth_bytes_per_s != float(entry["nic_bytes_per_s"]):
        return None
    return measured_rates(entry, max(1, layout.ep // max(local, 1)), int(entry["ranks_a_node"]), "nodes")
