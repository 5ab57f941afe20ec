"""Collectives' time: alpha + beta per collective with its algorithm factor, at the bus bandwidth
NCCL achieves at that message size (costmodel/nccl_facts.json), hierarchical across nodes.

- Within a node, a hardware with a measured busbw curve (A100 and H100/H200 NVSwitch nodes, and
  RCCL's on the MI300X's Infinity Fabric) takes
  its time from the curve: time = payload x factor / busbw(payload), busbw interpolated in
  log(bytes) between the measured sizes (the curve includes each call's latency). Each collective
  takes its own curve where one is measured (an H100/H200 node's all-gather and reduce-scatter
  run NCCL's ring, 361-363 GB/s at 16 GiB, while its all-reduce runs NVLS, 482 GB/s), else the
  node's all-reduce curve (stated: the A100 has no NVLS, and no other curve was found). The curve was
  measured on 8 ranks; NCCL's busbw is normalised to be independent of the rank count for ring
  algorithms, so smaller groups use it as it is (stated) where a switch joins the node; on a full
  mesh (the MI300X's xGMI, nccl_facts.json "full_mesh") a group has only its own links (mesh_links).
- A cluster measured inside one of its nodes (nccl_facts.json cluster_busbw "in_node": KempnerForge's
  4x H200 nodes, whose TP all-gathers and reduce-scatters its own profile times at 0.54 and 0.46 of
  the NVSwitch curve) scales the curve by that share for a group of the measured size
  (in_node_fraction).
- Elsewhere: alpha + beta, collective_latency_s per call plus payload x factor / (link x 0.8),
  the ~80% of the unidirectional spec collectives reach; on a node whose GPUs meet over PCIe only
  (interconnect intra_node_fabric "pcie"), a ring collective's alpha is NCCL's own tuning model's for
  a PCIe ring of the group's size in its fastest protocol (pcie_ring_seconds: LL, 6.6 us + 1.0 us a
  step at half the bandwidth, or Simple, 8.4 + 5.7 us a step), not the flat collective_latency_s
  (call_seconds, which the serving roofline reads too).
- A group that spans nodes runs hierarchically (NCCL's tree/ring over nodes): reduce-scatter
  within the node, the all-reduce of each GPU's 1/g share between the nodes at 73% of the NIC's
  bandwidth (a published 4-node measurement), all-gather within the node. The crossing's latency
  is NCCL's tuning model's (nccl_facts.json "inter_node_latency"): per step, a ring over N nodes
  pays 2(N-1) (all-reduce) or N-1 network steps and the in-node steps each share takes, in the
  fastest protocol NCCL enables (Simple, LL128 on NVSwitch nodes, LL: ring_seconds); an all-reduce
  may run as NCCL's tree (2 log2 N network steps at its own bandwidth, Simple) and takes the
  faster, as NCCL's tuner does (between_nodes).
- Where a host holds several NVLink domains (interconnect gpus_per_host: the A100 PCIe's bridged pairs), NCCL's
  nodes are the hosts: a ring collective inside the host is one ring through its GPUs at the PCIe link
  (host_ring), and past the host the hosts are the nodes of the hierarchy above, their in-node calls host_ring's
  and their steps at NCCL's PCI latency (session 45: before, the pairs were the nodes, which priced 8 GPUs
  below 4).
- The all-reduce's code is a stated choice (costmodel/spec.ALL_REDUCES, Layout.all_reduce): NCCL's
  (the default), or PyTorch's IntraNodeComm (ENABLE_INTRA_NODE_COMM=1), which runs a bf16
  all-reduce inside a node as its own one-shot kernel up to 256 KiB and two-shot up to 10 MiB,
  NCCL's above: alpha + beta, a published per-call latency plus the bytes each rank reads from
  its peers at 80% of the link (intra_node_all_reduce). A group that spans nodes runs NCCL's, and
  so does a tensor of another dtype (fp16 activations, fp32 gradients): PyTorch falls back to NCCL
  for it (nccl_facts.json "dtypes"), so the caller states each all-reduce's dtype. Or vLLM's custom
  all-reduce ("vllm-custom", the serving engines' and published vLLM rows' choice by engine_all_reduce):
  2, 4, 6 or 8 GPUs that NVLink joins, calls up to 8 MiB, timed on the measured H100 latency-by-size
  curve (custom_all_reduce), NCCL's otherwise; or TensorRT-LLM's own plugin kernel ("trtllm-custom", its
  0.8-0.11 releases' default), the same rule on its own facts (workspace, switch, measured curve).
Factors: all-reduce 2(n-1)/n, all-gather, reduce-scatter and all-to-all (n-1)/n (payload: the
whole tensor), send/recv 1. An all-to-all inside a node takes the node's busbw curve (or link) as the
others do, capped at nccl-tests' alltoall busbw where NVIDIA publishes one (nccl_facts.json
all_to_all_peak_busbw, GTC25 S72583: A100 210, H100 320, B200 and GB200 640 GB/s; it runs no NVLS,
so the H100 node's 482 GB/s all-reduce curve overstated it 1.5x); across nodes, the share bound for
other nodes crosses the NIC at the inter-node rate and the rest moves inside the node. No torch here.
"""

from __future__ import annotations

import bisect
import json
import math
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from .hardware import Hardware

FACTS_PATH = Path(__file__).resolve().parent / "nccl_facts.json"


@lru_cache(maxsize=None)
def nccl_facts() -> dict[str, Any]:
    return json.loads(FACTS_PATH.read_text())


def holds_on(fact: dict[str, Any], network: str) -> bool:
    """Whether a fact of nccl_facts.json holds on `network`'s nodes (Hardware.network_name: the
    preset whose measured collectives a GPU's nodes share): its "hardware" list names it; null:
    every network."""
    return fact["hardware"] is None or network in fact["hardware"]


def fact_for(facts: Iterable[dict[str, Any]], network: str) -> dict[str, Any] | None:
    """The first of a list of facts (a busbw curve, an all-to-all ceiling, one per set of presets)
    that holds on `network` (holds_on), or None."""
    return next((fact for fact in facts if holds_on(fact, network)), None)


def node_link(hardware: Hardware, ranks: int) -> float:
    """The bandwidth collectives reach on the links of a group of `ranks` inside a node: the link's
    at nccl_facts.json "link_efficiency" (the ~80% of the unidirectional spec they reach)."""
    within = min(ranks, hardware.gpus_per_node)  # the group, as the line a missing bandwidth gets names it
    return hardware.link(within) * float(nccl_facts()["link_efficiency"]["value"])


def inter_node_link(hardware: Hardware, span: int) -> float:
    """The bandwidth a group spanning `span` GPUs reaches between nodes: the NIC's at nccl_facts.json
    "inter_node_efficiency" (73%, a published 4-node measurement)."""
    return hardware.link(span) * float(nccl_facts()["inter_node_efficiency"]["value"])


def ring_factor(kind: str, ranks: int) -> float:
    if kind in ("send", "recv"):
        return 1.0
    if ranks <= 1:
        return 0.0
    return 2 * (ranks - 1) / ranks if kind == "all_reduce" else (ranks - 1) / ranks


def busbw_curve(hardware: Hardware, kind: str = "all_reduce") -> list[tuple[float, float]] | None:
    """The measured (bytes, busbw in bytes/s) points of `kind` on this hardware's node, if any:
    the collective's own curve (nccl_facts.json "all_gather_busbw", "reduce_scatter_busbw"), else
    the node's all-reduce curve."""
    return _curve(hardware.network_name, kind)


def curve_kind(hardware: Hardware, kind: str) -> str:
    """The collective whose measured curve busbw_curve reads for `kind`: its own, else the all-reduce."""
    return kind if fact_for(nccl_facts().get(f"{kind}_busbw", ()), hardware.network_name) else "all_reduce"


@lru_cache(maxsize=None)
def _curve(name: str, kind: str) -> list[tuple[float, float]] | None:
    for key in (f"{kind}_busbw", "all_reduce_busbw"):
        if curve := fact_for(nccl_facts().get(key, ()), name):
            return [(float(size), gbps * 1e9) for size, gbps in curve["points_bytes_gbps"]]
    return None


def interpolated_busbw(curve: list[tuple[float, float]], payload: float) -> float:
    """busbw at `payload` bytes: log-linear between measured sizes, the end values beyond them."""
    if payload <= curve[0][0]:
        # Below the smallest size the time is the smallest call's (latency-bound): busbw scales.
        return curve[0][1] * payload / curve[0][0]
    # the first measured size at or above the payload (sizes ascend, as nccl_facts.json's do):
    # found by bisection, since plan reads a curve some ten thousand times
    above = bisect.bisect_left(curve, payload, key=_size)
    if above == len(curve):
        return curve[-1][1]
    (s0, b0), (s1, b1) = curve[above - 1], curve[above]
    t = math.log(payload / s0) / math.log(s1 / s0)
    return b0 + t * (b1 - b0)


def _size(point: tuple[float, float]) -> float:
    return point[0]


def intra_node_all_reduce(hardware: Hardware, payload: float, ranks: int, dtype: str) -> float | None:
    """Seconds of one all-reduce of `payload` bytes of `dtype` over `ranks` GPUs of a node by
    PyTorch's IntraNodeComm, or None where PyTorch hands the call to NCCL (nccl_facts.json): its
    latency plus what each rank reads from its peers at the achievable link bandwidth; one-shot
    reads every peer's whole buffer, two-shot a 1/n share of each twice (reduce-scatter,
    all-gather). Only for the dtypes its kernels add (bf16), where NVLink joins every pair of the
    node's GPUs (its `hardware` list), for at most its max_ranks GPUs (8), up to its sizes."""
    facts = nccl_facts()["intra_node_all_reduce"]
    if dtype not in facts["dtypes"] or not holds_on(facts, hardware.network_name) or ranks > facts["max_ranks"]:
        return None  # NCCL's
    if payload <= facts["one_shot_max_bytes"]:
        read = (ranks - 1) * payload
    elif payload <= facts["two_shot_max_bytes"]:
        read = ring_factor("all_reduce", ranks) * payload
    else:
        return None
    return float(facts["latency_s"]) + read / node_link(hardware, ranks)


#: The engines' own all-reduce kernels (spec.ALL_REDUCES) and the nccl_facts.json entry of each one's facts.
CUSTOM_ALL_REDUCES = {"vllm-custom": "custom_all_reduce", "trtllm-custom": "trtllm_custom_all_reduce"}


def custom_all_reduce(hardware: Hardware, payload: float, ranks: int, kernel: str = "vllm-custom") -> float | None:
    """Seconds of one all-reduce of `payload` bytes over `ranks` GPUs of a node by an engine's own kernel
    (CUSTOM_ALL_REDUCES: vLLM's custom all-reduce, nccl_facts.json "custom_all_reduce", or TensorRT-LLM's
    plugin, "trtllm_custom_all_reduce"), or None where the engine hands the call to NCCL: a world size it has
    no kernel for, GPUs not joined pairwise by NVLink (intra_node_all_reduce's hardware list), a call above
    its buffer (vLLM's 8 MiB; TensorRT-LLM's workspace, 16 MB at 2 ranks, 8 MB above) or not a multiple of
    16 bytes. Timed from the kernel's measured H100 curve where the node has one (custom_curve_seconds), else
    the curve's smallest-size time for the ranks plus the bytes each rank reads from its peers at the
    achievable link bandwidth, one-shot or two-shot as the kernel switches."""
    facts = nccl_facts()[CUSTOM_ALL_REDUCES[kernel]]
    fabric = nccl_facts()["intra_node_all_reduce"]
    limit = facts["max_bytes"] if isinstance(facts["max_bytes"], int) \
        else facts["max_bytes"].get(str(ranks), facts["max_bytes"]["other"])
    if ranks not in facts["world_sizes"] or not holds_on(fabric, hardware.network_name) \
            or payload > limit or payload % 16:
        return None  # NCCL's
    curve = facts["latency_curve"]
    seconds = curve["seconds"][str(ranks if str(ranks) in curve["seconds"] else max(map(int, curve["seconds"])))]
    if holds_on(curve, hardware.network_name):
        return custom_curve_seconds(curve["sizes_bytes"], seconds, payload)
    one_shot_below = facts["one_shot_below_bytes"].get(str(min(r for r in (2, 4, 8) if r >= ranks)))
    read = (ranks - 1) * payload if one_shot_below is None or payload < one_shot_below \
        else ring_factor("all_reduce", ranks) * payload
    return seconds[0] + read / node_link(hardware, ranks)


def custom_curve_seconds(sizes: list[float], seconds: list[float], payload: float) -> float:
    """A call's time on a measured latency-by-size curve: linear in bytes between measured sizes, the
    smallest size's time below them (latency-bound), the last segment extended above them."""
    if payload <= sizes[0]:
        return seconds[0]
    above = min(bisect.bisect_left(sizes, payload), len(sizes) - 1)
    (s0, t0), (s1, t1) = (sizes[above - 1], seconds[above - 1]), (sizes[above], seconds[above])
    return t0 + (t1 - t0) * (payload - s0) / (s1 - s0)


def engine_all_reduce(engine: str | None, release: str | None = None, disabled: bool = False) -> str:
    """Whose all-reduce (spec.ALL_REDUCES) a serving engine runs inside a node at a release: vLLM's custom
    all-reduce for "vllm" from v0.3.0, save v0.3.1 to v0.4.0 where it was off by default (nccl_facts.json
    "custom_all_reduce" releases), unless its run disabled it (disable_custom_all_reduce); TensorRT-LLM's
    own ("trtllm-custom") for "tensorrt-llm" from 0.8.0, where trtllm-build's use_custom_all_reduce
    defaulted to enable, to before 0.12.0, where the knob went and an AUTO strategy (not modelled) took over
    (nccl_facts.json "trtllm_custom_all_reduce" releases; release None or outside those: NCCL's); NCCL's
    for any other engine and before those releases. release None: a current one. "sglang" runs vLLM's
    kernel at every release (imported from vLLM until its PR #2981, then its own
    TensorRT-LLM-derived copy, faster at small sizes, until PR #5079 took vLLM's kernel into sgl_kernel:
    nccl_facts.json "engines_source"). Whether the call itself runs it (fabric, size, ranks) is
    custom_all_reduce's."""
    if engine == "tensorrt-llm" and release is not None and not disabled:
        releases = nccl_facts()["trtllm_custom_all_reduce"]["releases"]
        inside = _release(releases["first"]) <= _release(release) < _release(releases["knob_removed"])
        return "trtllm-custom" if inside else "nccl"
    if engine not in ("vllm", "sglang") or disabled:
        return "nccl"
    if engine == "sglang":
        return "vllm-custom"
    if release is None:
        return "vllm-custom"
    releases = nccl_facts()["custom_all_reduce"]["releases"]
    first, (off_from, off_to) = _release(releases["first"]), map(_release, releases["off_by_default"])
    version = _release(release)
    return "nccl" if version < first or off_from <= version <= off_to else "vllm-custom"


def _release(text: str) -> tuple[int, ...]:
    """A release as pip writes it ("0.6.3", "v0.4.0.post1") as comparable numbers (0, 6, 3)."""
    parts = []
    for part in text.lstrip("v").split("."):
        digits = "".join(ch for ch in part if ch.isdigit()) if part[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
    if not parts:
        raise ValueError(f"a release must read like 0.6.3, got {text!r}.")
    return tuple(parts)


def within_node(hardware: Hardware, kind: str, payload: float, ranks: int, calls: int = 1,
                all_reduce: str = "nccl", dtype: str | None = None) -> float:
    """Seconds of `calls` equal collectives moving `payload` bytes in all, inside one node;
    all_reduce: whose code runs an all-reduce (costmodel/spec.ALL_REDUCES); dtype: the reduced
    tensor's, which decides whether IntraNodeComm takes it (needed with all_reduce "intra-node")."""
    factor = ring_factor(kind, ranks)
    if not payload or not factor:
        return 0.0
    if kind == "all_reduce" and all_reduce == "intra-node":
        if dtype is None:
            raise ValueError("an intra-node all-reduce needs its tensor's dtype (PyTorch runs bf16 only).")
        each = intra_node_all_reduce(hardware, payload / calls, ranks, dtype)
        if each is not None:
            return calls * each
    if kind == "all_reduce" and all_reduce in CUSTOM_ALL_REDUCES:
        each = custom_all_reduce(hardware, payload / calls, ranks, all_reduce)
        if each is not None:
            return calls * each
    links = mesh_links(hardware, kind, ranks)  # the share of a full mesh's links the group has, else 1
    measured = in_node_fraction(hardware, kind, ranks)  # a cluster's node measured below the curve, else 1
    curve = busbw_curve(hardware, kind)
    ceiling = all_to_all_ceiling(hardware) if kind == "all_to_all" else None
    if curve is not None:
        each = payload / calls
        # the node's curve read where each link carries the bytes this group puts on each of its links:
        # the curve's own collective's factor at the node's ranks (the all-reduce's where it stands in)
        node = each * factor / (links * ring_factor(curve_kind(hardware, kind), hardware.gpus_per_node)) \
            if links < 1 else each
        return calls * each * factor / min(links * measured * interpolated_busbw(curve, node), ceiling or math.inf)
    link = node_link(hardware, ranks) * links * measured
    return calls * call_seconds(hardware, kind, payload / calls, ranks, min(link, ceiling or math.inf))


def call_seconds(hardware: Hardware, kind: str, each: float, ranks: int, link: float) -> float:
    """One `kind` call of `each` bytes over `ranks` GPUs of one node at `link` bytes/s, where no measured
    curve times it: a PCIe ring's as NCCL's tuner times it (pcie_ring_seconds), else its ring bytes at the
    link plus the file's collective_latency_s. The one rule of a call's latency for the kernel model
    (within_node) and the serving roofline (serving/roofline_steptime.py)."""
    if (ring := pcie_ring_seconds(hardware, kind, each, ranks, link)) is not None:
        return ring
    return each * ring_factor(kind, ranks) / link + hardware.collective_latency_s


RING_STEPS = {"all_reduce": 2, "all_gather": 1, "reduce_scatter": 1}  # a ring's steps a rank beyond the first


def pcie_ring_seconds(hardware: Hardware, kind: str, each: float, ranks: int, link: float) -> float | None:
    """One all-reduce, all-gather or reduce-scatter call of `each` bytes over `ranks` GPUs of a node whose
    GPUs meet over PCIe only (the interconnect's intra_node_fabric "pcie"), as NCCL's tuner times a ring there
    and picks its fastest protocol (ncclTopoGetAlgoTime; nccl_facts.json "inter_node_latency", its tuning.cc
    constants): LL, 6.6 us + 1.0 us a step at half the bus bandwidth, or Simple, 8.4 us + 5.7 us a step at
    the bus bandwidth (LL128 is off where a ring crosses PCIe); steps 2(ranks - 1) for an all-reduce,
    ranks - 1 for the others; the bus bandwidth `link`, the link's achieved rate. LL's llMaxBw cap (39 GB/s
    and more in one node) is above PCIe's and not applied. None: another node or collective (the caller's
    collective_latency_s applies)."""
    if hardware.intra_node_fabric != "pcie" or kind not in RING_STEPS or ranks <= 1:
        return None
    return pcie_ring(kind, each, ranks, link)


def pcie_ring(kind: str, each: float, ranks: int, link: float) -> float:
    """pcie_ring_seconds' time of one ring call that crosses PCIe (kind in RING_STEPS, ranks > 1), on any node."""
    facts, us = nccl_facts()["inter_node_latency"], 1e-6
    ll, steps, moved = facts["ring_protocols"]["ll"], RING_STEPS[kind] * (ranks - 1), each * ring_factor(kind, ranks)
    simple = (facts["base_latency_us"]["ring"] + steps * facts["hw_latency_us"]["pci"]["ring"]) * us + moved / link
    return min(simple, (ll["base_latency_us"] + steps * ll["pci_ring_us"]) * us + moved / (ll["bandwidth_factor"] * link))


def in_node_fraction(hardware: Hardware, kind: str, ranks: int) -> float:
    """The share of the node's busbw curve a `kind` call over `ranks` GPUs of one node reaches on the
    cluster the hardware names, where that cluster was measured inside a node (nccl_facts.json
    cluster_busbw's "in_node": KempnerForge's 4x H200 nodes, its profile's TP all-gathers and
    reduce-scatters): the measured busbw over the curve's at the measured payload, taken to hold at
    every size (the curve's shape). 1 where the hardware names no such cluster, for a group of
    another size and for a collective not measured (none says how those run there)."""
    cluster = nccl_facts()["cluster_busbw"].get(hardware.cluster, {}) if hardware.cluster else {}
    point = cluster.get("in_node")
    if not point or kind not in point or ranks != point["ranks"]:
        return 1.0
    curve = busbw_curve(hardware, kind)
    reference = interpolated_busbw(curve, point["payload_bytes"]) if curve is not None else \
        node_link(hardware, ranks) * mesh_links(hardware, kind, ranks)
    return min(1.0, point[kind] * 1e9 / reference)


def all_to_all_ceiling(hardware: Hardware) -> float | None:
    """The all-to-all's measured busbw inside this hardware's node (nccl_facts.json
    all_to_all_peak_busbw: nccl-tests alltoall, NVIDIA GTC25 S72583), bytes/s, or None: an
    all-to-all runs no NVLS, so it never takes more than this from the node's curve or link."""
    point = fact_for(nccl_facts()["all_to_all_peak_busbw"]["points"], hardware.network_name)
    return None if point is None else point["gbps"] * 1e9


def mesh_links(hardware: Hardware, kind: str, ranks: int) -> float:
    """The share of a node's links a group of `ranks` inside it moves its bytes over: 1 where a
    switch joins the node (NVSwitch: every GPU's whole bandwidth reaches any peer); on a fully
    connected mesh (nccl_facts.json "full_mesh": the MI300X's xGMI, one link a pair of GPUs, no
    switch) g - 1 of each GPU's n - 1 links for a group of g, one for a send or receive."""
    per_node = hardware.gpus_per_node
    if not holds_on(nccl_facts()["full_mesh"], hardware.network_name) or per_node <= 2:
        return 1.0
    used = 1 if kind in ("send", "recv") else min(ranks, per_node) - 1
    return used / (per_node - 1)


def between_nodes(hardware: Hardware, kind: str, share: float, nodes: int, local: int, inter: float,
                  fabric: str | None = None) -> float:
    """Seconds of one call's crossing between `nodes` nodes, each GPU's `share` bytes (its 1/local of
    the call's payload) at `inter` bytes/s, as NCCL's tuning model composes it (nccl_facts.json
    "inter_node_latency"): a ring pays k(nodes - 1) network steps and the
    (local - 1) in-node steps each node's share takes beyond the in-node calls' own, k = 2 for an
    all-reduce, 1 for an all-gather or reduce-scatter; bytes x k(nodes - 1)/nodes. An all-reduce may
    run as a tree instead: 2 log2i(nodes) network steps, bytes x 2 / (.92 x NCCL's tree correction at
    the call's size); an all-gather or reduce-scatter with one GPU a node as PAT: log2i(nodes)
    network steps at 1/3.5 of 14 us, 2.8 us a rank, bytes / .75 (tree and PAT in Simple; a ring in
    the fastest protocol NCCL enables on the hardware, ring_seconds). The tuner runs the fastest. With
    one GPU a node no in-node call carries a base latency, so the crossing pays its algorithm's. fabric: the
    in-node hops' kind for NCCL's latency table ("nvlink" or "pci"; None: the hardware's, ring_seconds)."""
    facts = nccl_facts()["inter_node_latency"]
    us = 1e-6
    net = facts["hw_latency_us"]["net"]["ring" if local > 1 else "tree"] * us  # ppn 1: tree's (NCCL)
    base = facts["base_latency_us"] if local == 1 else {"ring": 0.0, "tree": 0.0, "pat": 0.0}
    k = 2 if kind == "all_reduce" else 1
    ring = min(ring_seconds(hardware, protocol, share, nodes, local, inter, k, fabric)
               for protocol in ring_protocols(hardware))
    if kind != "all_reduce":
        if local > 1:
            return ring
        pat = facts["pat"]  # one GPU a node: NCCL's PAT may run it
        logarithmic = (nodes.bit_length() - 1) * net / pat["net_divisor"] + nodes * pat["per_rank_us"] * us
        return min(ring, base["pat"] * us + logarithmic + share / (pat["bandwidth_factor"] * inter))
    log_size = int(share * local).bit_length() - 7  # NCCL's log2i(nBytes >> 6), nBytes the call's
    table = facts["tree_correction_simple"]
    correction = table[log_size] if 0 <= log_size < 23 else 1.0
    tree = base["tree"] * us + 2 * (nodes.bit_length() - 1) * facts["hw_latency_us"]["net"]["tree"] * us \
        + share * 2 / (facts["tree_bandwidth_factor"] * correction * inter)
    return min(ring, tree)


def ring_protocols(hardware: Hardware) -> tuple[str, ...]:
    """The protocols NCCL enables for a ring crossing nodes on this hardware: Simple and LL
    everywhere, LL128 on the NVSwitch nodes (nccl_facts.json inter_node_latency ring_protocols)."""
    extra = nccl_facts()["inter_node_latency"]["ring_protocols"]
    return ("simple",) + tuple(name for name, p in extra.items()
                               if holds_on(p, hardware.network_name))


def ring_seconds(hardware: Hardware, protocol: str, share: float, nodes: int, local: int, inter: float,
                 k: int, fabric: str | None = None) -> float:
    """Seconds of a ring's crossing between `nodes` nodes in one NCCL protocol (tuning.cc's
    latency + bytes / bandwidth): k(nodes - 1) network steps, each with the (local - 1) in-node steps
    its share takes beyond the in-node calls' own (a step max(the fabric's figure, the network
    overhead, x3 for Simple)), the base latency where one GPU a node leaves no in-node call to
    carry it, and the bytes at the protocol's share of `inter` (LL's capped at llMaxBw). fabric: the in-node
    hops' kind ("nvlink" or "pci"), by default NVLink where the hardware's GPUs share it (nccl_facts.json
    intra_node_all_reduce's list), else PCIe."""
    facts, us = nccl_facts()["inter_node_latency"], 1e-6
    if fabric is None:
        fabric = "nvlink" if holds_on(nccl_facts()["intra_node_all_reduce"], hardware.network_name) else "pci"
    if protocol == "simple":
        step = max(facts["hw_latency_us"][fabric]["ring"], 3 * facts["net_overhead_us"])
        net = facts["hw_latency_us"]["net"]["ring" if local > 1 else "tree"]
        base, rate = facts["base_latency_us"]["ring"], inter
    else:
        p = facts["ring_protocols"][protocol]
        step = max(p[f"{fabric}_ring_us"], facts["net_overhead_us"])
        net = p["net_ring_us" if local > 1 else "net_tree_us"]
        base, rate = p["base_latency_us"], p["bandwidth_factor"] * inter
        if "max_bus_gbps" in p:
            rate = min(rate, p["max_bus_gbps"]["2" if nodes <= 2 else "more"] * 1e9)
    latency = (base if local == 1 else 0.0) + k * (nodes - 1) * ((local - 1) * step + net)
    return latency * us + share * k * (nodes - 1) / nodes / rate


#: The calls inside each node of a hierarchical collective (reduce-scatter, the crossing, all-gather).
IN_NODE_STEPS = {"all_reduce": ("reduce_scatter", "all_gather"), "reduce_scatter": ("reduce_scatter",),
                 "all_gather": ("all_gather",)}


def host_ring(hardware: Hardware, kind: str, payload: float, ranks: int, span: int, calls: int = 1) -> float:
    """Seconds of `calls` ring collectives (kind in RING_STEPS) of `payload` bytes in all over `ranks` GPUs spanning
    `span` consecutive GPUs of one PCIe host whose NVLink domains are smaller (interconnect gpus_per_host: bridged pairs): NCCL's nodes are hosts,
    and inside one it runs a ring through every GPU of the group, which crosses PCIe between domains, a channel
    bounded by its slowest hop: the whole ring at the PCIe link, at the share of it a link inside a node reaches
    (node_link's), as a PCIe node's ring (pcie_ring_seconds). A group inside one domain is within_node's."""
    if span <= hardware.gpus_per_node:
        return within_node(hardware, kind, payload, ranks, calls)
    pcie = hardware.link(span) * float(nccl_facts()["link_efficiency"]["value"])
    return calls * pcie_ring(kind, payload / calls, ranks, pcie)


def collective_seconds(hardware: Hardware, kind: str, payload: float, ranks: int, span: int,
                       calls: int = 1, all_reduce: str = "nccl", dtype: str | None = None) -> float:
    """Seconds of `calls` collectives of `kind` moving `payload` bytes in all over `ranks` GPUs
    that span `span` consecutive GPUs (hierarchical when that is more than a node holds);
    all_reduce: whose code runs an all-reduce inside a node (NCCL's across nodes); dtype: the
    tensor's (IntraNodeComm reduces bf16 only; within_node)."""
    if not payload or ranks <= 1 and kind not in ("send", "recv"):
        return 0.0
    per_node = hardware.gpus_per_node
    if span <= per_node:
        return within_node(hardware, kind, payload, ranks, calls, all_reduce, dtype)
    if span <= hardware.gpus_per_host and kind in RING_STEPS:
        return host_ring(hardware, kind, payload, ranks, span, calls)
    inter = inter_node_link(hardware, span)
    if kind in ("send", "recv"):
        return payload / inter + calls * hardware.collective_latency_s
    if hardware.gpus_per_host and kind in RING_STEPS:
        # past a host of bridged pairs: NCCL's nodes are the hosts, so the in-host stages are the host's PCIe
        # rings over its ranks and the crossing is between hosts, each rank's 1/local share (wt45_denseout; before,
        # the pairs were the nodes and a group of 8 was priced below one of 4, whose whole ring crosses PCIe)
        local = max(1, min(ranks, hardware.gpus_per_host * ranks // span))  # this group's ranks inside one host
        # the host's ring crosses PCIe between its pairs: NCCL's intra-node latency is its PCI one (tuning.cc:
        # a graph's typeIntra past NVLink takes the PCI row)
        crossing = calls * between_nodes(hardware, kind, payload / calls / local, max(1, ranks // local), local, inter,
                                         fabric="pci")
        in_host = span * local // ranks  # the GPUs those ranks span inside their host
        return crossing + sum(host_ring(hardware, step, payload, local, in_host, calls) for step in IN_NODE_STEPS[kind])
    local = ranks_per_node(hardware, ranks, span)  # this group's ranks inside one node
    if kind == "all_to_all":  # each rank sends 1/ranks of its payload to every other rank, no tree
        off_node = payload * (ranks - local) / ranks / inter
        return off_node + within_node(hardware, kind, payload * local / ranks, local, calls) \
            + calls * hardware.collective_latency_s
    nodes = max(1, ranks // local)
    crossing = calls * between_nodes(hardware, kind, payload / calls / local, nodes, local, inter)
    hierarchical = crossing + sum(within_node(hardware, step, payload, local, calls) for step in IN_NODE_STEPS[kind])
    # a cluster measured across its nodes caps a call of the measured shape at its measured busbw
    return max(hierarchical, payload * ring_factor(kind, ranks) / cluster_busbw(hardware, kind, span, local, payload / calls))


def cluster_busbw(hardware: Hardware, kind: str, span: int, local: int, each: float) -> float:
    """The most bus bandwidth (bytes/s) a `kind` call of `each` bytes over `local` ranks a node
    spanning `span` GPUs reaches on the cluster the hardware names (nccl_facts.json
    "cluster_busbw"): the busbw measured there across span / gpus_per_node nodes (interpolated in
    log2 of the node count, the last point beyond it), where the call is of the measured shape (every
    GPU of its nodes in the group) and at most the measured size (NCCL's busbw does not fall as a
    call grows, so a smaller call reaches no more). inf otherwise (a larger call, a group with fewer
    ranks a node and so fewer ring steps, a kind not measured: sends, all-to-alls), or where the
    hardware names no cluster. That the cluster was measured on the hardware's nodes is checked as the
    file is read (hardware_schema._cluster_problem)."""
    cluster = nccl_facts()["cluster_busbw"].get(hardware.cluster, {}) if hardware.cluster else {}
    if kind not in cluster or local != cluster["gpus_per_node"] or span % local or each > cluster["payload_bytes"]:
        return math.inf  # a partial node (12 ranks: 1.5 nodes) is not the measured shape either
    x, xs, ys = math.log2(span / cluster["gpus_per_node"]), [math.log2(n) for n in cluster["nodes"]], cluster[kind]
    if x >= xs[-1]:
        return ys[-1] * 1e9
    i = max(j for j in range(len(xs)) if xs[j] <= x)
    return (ys[i] + (ys[i + 1] - ys[i]) * (x - xs[i]) / (xs[i + 1] - xs[i])) * 1e9


def node_once_seconds(hardware: Hardware, remote: float, nvlink: float, ranks: int, span: int,
                      calls: int = 1) -> float:
    """Seconds of `calls` node-once exchanges (the flex dispatcher's dispatch or combine on DeepEP's
    or HybridEP's kernels, costmodel/layout/experts.py) over `ranks` GPUs spanning `span`, putting
    `remote` bytes on the inter-node link and `nvlink` bytes on NVLink: the first at the rate an
    all-to-all's off-node share takes (collective_seconds), the second as the wire bytes of an
    all-to-all inside the node (within_node, which puts P (L - 1)/L of a payload P on the wire);
    the two added, as the all-to-all's two parts are."""
    per_node, local = hardware.gpus_per_node, ranks_per_node(hardware, ranks, span)
    inside = within_node(hardware, "all_to_all", nvlink * local / (local - 1), local, calls) \
        if nvlink and local > 1 else 0.0
    if span <= per_node:
        return inside
    inter = inter_node_link(hardware, span)
    return remote / inter + inside + calls * hardware.collective_latency_s


def ranks_per_node(hardware: Hardware, ranks: int, span: int) -> int:
    """The ranks of a group of `ranks` spanning `span` consecutive GPUs that share a node (NVLink
    domain), as collective_seconds and node_once_seconds count them."""
    return ranks if span <= hardware.gpus_per_node else max(1, min(ranks, hardware.gpus_per_node * ranks // span))

