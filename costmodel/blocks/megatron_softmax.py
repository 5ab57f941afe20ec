"""Megatron's fused softmax kernels as their code loads a row: the data Softmax.fused_softmax_bytes
(blocks/attention.py) prices the Megatron path with, each read at the commits of the published runs."""

# Read at NVIDIA/Megatron-LM cbad126 (March 2021, Narayanan et al.'s runs) and 00129014 (Korthikanti et al.'s):
# megatron/fused_kernels/scaled_upper_triang_masked_softmax.h, forward and backward: `local_seq = blockIdx.x + 1`,
# loads `if (element_index < batch_element_count)` (batch_element_count = local_seq), stores `if (element_index <
# element_count)` (the whole row, zeros above the diagonal). The load's vector: one element at cbad126
# (src[...] a thread an instruction), copy_vector<half, 4> at 00129014 (b1a8337, 2021-03-16, "softmax data
# load/store optimization"; apex's csrc/megatron copy, which Megatron-Core and NeMo call, keeps it). The model takes
# 00129014's 4; cbad126's 1 loads (s + 1) / 2s of the scores, 0.0015 B a 16-bit score less at 2,048 keys (0.05%).
MEGATRON_CAUSAL_VECTOR = 4
# scaled_masked_softmax.h (the padding mask) loads the uint8 mask for every score it reads (cbad126: `mask[itr_idx]`;
# 00129014: copy_vector<uint8_t, 4>(temp_mask, mask + itr_idx)), the mask's [b, 1, sq, sk] again for each head.
MEGATRON_SOFTMAX_MASK_BYTES = 1
