"""Expert parallelism (--ep): the routed experts of a mixture-of-experts layer sharded over an
expert-parallel group, tokens sent to their experts by all-to-all and back.

The group. EP ranks are drawn from the data-parallel ranks (Megatron-LM's expert_model_parallel
and torchtitan's ep both carve the EP group out of the data-parallel dimension): ep divides dp and
the experts E, each rank holds E / ep whole experts, and the expert-data-parallel group, the
ranks that hold the same experts, is dp / ep ranks. Expert gradients are reduced (and their ZeRO
state sharded) over that group; everything else (attention, the router, shared experts, dense
layers, embeddings) stays on the data-parallel path over dp ranks.

The tokens (torchtitan's pattern, validate/distributed/experts.py, measured): each rank routes its
S = b n k slots, exchanges the tokens-per-expert counts (one all_to_all_single of E int64), sends
each slot's token to the rank of its expert (dispatch), runs its experts on what it receives,
and sends the results back (combine). Backward runs both exchanges again the other way, and under
full recomputation the re-run forward its three exchanges once more (measured). With
payload = a call's input (validate/distributed/comm.py), per layer and micro-batch:

  forward   dispatch  S_sent d e      combine  S_received d e     counts 8 E
  backward  combine'  S_sent d e      dispatch' S_received d e

S_sent = S x kept (the slots not dropped); S_received = S x f, where f, the load factor, is ep
times the share of all slots that the rank's E / ep experts receive (1 when balanced). Wire bytes
are payload x (ep - 1)/ep: a rank's own share does not leave it.

The load (--expert-load, relative shares per expert, balanced by default) and a capacity factor c
(--capacity-factor; None: dropless, as torchtitan and DeepSeek-V3 run): with c each expert takes at
most c / E of the slots (GShard and Switch Transformer's capacity, Megatron-LM's
moe_expert_capacity_factor), the rest are dropped. The most loaded rank (the group of experts with
the largest capped share) sets the per-rank expert activations and FLOPs: f times the balanced ones.
Padded to capacity (--pad-to-capacity, Megatron-Core's moe_pad_expert_input_to_capacity, with c): every
expert runs exactly its capacity, ceil(c S / E) rows of each source rank, whatever the routing (the
slots over it dropped, the rest zero rows): MoEAlltoAllTokenDispatcher (megatron/core/transformer/moe/
token_dispatcher.py lines 445-450 and 517-536 at NVIDIA/Megatron-LM d98e8a64dd) permutes capacity x E
rows and sends them (S_sent = S_received = c S), and _HybridEPManager (lines 1113-1127) sets
tokens_per_expert to capacity x ep on every local expert, so the grouped GEMMs run c S rows a rank (the
flex dispatch still moves each token once: its bytes are unchanged). f = c (the ceiling left out: under
1 / (c S / E) of it), kept as capped.

Under FSDP2 (torchtitan's apply_fsdp, torchtitan/models/llama4/infra/parallelize.py, used by its
DeepSeek-V3 and Llama 4 models, commit 3e3a19f of deepseek_v3/infra/parallelize.py): the routed
experts, EP-sharded on dim 0 (E / ep a rank), are wrapped by their own fully_shard over the
dp_shard_mod_ep mesh, the dp / ep ranks that hold the same experts; the rest of the block (the
attention, the router, the shared experts) by the block's fully_shard over all dp ranks. FSDP2 shards
each expert tensor on dim 0 (ceil((E / ep) / (dp / ep)) experts a rank, padded), or on dim 1 where
dp / ep x ep > E ("FSDP default dim-0 sharding causes inefficiency"): w1, w3 (E / ep, d_x, d) by
d_x / (dp / ep) rows, w2 (E / ep, d, d_x) by d / (dp / ep), which FSDP2 requires to be even
("FSDP does not support uneven sharding on dim 1", torch/distributed/fsdp/_fully_shard/
_fsdp_param.py _init_sharded_param, torch 2.13; measured on gloo). The experts' all-gathers and
reduce-scatters run per micro-batch over the dp / ep group ("edp"), the rest's over dp, each as
FSDP2's (costmodel/layout/communication.py _data_parallel).

The flex dispatcher (--ep-dispatcher deepep or hybridep: Megatron-Core's MoEFlexTokenDispatcher on
DeepEP's or HybridEP's kernels, moe_token_dispatcher_type "flex"). DeepEP's internode dispatch
sends a token ONCE to each node that holds any of its experts, over the inter-node link (RDMA) to
the rank with the same in-node index there, which forwards it over NVLink to each rank of that
node holding one of its experts; the token's own node forwards from the rank itself (DeepSeek-V3
report, arXiv 2412.19437 section 3.2.2; deepseek-ai/DeepEP csrc/kernels/legacy/internode.cu at dd758caf). The combine
reverses it: each rank's outputs for a token go back over NVLink to the forwarder, reduced there,
and once per node over RDMA to the token's rank. HybridEP (DeepEP's hybrid-ep branch,
docs/README_Hybrid-EP.md: "Inter-node Communication: RDMA", "Intra-node Communication: NVLink") moves
the same bytes with its NVLink domain (a GB200 NVL72 rack) as the node. Each dispatch and combine is
one call of the rank's b n tokens (payload = its input, tokens x d x e: a token once, not per
slot); Megatron-Core passes the tokens in the activations' dtype (fused_a2a.py FusedDispatch:
buffer.dispatch(x, ...), no FP8 cast), so bf16 both ways. Expected copies of a token, over uniform
routing (flex_copies): with ep ranks in N = ep / L nodes of L ranks, rank r holding experts
r E / ep to (r + 1) E / ep - 1 (Megatron-Core's local_expert_indices) and node j ranks j L to
(j + 1) L - 1, a token touches node j with probability P_j and rank r with P_r;

  over the inter-node link  (N - 1)/N x sum_j P_j    (the distinct remote nodes)
  over NVLink               (L - 1)/L x sum_r P_r    (the distinct target ranks but the forwarder)

averaged over the source rank (every rank alike when the nodes hold equal shares of the groups).
Uniform routing: the token's top_k a uniform k-subset of the experts; with group-limited routing
(ModelConfig.expert_groups G, expert_groups_per_token t: G groups of E / G consecutive experts,
as DeepSeek-V3's router views them) a uniform t-subset of the groups, then a uniform k-subset of
their t E / G experts. So P(a set A of experts is missed) = sum over the chosen groups meeting A of
C(tE/G - |A and chosen|, k) / C(tE/G, k). Megatron-Bridge's benchmarks force-balance the router
(moe_router_force_load_balancing: random logits), so the expectation is over such routings; a
skewed --expert-load or a capacity factor that drops tokens is refused.

Parallel folding (--etp 1 with --tp > 1, Megatron-Core's expert_tensor_parallel_size 1) and
context parallelism. Megatron-Core builds two rank grids over the same world
(megatron/core/parallel_state.py initialize_model_parallel, NVIDIA/Megatron-LM at d98e8a64dd,
lines 859-893): the attention's RankGenerator(tp, cp, dp, pp) and the experts' RankGenerator(
tp=expert_tensor_parallel_size, ep, dp=expert_data_parallel_size, cp=1), both in the order
"tp-cp-ep-dp-pp" (line 617), with expert_data_parallel_size = world // (etp x ep x pp). So the
experts' grid covers the tp x cp x dp ranks of a pipeline stage: with ETP 1 the EP group is ep
consecutive ranks of them, ep must divide tp x cp x dp, and the expert-data-parallel group is the
tp x cp x dp / ep ranks holding the same experts (at tp 1 it is the same rule, cp x dp / ep). A
rank's tokens are its attention's: n / cp of every sequence (its two chunks, context.py), of which
sequence parallelism leaves n / (cp tp) at the MoE layer; the dispatcher (token_dispatcher.py,
`all_to_all(self.ep_group, ...)`, or the flex dispatcher over the same group) routes those, S =
b (n / cp / tp) k slots, so the all-to-all above is the rank's at n / cp. The weights: E / ep
experts whole on each rank, their gradients reduced over the expert-data-parallel group; the rest
over dp x cp (Megatron-Core's data-parallel group with context parallelism, as without experts).
The attention's key/value exchange is context parallelism's own (context.py), over the cp ranks
of the attention's grid, independent of the experts'. Other frameworks with both are refused.

Expert tensor parallelism (--etp > 1 with --ep > 1, Megatron-Core's expert_tensor_parallel_size; its default
is tp; read at core_v0.12.0, 26f86a597f, the Megatron-Core of NeMo 25.04). The experts' grid is
RankGenerator(tp=etp, ep, dp=world // (etp ep pp)) in the order tp-cp-ep-dp-pp without cp (parallel_state.py
lines 693-714, which raise where etp x ep x pp does not divide the world): the expert-tensor-parallel group
etp consecutive ranks, the EP group ep ranks at stride etp (span etp x ep), the expert-data-parallel group
tp x cp x dp / (etp x ep) ranks; so etp x ep divides tp x cp x dp, at etp = tp: ep divides cp x dp. Each
rank holds E / ep experts, each split etp ways: fc1 column-parallel (d_x / etp rows of each of its gated
halves), fc2 row-parallel (d_x / etp columns), both TE linears built with is_expert, whose own TP
communication is off (explicit_expert_comm, extensions/transformer_engine.py line 209): the dispatcher does
it (token_dispatcher.py MoEAlltoAllTokenDispatcher, tp_size = expert_tensor_parallel_size, the same code at
any etp). The counts are gathered over the etp x ep group (lines 424-430) instead of sent all-to-all; the
rank's own S = b (n / cp / tp) k slots (its attention's SP tokens, whatever etp is) go all-to-all over the
EP group as under folding (line 531), then are all-gathered over the etp group (gather_from_sequence_
parallel_region, lines 537-544): each rank runs its experts' d_x / etp slice on the etp ranks' tokens
together, etp S f slots (folding's FLOPs; the substitution n -> n etp / tp, d_x -> d_x / etp, layout/split.py);
after fc2 the partial outputs are reduce-scattered over the etp group (reduce_scatter_to_sequence_parallel_
region, lines 619-628) back to the rank's S f, then sent back all-to-all. With etp < tp the etp group is part
of an attention TP group; with etp > tp (tp 1 included: no SP there, Megatron-Core asks for it only beside
tp > 1) it spans several, whose tokens are other sequences: the bytes are the same formula. Padded to
capacity (drop_and_pad) each rank pads its own c S slots before the all-to-all (lines 376-386: each local
expert runs capacity x etp x ep rows), so the gathered rows are etp c S: f = c as above. Per MoE layer and
pass (forward, backward, a recomputed forward) one all-gather and one reduce-scatter over etp ranks, each of
payload etp S f d e (the gathered tensor; backward swaps them), on the dispatcher's path (exposed as the
all-to-alls are, Overlap.ep's share aside; not --overlap tp's, which hides the layers' own collectives).
Measured on gloo (validate/distributed/expert_tensor_parallel.py, etp 2 beside tp 4 and tp 1). The router
and a shared expert's gate run on the rank's SP tokens as under folding; a shared expert stays the dense
MLP on the tp group. Refused: another framework, no --sp beside tp > 1 (check_megatron_experts), a grid
etp x ep does not divide, etp not dividing d_x, expert biases or a latent MoE (their split not read),
Megatron-FSDP, the flex dispatcher (not read with etp > 1), inference. Two approximations: the counts stay
the all-to-all's 8 E bytes (the gather's 8 E x etp ep, kilobytes); the reduce-scatter's dtype is the
activations' (it casts to the router probabilities' dtype, bf16 unless moe_router_dtype is set).

A latent mixture of experts (ModelConfig.d_latent, Nemotron 3 Super's moe_latent_size) sends its
tokens in the latent width: d above is d_l (expert_width). Megatron-Core projects before the
dispatch and back after the combine: MoELayer.preprocess runs fc1_latent_proj and then
token_dispatcher.dispatch_preprocess, MoELayer.postprocess combine_postprocess and then
fc2_latent_proj, both TELinear with parallel_mode "duplicated" (unsplit on every tensor-parallel
rank); the NCCL-EP buffers are sized `config.moe_latent_size or config.hidden_size` ("the
dispatcher operates on latent-dim tensors"): megatron/core/transformer/moe/moe_layer.py lines
265-303, 488-490 and 591-592, token_dispatcher.py line 1535, NVIDIA/Megatron-LM at d98e8a64dd.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
import math
from math import comb
from typing import Any

from ..config import ConfigError, ModelConfig


def expert_width(cfg: ModelConfig) -> int:
    """The width the routed experts read and write, and the dispatch and combine move a token in
    (module docstring): d, or the latent width of a latent mixture of experts."""
    return cfg.d_latent or cfg.d_model


@dataclass(frozen=True)
class ExpertLoad:
    """The most loaded EP rank's slots against the balanced share, and the slots kept."""

    factor: Fraction  # slots the most loaded rank receives / the balanced S
    kept: Fraction  # fraction of slots not dropped by the capacity
    rank: int  # which EP rank is the most loaded (the first of equals)
    padded: bool = False  # every expert padded to its capacity (module docstring): a rank sends c S slots

    @property
    def sent(self) -> Fraction:
        """Slots a rank's all-to-all dispatch sends over S: the kept ones, or padded every expert's capacity."""
        return self.factor if self.padded else self.kept


@lru_cache(maxsize=256)
def expert_load(n_experts: int, ep: int, shares: tuple[float, ...] | None,
                capacity_factor: float | None, padded: bool = False) -> ExpertLoad:
    """The load factor of the most loaded of ep ranks holding E / ep consecutive experts (a plan
    asks for the same few thousands of times); padded: every expert at its capacity (module docstring)."""
    if shares is None and capacity_factor is None:
        return ExpertLoad(factor=Fraction(1), kept=Fraction(1), rank=0)
    raw = [Fraction(x) for x in (shares or (1,) * n_experts)]
    total = sum(raw)
    share = [x / total for x in raw]
    capacity = None if capacity_factor is None else Fraction(str(capacity_factor))  # 1.1 as 11/10, as typed
    if capacity is not None:
        share = [min(x, capacity / n_experts) for x in share]
    if padded:  # each expert runs its capacity c / E of the slots, every rank the same
        return ExpertLoad(factor=capacity, kept=sum(share), rank=0, padded=True)
    per_rank = n_experts // ep
    groups = [sum(share[g * per_rank:(g + 1) * per_rank]) for g in range(ep)]
    hottest = max(range(ep), key=lambda g: (groups[g], -g))
    return ExpertLoad(factor=ep * groups[hottest], kept=sum(share), rank=hottest)


@dataclass(frozen=True)
class FlexCopies:
    """Copies of one token a node-once dispatch (or its combine) sends, expected over routings."""

    remote_nodes: Fraction  # over the inter-node link: the distinct nodes but its own
    nvlink: Fraction  # over NVLink: the distinct target ranks but each node's forwarder
    nodes: Fraction  # the distinct nodes its experts are on (its own included)
    ranks: Fraction  # the distinct ranks its experts are on (its own included)


def _missed(overlaps: list[int], groups: int, chosen: int, pool: int, top_k: int) -> Fraction:
    """P(none of a token's top_k experts lies in a set A), A meeting the groups with `overlaps`
    experts each (the others none): the chosen groups a uniform `chosen`-subset of `groups`, the
    experts a uniform top_k-subset of their `pool`. ways[c][s]: subsets of A's groups of c groups
    holding s of A's experts."""
    ways: dict[tuple[int, int], int] = {(0, 0): 1}
    for overlap in overlaps:
        for (count, held), number in list(ways.items()):
            key = (count + 1, held + overlap)
            ways[key] = ways.get(key, 0) + number
    met, total = len(overlaps), comb(groups, chosen)
    return sum(Fraction(number * comb(groups - met, chosen - count) * comb(pool - held, top_k), total * comb(pool, top_k))
               for (count, held), number in ways.items() if count <= chosen)


def _touched(first: int, size: int, per_group: int, groups: int, chosen: int, top_k: int) -> Fraction:
    """P(a token's experts include one of the consecutive experts first .. first + size - 1)."""
    overlaps = [min(first + size, (g + 1) * per_group) - max(first, g * per_group) for g in range(groups)]
    return 1 - _missed([o for o in overlaps if o > 0], groups, chosen, chosen * per_group, top_k)


@lru_cache(maxsize=64)
def flex_copies(n_experts: int, top_k: int, groups: int, chosen: int, ep: int, local: int) -> FlexCopies:
    """The flex dispatcher's expected copies of a token (module docstring, "The flex dispatcher"):
    ep ranks, `local` of them a node; groups and chosen: the group-limited routing (1 and 1: none)."""
    if ep % local:
        raise ConfigError(f"layout: {local} expert-parallel ranks a node do not divide ep = {ep}.")
    nodes, per_group = ep // local, n_experts // groups
    per_rank = n_experts // ep
    ranks = sum(_touched(r * per_rank, per_rank, per_group, groups, chosen, top_k) for r in range(ep))
    reached = sum(_touched(j * local * per_rank, local * per_rank, per_group, groups, chosen, top_k)
                  for j in range(nodes))
    return FlexCopies(remote_nodes=reached * (nodes - 1) / nodes, nvlink=ranks * (local - 1) / local, nodes=reached,
                      ranks=ranks)


def flex_seconds(hardware, payload: float, n_experts: int, top_k: int, groups: int, chosen: int, ep: int,
                 span: int, rates: dict[str, Any] | None = None) -> float:
    """Seconds of flex-dispatcher exchanges whose inputs are `payload` bytes (each token once): the
    expected copies (flex_copies) for the EP group's ranks a node, over the inter-node link and NVLink
    (collectives.node_once_seconds). ep ranks spanning `span` GPUs; groups and chosen as flex_copies'.
    rates: DeepEP's intranode kernels over a wider NVLink domain (check_dispatcher_peers), each pass
    one dispatch and one combine kernel (a dispatch's backward is a combine, a combine's a
    dispatch), so half the payload at each measured rate, over what a rank receives: a token once
    per distinct target rank, its own included (FlexCopies.ranks); or DeepEP's internode kernels
    ("copies": "nodes", layout/deepep_internode.py), over a token once per distinct node, its own
    included (FlexCopies.nodes), as DeepEP's test counts them; or HybridEP's measured rates
    (layout/hybridep_rates.py), over the same ranks or nodes as its README's benchmark counts them."""
    from ..collectives import node_once_seconds, ranks_per_node

    copies = flex_copies(n_experts, top_k, groups, chosen, ep, ranks_per_node(hardware, ep, span))
    if rates is not None:  # received by a rank (NVLink domain), or sent once a node (internode: deepep_internode.py,
        internode = rates.get("copies") == "nodes"  # with the link rule's one latency)
        received = float(payload * (copies.nodes if internode else copies.ranks)) / 2
        latency = hardware.collective_latency_s if internode else 0.0
        return received / rates["dispatch_bytes_per_s"] + received / rates["combine_bytes_per_s"] + latency
    return node_once_seconds(hardware, float(payload * copies.remote_nodes), float(payload * copies.nvlink), ep, span)


def check_flex_load(load: ExpertLoad, dispatcher: str) -> None:
    """The flex dispatcher's copies are expected over balanced, dropless routing (flex_copies); padded to a
    capacity that drops nothing, its tokens still move once (HybridEP pads on the receiving rank)."""
    if dispatcher != "alltoall" and (load.kept != 1 or (load.factor != 1 and not load.padded)):
        raise ConfigError(f"layout: the {dispatcher} dispatcher's bytes are modelled for balanced, dropless routing; "
                          "drop --expert-load and --capacity-factor (or pad a capacity that drops nothing: "
                          "--pad-to-capacity), or use --ep-dispatcher alltoall.")


def check_expert_parallel(cfg: ModelConfig, ep: int, tp: int, dp: int, zero: int, framework: str,
                          capacity_factor: float | None, etp: int | None = None, sp: bool = False,
                          inference: bool = False, cp: int = 1) -> None:
    """Raise ConfigError (one sentence) where expert parallelism cannot run or is not modelled
    (inference: a serving layout, which has no --etp, --sp or --framework to fold with; cp: the
    context-parallel ranks, which Megatron-Core's expert grid draws EP from too)."""
    if capacity_factor is not None and not (isinstance(capacity_factor, (int, float)) and capacity_factor > 0):
        raise ConfigError(f"layout: the capacity factor must be a positive number, got {capacity_factor!r}.")
    if capacity_factor is not None and not cfg.moe:
        raise ConfigError(f"layout: a capacity factor needs a mixture of experts; model {cfg.name!r} has none.")
    if etp is not None and not (isinstance(etp, int) and not isinstance(etp, bool) and etp >= 1):
        raise ConfigError(f"layout: --etp must be a positive integer, got {etp!r}.")
    if etp not in (None, 1) and ep == 1:
        raise ConfigError(f"layout: --etp {etp} splits the routed experts of an expert-parallel group; give --ep "
                          "above 1 (without it the experts split over --tp as a dense FFN does).")
    if ep == 1:
        return
    if not cfg.moe:
        raise ConfigError(f"layout: expert parallelism (--ep {ep}) needs a mixture of experts; "
                          f"model {cfg.name!r} has none.")
    if cfg.n_experts % ep:
        raise ConfigError(f"layout: ep = {ep} does not divide the {cfg.n_experts} experts of model {cfg.name!r}.")
    # no framework places JetMoE's attention experts (blocks/attention_experts.py) nor LongCat-Flash's
    # zero-compute ones (blocks/experts.py Experts.zero_experts) over expert-parallel ranks
    for field, what in (("attention_experts", "JetMoE's mixture of attention heads"),
                        ("zero_experts", "LongCat-Flash's zero-compute experts")):
        if getattr(cfg, field):
            raise ConfigError(f"layout: expert parallelism beside {what} ({field}) is not modelled "
                              f"(model {cfg.name!r}); use --ep 1.")
    if cp > 1 and framework != "megatron":
        raise ConfigError(f"layout: expert parallelism with context parallelism is modelled as Megatron-Core's "
                          f"expert grid (the EP group drawn from tp x cp x dp); use --framework megatron, not "
                          f"{framework}.")
    if tp > 1 and etp == 1:  # parallel folding: the EP group drawn from tp x cp x dp
        check_folding(cfg, ep, tp, dp, framework, sp, cp)
        return
    if etp is not None and etp > 1:  # expert tensor parallelism: the EP group drawn from tp x cp x dp / etp
        if inference:
            raise ConfigError("layout: expert tensor parallelism (--etp > 1) is modelled for training only; give "
                              "--ep without --etp, with --tp 1.")
        check_expert_tensor_parallel(cfg, tp, etp, ep, cp * dp, zero, framework, sp)
        return
    if tp > 1 and inference:
        raise ConfigError("layout: expert parallelism with tensor parallelism is not modelled for inference (the "
                          "experts' own tensor parallelism, expert_tensor_parallel_size = tp); give --ep with --tp 1, "
                          "or --tp without --ep.")
    if tp > 1:  # checked first: Megatron-Core's expert grid decides which ranks EP is drawn from
        raise ConfigError(f"layout: expert parallelism with tensor parallelism needs --etp 1 with --sp and --framework "
                          f"megatron (parallel folding: the routed experts whole, the expert-parallel group drawn from "
                          f"tp x dp) or --etp {tp} with them (expert tensor parallelism, Megatron-Core's default: each "
                          "expert split etp ways; any etp whose etp x ep divides tp x cp x dp), else use --tp 1.")
    if cp > 1 and (cp * dp) % ep:
        raise ConfigError(f"layout: ep = {ep} must divide cp x dp = {cp} x {dp} (Megatron-Core draws the "
                          "expert-parallel ranks from the context- and data-parallel ones).")
    if cp == 1 and dp % ep:
        raise ConfigError(f"layout: ep = {ep} must divide dp = {dp} (the expert-parallel ranks are "
                          "data-parallel ranks).")
    edp = dp // ep
    if framework == "fsdp2" and edp * ep > cfg.n_experts and (cfg.d_expert % edp or expert_width(cfg) % edp):
        raise ConfigError(f"layout: torchtitan shards the experts on dim 1 here (dp = {dp} > {cfg.n_experts} "
                          f"experts), and FSDP2 refuses uneven dim-1 shards: dp / ep = {edp} must divide the "
                          f"experts' width {cfg.d_expert} and their model width {expert_width(cfg)}.")
    if zero >= 3 and framework == "deepspeed":
        raise ConfigError("layout: expert parallelism under DeepSpeed with ZeRO-3 is not modelled (--zero 0, 1 or 2; "
                          "or --framework fsdp2, or megatron's --zero 3, Megatron-FSDP).")


def check_megatron_experts(mode: str, framework: str, sp: bool, tp: int) -> None:
    """What parallel folding and expert tensor parallelism both need (module docstring): Megatron-Core's
    expert grid, and beside tensor parallelism sequence parallelism (model_parallel_config.py refuses
    expert_model_parallel_size > 1 with tensor_model_parallel_size > 1 without it, core_v0.12.0)."""
    if framework != "megatron":
        raise ConfigError(f"layout: {mode} is Megatron-Core's (its expert grid); use --framework megatron.")
    if tp > 1 and not sp:
        raise ConfigError(f"layout: {mode} with --tp > 1 needs sequence parallelism (--sp): Megatron-Core runs "
                          "experts beside tensor parallelism only with it.")


def check_folding(cfg: ModelConfig, ep: int, tp: int, dp: int, framework: str, sp: bool, cp: int = 1) -> None:
    """Parallel folding's refusals (module docstring, "Parallel folding")."""
    check_megatron_experts("parallel folding (--etp 1)", framework, sp, tp)
    if (tp * cp * dp) % ep:
        grid, sizes = ("tp x cp x dp", f"{tp} x {cp} x {dp}") if cp > 1 else ("tp x dp", f"{tp} x {dp}")
        raise ConfigError(f"layout: ep = {ep} must divide {grid} = {sizes} under parallel folding (the "
                          f"expert-parallel ranks are drawn from the tensor-{', context-' if cp > 1 else ''} "
                          "and data-parallel ones).")


def check_expert_tensor_parallel(cfg: ModelConfig, tp: int, etp: int, ep: int, ranks: int, zero: int,
                                 framework: str, sp: bool) -> None:
    """Expert tensor parallelism's refusals (module docstring, "Expert tensor parallelism"): Megatron-Core's,
    with sequence parallelism beside tp > 1, its expert grid (etp x ep dividing the stage's tp x cp x dp
    ranks, `ranks` = cp x dp), the experts' width split evenly, the all-to-all dispatcher, no Megatron-FSDP."""
    check_megatron_experts(f"expert tensor parallelism (--etp {etp})", framework, sp, tp)
    if (tp * ranks) % (etp * ep):
        raise ConfigError(f"layout: etp x ep = {etp} x {ep} must divide the {tp * ranks} ranks of a pipeline stage "
                          f"(tp x cp x dp; Megatron-Core's expert grid: its world is not divisible by "
                          "expert_tensor_model_pipeline_parallel size otherwise).")
    if cfg.d_expert % etp:
        raise ConfigError(f"layout: etp = {etp} does not divide the experts' FFN width {cfg.d_expert} of model "
                          f"{cfg.name!r} (each expert's fc1 and fc2 are split over the expert-tensor-parallel ranks).")
    if cfg.expert_bias or cfg.d_latent:
        raise ConfigError(f"layout: expert tensor parallelism beside expert biases or a latent mixture of experts is "
                          f"not modelled (model {cfg.name!r}); use --etp 1.")
    if zero >= 3:
        raise ConfigError("layout: expert tensor parallelism under Megatron-FSDP (--zero 3) is not modelled; "
                          "use --zero 0 or 1, or --etp 1.")


def _expert_bias_elements(cfg: ModelConfig, edp: int = 1) -> int:
    """One expert's biases (gpt-oss's gate_up (2 d_x) and down (d), blocks/experts.py Experts), each split
    on its last dim over edp ranks (Shard(1) of the (E / ep, 2 d_x) and (E / ep, d) tensors); 0 without."""
    return (2 * cfg.d_expert // edp + expert_width(cfg) // edp) if cfg.expert_bias else 0


def expert_elements(cfg: ModelConfig) -> int:
    """One expert's parameters (tp 1): its weight matrices and, where it has them, its biases."""
    return (3 if cfg.gated else 2) * cfg.d_expert * expert_width(cfg) + _expert_bias_elements(cfg)


def fsdp_expert_elements(cfg: ModelConfig, ep: int, dp: int) -> tuple[int, int]:
    """One layer's routed experts on one rank under FSDP2, in padded elements: (without expert
    parallelism: the tree's (E, 2 d_x d) and (E, d d_x) tensors, and gpt-oss's (E, 2 d_x) and (E, d)
    biases, sharded on dim 0 over dp, as layout/parts.py pads them; with ep: torchtitan's placement,
    module docstring, NeMo AutoModel's where they agree: dp / ep ranks of dim 1 split evenly hold what
    dim 0 would). Not gated (nemotron_h): w1 alone beside w2; d the experts' width (expert_width)."""
    d, d_x, experts, inputs = expert_width(cfg), cfg.d_expert, cfg.n_experts, 2 if cfg.gated else 1
    whole = math.ceil(experts / dp) * expert_elements(cfg)
    local, edp = experts // ep, dp // ep
    if edp * ep > experts:  # Shard(1): w1, w3 by their d_x rows, w2 by its d rows (even: checked)
        return whole, local * (inputs * (d_x // edp) * d + (d // edp) * d_x + _expert_bias_elements(cfg, edp))
    return whole, math.ceil(local / edp) * expert_elements(cfg)


def fsdp_split(estimate: Any, stage: Any, scope: str) -> tuple[int, int]:
    """(the rest, the routed experts): padded elements one rank holds under FSDP2 with expert
    parallelism, of the stage's parts ("stage"), its layers ("layers", what FSDP2 gathers again in
    backward), the parts outside its layers ("root") or the largest layer ("largest")."""
    layout, cfg = estimate.layout, estimate.cfg
    whole, sharded = fsdp_expert_elements(cfg, layout.ep, layout.dp)
    per_layer = cfg.n_experts * expert_elements(cfg)  # expert_params (tp 1)
    if scope == "largest":
        keys = estimate.structure["layers"]
        return max(((estimate.part(k, "padded") - whole * (estimate.part(k, "expert_params") // per_layer),
                     sharded * (estimate.part(k, "expert_params") // per_layer)) for k in keys),
                   key=lambda pair: pair[0] * layout.dp + pair[1] * (layout.dp // layout.ep), default=(0, 0))
    if scope == "root":
        outer = fsdp_split(estimate, stage, "stage")
        inner = fsdp_split(estimate, stage, "layers")
        return outer[0] - inner[0], outer[1] - inner[1]
    if scope == "layers":
        padded, experts = estimate.layer_sum(stage, "padded"), estimate.layer_sum(stage, "expert_params")
    else:
        padded, experts = estimate.on_stage(stage, "padded"), estimate.on_stage(stage, "expert_params")
    layers = experts // per_layer
    return padded - whole * layers, sharded * layers


def fsdp_gathered(estimate: Any, stage: Any, scope: str) -> int:
    """Elements FSDP2 all-gathers of a scope (fsdp_split): the rest over dp, the experts over dp / ep."""
    rest, experts = fsdp_split(estimate, stage, scope)
    return estimate.layout.dp * rest + estimate.layout.dp // estimate.layout.ep * experts


#: DeepEP's internode kernels forward to at most 8 NVLink peers (deepseek-ai/DeepEP
#: csrc/kernels/legacy/internode.cu at dd758caf: EP_STATIC_ASSERT(LEGACY_NUM_MAX_NVL_PEERS == 8)).
DEEPEP_NVL_PEERS = 8


def check_dispatcher_peers(layout: Any, hardware: Any) -> dict[str, Any] | None:
    """Where more of the expert-parallel group shares a node (NVLink domain) than DeepEP's
    internode kernels reach: its intranode kernels over the whole domain where the group fits one
    (DeepEP pull request #218, as the DeepSeek-V3 GB200 guide ran EP 32), returned as their
    measured rates (kernel_facts.json "deepep_nvlink_domain"); refused where the group spans more
    than one domain or no rate is measured for this GPU and group. Across nodes of at most 8 ranks: its
    internode kernels' measured rates where the card is the measured one (layout/deepep_internode.py).
    HybridEP: its measured rates where its README times the GPU (layout/hybridep_rates.py).
    None: DeepEP as its own kernels at the link rule (the module docstring's flex dispatcher). Wherever a
    hardware file is known (the time model, estimate's fit)."""
    from ..collectives import ranks_per_node
    from ..kernel_rates import kernel_facts

    local = ranks_per_node(hardware, layout.ep, layout.ep_span)
    if layout.ep_dispatcher == "hybridep":  # its measured rates where NVIDIA timed it (None: the link rule)
        from .hybridep_rates import hybridep_rates
        return hybridep_rates(layout, hardware, local)
    if layout.ep_dispatcher != "deepep" or local <= DEEPEP_NVL_PEERS:
        from .deepep_internode import internode_rates  # its internode kernels, measured (None: the link rule)
        return internode_rates(layout, hardware, local)
    if layout.ep_span > hardware.gpus_per_node:
        raise ConfigError(f"layout: DeepEP's internode kernels reach at most {DEEPEP_NVL_PEERS} NVLink peers "
                          f"(LEGACY_NUM_MAX_NVL_PEERS), not the {local} ranks a node of {hardware.name} "
                          "holds here; use --ep-dispatcher hybridep (the NVLink domain as the node).")
    rates = kernel_facts()["deepep_nvlink_domain"].get(hardware.network_name)  # a renamed copy too
    if rates is None or rates["ranks"] != layout.ep:
        measured = ", ".join(f"ep {v['ranks']} on {k}" for k, v in kernel_facts()["deepep_nvlink_domain"].items()
                             if k != "source")
        raise ConfigError(f"layout: DeepEP over an NVLink domain of more than {DEEPEP_NVL_PEERS} peers (its "
                          f"intranode kernels, DeepEP pull request #218) has a measured rate only at {measured}, "
                          f"not ep {layout.ep} on {hardware.name}; use --ep-dispatcher hybridep.")
    return rates
