"""Context parallelism (--cp): every sequence cut into cp pieces, one a rank, with attention
over the whole sequence by exchanging keys and values, as torch 2.13's context_parallel runs it
(torch/distributed/tensor/experimental/_context_parallel/_attention.py, measured on gloo:
validate/distributed/context.py).

Per rank: n / cp tokens of every sequence, so every token-proportional quantity (activations,
the linear layers' FLOPs, the boundary a pipeline sends) is the tree's at n / cp; the attention
core sees n / cp queries against all n keys, cp times the tree's work at n / cp. Causal load
balance: torch's default cuts the sequence into 2 cp chunks and gives rank r chunks r and
2cp - 1 - r, so every rank does the same causal work (n must be a multiple of 2 cp; under
DeepSpeed-Ulysses, --cp-rotate a2a, of cp: contiguous pieces, check_workload).

The exchange, per attention layer and micro-batch, with kv = 2 b (h_kv / tp) (n / cp) d_h e, the
rank's keys and values (h_kv and d_h are Gemma 4's full layers' h_kvg and d_hg where its config
gives them: attention_widths): under tensor parallelism a rank's attention holds h_kv / tp of the KV
heads, and the ring moves only those (Transformer Engine at d0067d0,
transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py,
AttnFuncWithCPAndKVP2P.forward: `p2p_comm_buffers[0] = torch.cat((k.view(-1), v.view(-1)))`, the
local k and v, which dot_product_attention.py asserts hold `num_gqa_groups_per_partition =
num_gqa_groups // tp_size` heads; torch's DTensor sdpa likewise sees the local heads). torch sends
them as attention receives them (_templated_ring_attention: `torch.cat([key.flatten(),
value.flatten()])` of sdpa's own key and value): a model that repeats its KV heads before sdpa
sends h heads (h / tp a rank), as torchtitan's Llama does (torchtitan 9dec370,
torchtitan/models/llama/model.py: `keys = repeat_kv(xk, self.n_rep)` before
F.scaled_dot_product_attention); Layout.cp_kv_heads says which ("kv", the default, counts h_kv as
Transformer Engine moves them; "repeated" counts h). The key and value gradients the backward
sends are of the same tensors:
  allgather (torch's default rotate method)
      forward   one all-gather of the keys and values: payload cp kv
      backward  one all-gather of them again (cp kv), and cp sends of the key and value
                gradients around the ring, accumulated in fp32 (kv x 4 / e each)
  ring (set_rotate_method("alltoall"))
      forward   cp - 1 sends of kv to the next rank
      backward  cp - 1 sends of kv, and cp sends of the fp32 gradients; Transformer Engine's
                ring (Megatron's p2p) cp - 1 sends of the gradients in the attention's dtype
  a2a (head-parallel all-to-all: DeepSpeed-Ulysses, Transformer Engine's cp_comm_type "a2a")
      forward   before attention one all-to-all each of Q, K and V, scattering heads and gathering
                the sequence ([n / cp, h] -> [n, h / cp]), after it one of the output back; each
                call's payload is its whole input: b (n / cp) e (2 H_q + 2 H_k) d_h a layer
      backward  the transposed all-to-alls of the output's gradient and of dQ, dK, dV: as many bytes,
                in the attention's dtype (all_to_all's gradient is the reverse all-to-all)
  with H_q = h / tp and H_k the KV heads the kernel receives (as above). Read at DeepSpeed v0.18.0
  (2025-10-07), deepspeed/runtime/sequence_parallel/ulysses_sp.py UlyssesSPAttentionHF (the Hugging
  Face models' Ulysses: _combine_local_sequences' three _DimZeroAllToAll, _partition_global_sequence's
  one; sequence/layer.py DistributedAttention, Megatron-DeepSpeed's, runs the same four): it
  refuses h not divisible by cp, and h_kv unless h_kv divides by cp or cp by h_kv, where it
  repeat_interleaves K and V to cp heads before the all-to-all (kv_replication_factor = cp / h_kv:
  H_k = cp, one head a rank). Transformer Engine v2.8 (40c69e75, 2025-10-01),
  attention/dot_product_attention/context_parallel.py AttnFuncWithCPAndQKVOA2A with
  flash_attn_a2a_communicate (all_to_all_single of empty_like(input): the payload is the input):
  asserts the rank's query and key heads (h / tp, h_kv / tp) divisible by cp, and repeats none
  (so --cp-kv-heads repeated is refused under megatron's a2a). Under DeepSpeed it is Megatron-DeepSpeed's
  own GQA (microsoft/Megatron-DeepSpeed 1e3fc81d megatron/model/transformer.py ParallelAttention.forward:
  `key_layer = self.repeat_kv(key_layer, self.num_key_value_groups)` and the value likewise, before
  `self.dist_attn(query_layer, key_layer, value_layer, ...)`): H_k = h / tp heads sent. DeepSpeed
  v0.18.0 runs no other context parallelism (sequence/layer.py, runtime/sequence_parallel/ulysses_sp.py
  and sequence/fpdt_layer.py's chunked passes are all head all-to-alls): allgather is refused under
  it, and a2a is its default (Layout.cp_rotate None); ring stays, a model's own ring on DeepSpeed's engine
  (ms-swift's ring attention, a published row).
  A rank then runs one causal attention over all n tokens of H_q / cp heads (all_to_all_call): the
  FLOPs of the ring's cp calls, but at n keys, with no ring steps and no merges. The all-to-alls
  sit on the attention's path, exposed (time.py, as the Mamba-2 mixers'). Not counted: TE's chunk
  reordering (index_select of each tensor, memory-bound), DeepSpeed's per-layer all-gather of
  position_ids (8 b n / cp bytes in) and its replicated K and V's memory (cp / h_kv times the
  saved keys and values where it repeats); the gathered Q, K, V and output the kernel saves are as
  many elements as the tree's at n / cp, so activations are the tree's.
Under full recomputation a layer's forward runs again in backward, its ring with it: one more
forward exchange a recomputed layer (torch.utils.checkpoint re-runs the checkpointed forward, and
torchtitan 9dec370 wraps each TransformerBlock whole, parallelize_llama.py apply_ac 'full'; the
all-gather is a functional collective inside that forward, _AllGatherRotater.exchange_buffers).
Eager, a ring step's send overlaps the attention computing on the previous block; the all-gather is
exposed (costmodel/layout/time.py). torch's ring traced (torch.compile, which every torch context-parallel
row runs: torchtitan compiles each block whole) exposes its sends too (StepTime.traced_ring): a traced
functional collective is waited at once (_functional_collectives.py _maybe_wrap_tensor: `if
_are_we_tracing(): return wait_tensor(self)`, all_gather_single's and all_to_all_single's, which
permute_tensor, the gradients' rotater, calls; torch 2.13 as in 2024), and inductor moves a wait only
under reorder_for_compute_comm_overlap, which torchtitan 9dec370 leaves off (it sets only
_micro_pipeline_tp). Eager, _templated_ring_attention would also hide the all-gather under the ring's
first, causal call (issued at i = 0, waited at i = 1): not modelled apart (no published row runs eager).
Parameters are replicated over cp and their
gradients reduced over dp x cp (Layout.shard_ranks). Beside the attention calls torch's ring
merges each block in fp32, memory-bound passes the kernel model times (ring_merge_bytes).
Only the layers that attend exchange keys and values (a hybrid's Mamba-2 and MoE layers do not).

Mamba-2 mixers (Megatron-Core's "all-to-all" context parallelism, megatron/core/ssm/
mamba_context_parallel.py MambaContextParallel at d98e8a64dd, used by mamba_mixer.py): in_proj
runs on the rank's n / cp tokens; pre_conv_ssm sends z, x, B, C and dt through five all-to-alls
(_all_to_all_cp2hp: [n / cp, b, width] -> [n, b, width / cp], each CP rank then holding H / cp of
the heads over the whole sequence, and the attention's load-balancing chunk order undone); the
conv and the scan run there; post_conv_ssm's one all-to-all (_all_to_all_hp2cp) returns y to
[n / cp, b, d_inner] for the gated norm and out_proj (the memory-efficient training path,
_ssm_training). The backward runs the same six the other way (all_to_all's gradient is the
reverse all-to-all), full recomputation the forward's again. Payload (a call's input) per mixer
and pass, with H, G of the rank's tp share: b (n / cp) e (3 H P + 2 r G N + H), r = cp / G where G
< cp (B and C repeated, each CP rank one group), else 1 (mamba_exchange). The mixer's own work:
n H / cp token-heads either way, so the tree's at n / cp with all heads is the same work (the
kernel model's mamba_ssm passes are linear in tokens x heads and chunks x heads; only the last
state of each sequence, b H P N, is cp times the rank's). Megatron asserts H / tp divisible by
cp and G / tp by cp or cp by G / tp (check_context_parallel); repeated groups (r > 1) are refused.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any

from ..config import ConfigError, ModelConfig, Workload


def check_context_parallel(cfg: ModelConfig, layout: Any) -> None:
    """Raise ConfigError (one sentence) where context parallelism is not modelled."""
    if cfg.architecture != "decoder":
        raise ConfigError("layout: context parallelism of an encoder is not modelled (decoder-only models only).")
    if cfg.sliding_window is not None:
        raise ConfigError(f"layout: context parallelism with a sliding window ({cfg.sliding_window} tokens) "
                          "is not modelled.")
    if cfg.mla:
        raise ConfigError("layout: context parallelism with latent attention is not modelled.")
    others = sorted(set(cfg.layer_pattern or ()) & {"deltanet", "mamba1", "shortconv", "lightning", "kda", "rglru", "rwkv_time", "mlstm", "shared"})
    if cfg.mamba1_inner or cfg.deltanet_k_heads or others:  # no exchange of theirs is modelled
        mixers = ", ".join(others) or ("mamba1" if cfg.mamba1_inner else "deltanet")
        raise ConfigError(f"layout: context parallelism with {mixers} mixers is not modelled.")
    if cfg.mamba_heads:  # Megatron-Core's mamba_context_parallel.py: all-to-alls around each mixer
        check_mamba_context_parallel(cfg, layout)
    if layout.cp_rotate == "a2a":
        if layout.framework not in ("deepspeed", "megatron"):
            raise ConfigError(f"layout: --cp-rotate a2a is DeepSpeed-Ulysses' and Megatron-Core's (cp_comm_type a2a); "
                              f"{layout.framework} runs torch's context_parallel: allgather or ring.")
        if layout.framework == "megatron" and layout.cp_kv_heads == "repeated":
            raise ConfigError("layout: --cp-kv-heads repeated has no meaning under Megatron's --cp-rotate a2a: Transformer "
                              "Engine's AttnFuncWithCPAndQKVOA2A receives the model's key/value heads and repeats none "
                              "(use --cp-kv-heads kv).")
        all_to_all_heads(cfg, layout.tp, layout.cp, layout.cp_kv_heads, layout.framework == "deepspeed")
    if layout.framework == "deepspeed" and layout.cp_rotate == "allgather":
        raise ConfigError("layout: DeepSpeed's sequence parallelism is DeepSpeed-Ulysses' head all-to-all (--cp-rotate "
                          "a2a, its default); it has no all-gather of keys and values (a model's own ring attention "
                          "on its engine, as ms-swift's: --cp-rotate ring).")


def check_mamba_context_parallel(cfg: ModelConfig, layout: Any) -> None:
    """Megatron-Core's MambaContextParallel's conditions (module docstring), one sentence each."""
    if layout.framework != "megatron":
        raise ConfigError("layout: context parallelism with Mamba-2 mixers is Megatron-Core's "
                          f"(MambaContextParallel); use --framework megatron, not {layout.framework}.")
    heads, groups = cfg.mamba_heads // layout.tp, (cfg.mamba_groups or 1) // layout.tp
    if heads % layout.cp:
        raise ConfigError(f"layout: --cp {layout.cp} must divide the {heads} Mamba-2 heads a tensor-parallel "
                          "rank holds (Megatron-Core: 'nheads must be evenly divisible by tp_size * cp_size').")
    if groups % layout.cp:
        raise ConfigError(f"layout: --cp {layout.cp} must divide the {groups} Mamba-2 groups a tensor-parallel "
                          "rank holds; Megatron-Core's repetition of a group's B and C over CP ranks is not "
                          "modelled.")


def check_inference(cp: int) -> None:
    """Raise ConfigError where a layout with context parallelism is asked to serve: the training
    rule (each rank the n / cp tokens of its chunks) is not an inference prefill's key/value
    exchange, and decoding would hold the whole KV cache on every rank (simulate and estimate alike)."""
    if cp > 1:
        raise ConfigError("layout: context parallelism (--cp) is modelled for training only: an inference "
                          "prefill's key/value exchange and decode context parallelism (vLLM's dcp) are not.")


def check_workload(workload: Workload, cp: int, sp_ranks: int = 1, chunks: int = 2) -> None:
    """Raise ConfigError where the sequence does not cut into the rank's pieces: chunks x cp (2 cp
    for the load-balanced causal split; DeepSpeed-Ulysses' cp: UlyssesSPDataLoaderAdapter refuses
    only "seqlen isn't divisible by sp-size"), and under sequence parallelism the rank's n / cp
    tokens into sp_ranks (tp) pieces."""
    if workload.attention == "eager":
        raise ConfigError("layout: context parallelism runs fused attention (sdpa or flash), not eager "
                          "(Transformer Engine's unfused attention, Megatron's below sm80, refuses it too).")
    if workload.seq_len % (chunks * cp):
        cut = f"{chunks} x cp = {chunks * cp} chunks" if chunks > 1 else f"{cp} pieces"
        raise ConfigError(f"layout: --cp {cp} cuts each sequence into {cut}; {workload.seq_len} tokens do not divide.")
    if sp_ranks > 1 and (workload.seq_len // cp) % sp_ranks:
        raise ConfigError(f"layout: sequence parallelism splits a rank's {workload.seq_len // cp} tokens "
                          f"(--cp {cp}) over --tp {sp_ranks}; they do not divide.")


def attention_widths(cfg: ModelConfig, tp: int, kv_heads: str = "kv") -> tuple[int, int]:
    """(query, key) elements a token holds in one rank's attention call: its h / tp query heads, and
    the KV heads it holds (split.kv_heads_per_rank) or under kv_heads "repeated" h / tp, each head
    one head width. Every layer context parallelism runs is a full-attention layer (a window is
    refused above), so Gemma 4's full layers' KV heads h_kvg (num_global_key_value_heads) and width
    d_hg (global_head_dim) where the config gives them, as leaves.py's unwindowed layer reads them."""
    from .split import kv_heads_per_rank

    width = cfg.global_head_dim or cfg.d_head
    queries = cfg.n_heads // tp
    keys = queries if kv_heads == "repeated" else kv_heads_per_rank(cfg.global_kv_heads or cfg.n_kv_heads, tp)
    return queries * width, keys * width


def all_to_all_heads(cfg: ModelConfig, tp: int, cp: int, kv_heads: str = "kv",
                     replicate: bool = False) -> tuple[int, int]:
    """(query heads, key heads) a rank's Q and K hold as they enter --cp-rotate a2a's all-to-alls,
    each scattered over cp (module docstring): h / tp and the KV heads its kernel receives
    (attention_widths); replicate: DeepSpeed-Ulysses, which repeats h_kv < cp KV heads to cp.
    ConfigError (one sentence) where the code refuses the heads."""
    from .split import kv_heads_per_rank

    queries = cfg.n_heads // tp
    keys = queries if kv_heads == "repeated" else kv_heads_per_rank(cfg.global_kv_heads or cfg.n_kv_heads, tp)
    # deepspeed's --cp is Ulysses' a2a whether or not --cp-rotate was typed (Layout's default): it read "--cp-rotate
    # a2a scatters ..." to a user who typed --cp 3 alone (round 45's left item)
    rotate = "DeepSpeed-Ulysses (deepspeed's --cp, --cp-rotate a2a)" if replicate else "--cp-rotate a2a"
    if queries % cp:
        said = "'Attention head count ... is not divisible by SP size'" if replicate else \
            "'The number of attention heads needs to be divisible by CP size!'"
        raise ConfigError(f"layout: {rotate} scatters a rank's {queries} attention heads over --cp {cp}; "
                          f"they do not divide ({said}).")
    if keys % cp and not (replicate and cp % keys == 0):
        rule = f"nor do they divide {cp} (DeepSpeed-Ulysses' repetition)" if replicate else \
            "and Transformer Engine repeats none"
        raise ConfigError(f"layout: {rotate} scatters a rank's {keys} key/value heads over --cp {cp}; "
                          f"they do not divide, {rule}.")
    return queries, max(keys, cp)


def all_to_all_call(call: Any, cfg: ModelConfig, layout: Any) -> Any:
    """The attention call a rank runs under --cp-rotate a2a, from the tree's call at n / cp: all n
    queries and keys of its heads / cp (all_to_all_heads' KV heads / cp)."""
    cp = layout.cp
    keys = all_to_all_heads(cfg, layout.tp, cp, layout.cp_kv_heads, layout.framework == "deepspeed")[1]
    return replace(call, heads=call.heads // cp, kv_heads=keys // cp, n_q=call.n_q * cp, n_kv=call.n_kv * cp)


def exchange(cfg: ModelConfig, workload: Workload, cp: int, rotate: str, attention_layers: int,
             tp: int = 1, kv_heads: str = "kv", recomputed_layers: int = 0,
             transformer_engine: bool = False) -> dict[str, int]:
    """Payload bytes one rank moves for one micro-batch over `attention_layers` layers: its own
    keys and values, the n / cp tokens of the heads its attention kernel receives: the KV heads it
    holds (split.kv_heads_per_rank), or under kv_heads "repeated" its h / tp query heads; and the
    forward's exchange again for the `recomputed_layers` whose forward full recomputation re-runs.
    transformer_engine: Transformer Engine's ring (Megatron's p2p), whose backward sends the keys
    and values at steps 0 to cp - 2 and their gradients, accumulated in the attention's dtype, at
    steps 1 to cp - 1 (v1.4 attention.py AttnFuncWithCP.backward: p2p_comm_buffers of kv.dtype,
    send_tensor[0] at step 0, send_tensor[1] at the last): 2 (cp - 1) kv. rotate "a2a": the four
    all-to-alls each pass (module docstring); transformer_engine False is DeepSpeed-Ulysses'."""
    e = workload.bytes_per_element
    if rotate == "a2a":  # Q, K, V and the output, each pass; DeepSpeed's K and V at least cp heads
        queries, keys = all_to_all_heads(cfg, tp, cp, kv_heads, replicate=not transformer_engine)
        width = cfg.global_head_dim or cfg.d_head
        one = e * workload.batch * (workload.seq_len // cp) * width * (2 * queries + 2 * keys)
        return {"all_to_all": (2 * attention_layers + recomputed_layers) * one}
    elements = 2 * workload.batch * (workload.seq_len // cp) * attention_widths(cfg, tp, kv_heads)[1]
    kv, gradients = e * elements, 4 * elements
    if rotate == "allgather":
        forward, backward = {"all_gather": cp * kv}, {"all_gather": cp * kv, "send": cp * gradients}
    elif transformer_engine:
        forward, backward = {"send": (cp - 1) * kv}, {"send": 2 * (cp - 1) * kv}
    else:
        forward, backward = {"send": (cp - 1) * kv}, {"send": (cp - 1) * kv + cp * gradients}
    moved = {kind: (attention_layers + recomputed_layers) * value for kind, value in forward.items()}
    for kind, value in backward.items():
        moved[kind] = moved.get(kind, 0) + attention_layers * value
    return moved


def mamba_exchange(cfg: ModelConfig, workload: Workload, cp: int, mixers: int, tp: int = 1,
                   recomputed_mixers: int = 0) -> dict[str, int]:
    """Payload bytes of the all-to-alls one rank runs for one micro-batch of `mixers` Mamba-2
    mixers (module docstring): forward and backward each b (n / cp) e (3 H P + 2 G N + H) a mixer,
    H and G the rank's tp share; the forward's again for the `recomputed_mixers` full
    recomputation reruns."""
    heads, groups = cfg.mamba_heads // tp, (cfg.mamba_groups or 1) // tp
    width = 3 * heads * cfg.mamba_head_dim + 2 * groups * cfg.ssm_state + heads
    one = workload.bytes_per_element * workload.batch * (workload.seq_len // cp) * width
    return {"all_to_all": (2 * mixers + recomputed_mixers) * one}


def ring_merge_bytes(cfg: ModelConfig, workload: Workload, cp: int, tp: int = 1,
                     kv_heads: str = "kv") -> tuple[int, int]:
    """Bytes one rank's ring moves through memory beside its attention calls, for one layer and
    micro-batch: (forward, backward), as torch's ring computes in fp32 (_ContextParallelOptions
    convert_to_f32 True; torch/distributed/tensor/experimental/_attention.py, read at 0123248: the
    stored copy nearest torchtitan's torch of 2024-12-23). Each source line counted as one pass
    over its tensors (torch.compile fuses a line's pointwise ops; eager runs more). With O the
    rank's output elements b (h / tp) (n / cp) d_h and K those of its key (and of its value, the
    heads exchange() moves), in bytes:
      forward   the first block's output to fp32 (2 O read, 4 O written) and the result back to
                bf16 (4 O + 2 O); each of the cp - 1 later blocks merged, `out - sigmoid(block_lse
                - lse) * (out - block_out)`: out read and written in fp32, the block's read in bf16,
                10 O (the slowest rank's; a half-block merge writes the half and _partial_update's
                cat copies the rest, 9 O);
      backward  fp32 zeros for dq, dk, dv (4 O + 8 K); at each of the cp blocks dq += (10 O), dk
                and dv += (20 K), their cat into the fp32 send buffer (16 K) and, but at the last
                block, the key and value's cat for the next send (8 K); at the end dq to bf16 (6 O)
                and the received dk, dv to bf16 (12 K)."""
    tokens = workload.batch * (workload.seq_len // cp)
    out, key = (tokens * width for width in attention_widths(cfg, tp, kv_heads))
    forward = 12 * out + 10 * (cp - 1) * out
    backward = 4 * out + 8 * key + cp * (10 * out + 36 * key) + 8 * (cp - 1) * key + 6 * out + 12 * key
    return int(forward), int(backward)


def te_ring_bytes(cfg: ModelConfig, workload: Workload, cp: int, tp: int = 1,
                  kv_heads: str = "kv") -> tuple[int, int]:
    """Bytes one rank's Transformer Engine ring moves through memory beside its attention calls,
    for one layer and micro-batch: (forward, backward), each the slowest CP rank's (the ring's
    steps wait on each other). Read at Transformer Engine v1.4 (0fbc76af3),
    transformer_engine/pytorch/attention.py AttnFuncWithCP with FusedAttention (cuDNN) and the
    causal mask, the path Megatron-Core's p2p context parallelism takes: a rank r holds its two
    chunks, at step i the keys and values of rank r - i. Counted from the source lines, each a
    read and a write of its tensors in the attention's dtype (jit_fuser = torch.compile: a
    correction one pass); the log-sum-exp tensors (1 / d_h of these) are left out, and so are
    the sbhd <-> bshd transposes, which copy nothing at micro-batch 1. Q and K are the rank's
    query (and output) and key elements (attention_widths; its values as many as its keys):
      forward   k and v into the first send buffer (torch.cat: 4 K); the output zeroed (Q); at
                each step 1 <= i <= r the first half of the received keys and values made
                contiguous (2 K), at each later step the second half of q (Q); after the loop
                flash_attn_fwd_out_correction at every step, out += out_per_step x exp(...):
                3 Q at steps 0..r, 1.5 Q (the second half) after;
      backward  the saved keys and values into the send buffer (copy_: 4 K); then with
                c = cp - 1 - r, at each step i: the first half of the keys and values made
                contiguous where c <= i < cp - 1 (2 K), the second halves of q, out and dout
                where i < c (3 Q); dq accumulated (add_ 3 Q after c; at c a copy, 2 Q, on the
                last rank, else half copied and half added, 2.5 Q; before c the second half
                added, 1.5 Q, or at step 0 copied, Q); dk and dv cat into one tensor (4 K, or 2 K
                where the step had half the keys); and added into the received dkv (at the last
                step 6 K, rank 0 5 K: half added, half copied; where c <= i < cp - 1 half added,
                3 K, or 2 K copied at step 0 on the last rank; before c 6 K, or 4 K copied at
                step 0)."""
    tokens = workload.batch * (workload.seq_len // cp)
    q, k = (tokens * width for width in attention_widths(cfg, tp, kv_heads))
    forward, backward = _te_slowest_halves(cp, q, k)
    e = workload.bytes_per_element
    return e * forward // 2, e * backward // 2


@lru_cache(maxsize=256)
def _te_slowest_halves(cp: int, q: int, k: int) -> tuple[int, int]:
    """The slowest rank's forward and backward elements (doubled): plan times many layouts."""
    return (max(_te_forward_halves(cp, rank, q, k) for rank in range(cp)),
            max(_te_backward_halves(cp, rank, q, k) for rank in range(cp)))


def _te_forward_halves(cp: int, rank: int, q: int, k: int) -> int:
    """te_ring_bytes' forward elements read and written on CP rank `rank`, doubled (halves stay integers)."""
    total = 2 * (4 * k + q)
    total += sum(4 * k if i <= rank else 2 * q for i in range(1, cp))
    return total + sum(6 * q if i <= rank else 3 * q for i in range(cp))


def _te_backward_halves(cp: int, rank: int, q: int, k: int) -> int:
    """te_ring_bytes' backward elements read and written on CP rank `rank`, doubled."""
    c, total = cp - 1 - rank, 8 * k
    for i in range(cp):
        last, half = i == cp - 1, c <= i < cp - 1  # half: this step's keys were the first half
        total += 4 * k if half else 0
        total += 6 * q if i < c else 0  # q, out and dout's second halves
        if i > c:
            total += 6 * q
        elif i == c:
            total += 4 * q if rank == cp - 1 else 5 * q
        else:
            total += 3 * q if i > 0 else 2 * q
        total += 4 * k if half else 8 * k  # torch.cat((dk_, dv_))
        if last:
            total += 10 * k if rank == 0 else 12 * k
        elif half:
            total += 4 * k if i == 0 and rank == cp - 1 else 6 * k
        else:
            total += 12 * k if i > 0 else 8 * k
    return total
