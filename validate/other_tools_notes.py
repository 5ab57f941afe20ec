"""Why the other tools' figures differ from ours, case by case (validate/other_tools.py prints them).

tests/test_other_tools.py asserts each stated term against validate/other_tools.json.
"""

from __future__ import annotations

#: Why the figures differ, case by case; tests/test_other_tools.py asserts each stated term
#: against validate/other_tools.json (the tools' formulas are restated there from their source).
NOTES: dict[str, list[str]] = {
    "llama2-7b train 1 GPU": [
        "params: llm-analysis's bundled Llama-2-7B config has ffn_embed_dim 16,384 in two matrices (not 3 x "
        "11,008) and ties the head: it is V d + L d (3 d_ff - 2 x 16,384) = 164,626,432 short of the class's "
        "measured count, which ours equals.",
        "FLOPs: llm-analysis takes every MLP as 16 n d^2 (a 4d two-matrix FFN) whatever the config: 3 L n d "
        "(6 d_ff - 16 d) = 0.41 T short of 3 x the measured forward; ours equals it (model FLOPs, no recomputed "
        "Q K^T: with sdpa's flash backward the executed count is 1.10 T higher).",
        "activations: the measured saved bytes (HF, sdpa) equal ours; llm-analysis's 18 n d a layer for the MLP "
        "and fp32 norm inputs give 1.20 GB less. gradients: llm-analysis keeps them in fp32, ours in bf16 beside "
        "fp32 master weights (estimate's stated precision; no measurement of a whole step here).",
        "time: no measurement; llm-analysis at its default flops_efficiency 1 (312 TFLOP/s), ours the roofline "
        "at the A100's stated 0.7 of peak.",
    ],
    "llama2-7b train tp1 pp1 dp8": [
        "model states: Megatron's formula and ours agree to the byte (fp32 main gradients, the distributed "
        "optimizer's 12 bytes / dp); llm-analysis is short by its parameter count (above).",
        "FLOPs: Megatron counts the attention core causal, ours and llm-analysis dense: 13.19 T, half of the "
        "core's 3 x 4 L n^2 d; llm-analysis's 16 n d^2 MLP is 0.82 T short (tests/"
        "test_megatron_reference.py states Megatron's conventions).",
        "activations: no measurement of Megatron here. Ours follows Megatron's code: the fused SwiGLU keeps fc1's "
        "2 d_ff and fc2's input (tests/test_frontier_layouts.py), flash attention keeps no n^2 term. Megatron's "
        "formula without SP is n d (10 + 24/tp) a layer, Table 2's sbh terms for a non-gated FFN, with no "
        "attention-score term; llm-analysis adds fp32 norm inputs "
        "(layernorm_dtype_bytes 4) and the embedding output.",
    ],
    "llama2-70b train tp8 pp4 dp2 sp selective": [
        "params: llm-analysis's Llama-2-70B config has ffn_embed_dim 32,768 in two matrices (not 3 x 28,672) and "
        "a tied head: 13.68 B (20%) short of the measured 68,976,648,192, which ours equals; its weights, "
        "gradients and optimizer per GPU are short by the same 20%.",
        "FLOPs: llm-analysis's 16 n d^2 MLP against SwiGLU's 6 n d d_ff = 21 n d^2 here: 16% short even with "
        "its recomputed attention core (4 L n^2 d) added; Megatron differs by its causal attention and padded "
        "vocabulary only.",
        "model states: Megatron's and ours 24,576 bytes apart (it spreads the final norm over the stages). "
        "Activations: ours 1.046x Megatron's formula (its MLP term assumes a non-gated FFN, GQA's K and V are "
        "1/8 of d: validate/FINDINGS.md 22.4); no measurement of Megatron here.",
    ],
    "llama2-7b prefill 2048 + decode": [
        "weights: measured 2 x 6,738,415,616 bytes = ours; llm-analysis misses the untied head and its FFN size "
        "(above), LLM-Viewer counts the decoder layers' matrices only (no embedding, head or norms).",
        "KV cache: measured on the full-size class, 2 L h_kv d_h n e: ours and LLM-Viewer for 2,048 tokens; "
        "llm-analysis for 2,049, the cache after the decode step (1,074,266,112, measured too).",
        "FLOPs: FlopCounterMode counts 14,288,420,864 matmul FLOPs in the decode step at a 2,048-token cache "
        "(the same test); ours is those and 18,562,048 of norms, softmax and elementwise ops. LLM-Viewer counts "
        "the head as d V (half its 2 d V); llm-analysis's step counts about 2 x its parameters, no attention over "
        "the cache (1.07 G), and its prefill runs the head over all 2,048 positions (generate's runs it on the "
        "last one: tests/test_generate_prefill.py).",
        "time: no measurement here; the tools are bandwidth and peak rooflines at 100% efficiency; ours charges "
        "the eager host's time per op at batch 1 (17.7 ms: tests/test_eager_host.py), without which its decode "
        "step is 10.1 ms at 0.8 of the bandwidth.",
    ],
    "llama2-7b decode gpt-fast": [
        "time: the published 104.9 tokens/s; ours (kernel model: the hardware file's measured GEMV bandwidth, "
        "no host time under CUDA graphs; gpt-fast's wqkv one GEMM a layer) 1.02x; llm-analysis and LLM-Viewer read the weights at the full "
        "2,039 GB/s: 1.45x and 1.46x.",
    ],
    "gpt3-175b Korthikanti tp8 pp8 v3 sp selective": [
        "time: the published 13.75 s; ours (kernel model) and Calculon 0.99x; llm-analysis 0.52x at its default "
        "flops_efficiency 1 and with no pipeline bubble or communication.",
        "params: llm-analysis's megatron-lm-175b has vocabulary 50,272 and no biases or position table: "
        "12,288 x (11 L + 928 + 2,048 + 1) = 49,557,504 short of the GPT-3 count (ours: the GPT-2-style layer "
        "our count is measured on in tests/test_hf_parity.py).",
        "FLOPs: Calculon has no vocabulary (no head: 7.73 T) and adds its elementwise ops; Megatron counts the "
        "attention core causal; llm-analysis adds its recomputed attention core.",
        "gradients: Calculon keeps them in the fp16 of its execution file; Megatron's bf16 path keeps fp32 main "
        "gradients, as ours (tests/test_frontier_layouts.py). Weights: Megatron's formula has no biases or "
        "position table (ours 18 x 25,586,688 bytes more), Calculon no biases, positions or embedding table. "
        "Calculon's activations add one block's working space (471,859,200 bytes).",
    ],
    "llama3-8b train 1 GPU 8192": [
        "params: llm-analysis (given the true d_ff 14,336 and 8 KV heads) counts a two-matrix FFN and a tied head: "
        "L d d_ff + V d = 2,404,384,768 short of the class's measured 8,030,261,248, which ours equals; the "
        "128,256-token head alone is 525,336,576. Its weights and optimizer are short by the same 30%.",
        "FLOPs: llm-analysis's MLP is 16 n d^2 whatever d_ff: 3 L n d (6 d_ff - 16 d) = 65.97 T (14%) short of 3 x "
        "the measured forward, which ours equals (its GQA projections and 2 n d V head are right).",
        "activations: the measured saved bytes (HF, sdpa) equal ours; llm-analysis is 10.71 GB short net. Its "
        "MLP term is a two-matrix FFN's, (2 + 4 x 3.5) n d bytes a layer, whatever mlp_gated_linear_units says "
        "(the flag acts only with recompute_gelu).",
        "gradients: llm-analysis keeps them in fp32 (4 bytes), ours in bf16 beside fp32 master weights; no "
        "measurement of a whole step here.",
    ],
    "llama3-8b train ZeRO-3 dp8 8192": [
        "model states: both shard weights, gradients and optimizer over dp 8; llm-analysis's are short by its "
        "parameter count (above). Gradients: ours 6 bytes / dp (the bf16 gradient shard and the fp32 partition "
        "DeepSpeed's ZeRO-2/3 step() allocates: costmodel/layout/frameworks.py), llm-analysis 4 bytes / dp.",
        "activations and FLOPs: a rank runs the whole model on its sequence, so they are the 1-GPU case's: "
        "ours equals the measurement, llm-analysis is short as above. No rank's memory is measured here.",
    ],
    "llama3-8b train FSDP2 dp8 8192": [
        "model states: measured on HF's class under fully_shard on the fake process group of 8: rank 0 holds "
        "fp32 shards of the parameters and of the gradients, 4 / 8 bytes a parameter each, and AdamW's m and v, "
        "8 / 8 (and its step counters, host-side on CUDA): ours equals each. llm-analysis has one sharded run "
        "for ZeRO-3 and FSDP alike, 2 + 4 + 12 bytes / 8: a bf16 weight shard beside fp32 master weights, "
        "where FSDP2's fp32 shard is both (and of its short count).",
        "activations and FLOPs: as the 1-GPU case (the same sequence on each rank).",
    ],
    "llama3-8b decode batch 64 at 4096": [
        "KV cache: measured on the full-size class after a 64 x 4,096 prefill, 2 L h_kv d_h n b e = "
        "34,359,738,368 bytes: ours and LLM-Viewer; llm-analysis holds 4,097 tokens (34,368,126,976, measured "
        "after the decode step too).",
        "FLOPs: FlopCounterMode counts 1,098,068,787,200 matmul FLOPs in the decode step (same test); ours is "
        "those and 2,142,699,520 of elementwise ops. llm-analysis's step has the 16 n d^2 MLP and no attention "
        "over the cache (4 L h d_h n b = 137.44 G); LLM-Viewer counts the head as d V (half its 2 d V).",
        "weights: measured 2 x 8,030,261,248 bytes = ours; LLM-Viewer leaves out the embedding and the head "
        "(2 x 2 x 525,336,576 bytes), llm-analysis its short count (above).",
        "time (no measurement): the step reads the weights and the cache. LLM-Viewer's fused_attention loads "
        "the cache with num_attention_heads, not num_key_value_heads: 4 x 34.36 GB for Llama 3's 32 / 8 heads; "
        "llm-analysis charges 2 x the cache (load and store); ours charges Hugging Face's DynamicCache, "
        "whose torch.cat copies the whole cache every step (read and write) before sdpa reads it.",
    ],
    "llama3.1-8b train 1 GPU 32k sdpa": [
        "FLOPs: 3 x the measured forward = ours; the dense attention core, 3 x 4 L n^2 d, is 53% of it at 32,768 "
        "and llm-analysis counts it the same; its 16 n d^2 MLP is 263.88 T short.",
        "activations: the measured saved bytes (sdpa keeps no n^2 tensor) equal ours; llm-analysis is 18.8% "
        "short (its two-matrix MLP term, as at 8,192).",
    ],
    "llama3.1-8b train 1 GPU 32k eager": [
        "activations: HF's eager attention keeps 6 bytes a score a head, the fp32 softmax (its backward) and the "
        "bf16 probabilities (P V's input): 32 L n^2 x 6 = 6.60 TB of the measured 6.84 TB, which ours equals. "
        "llm-analysis's non-flash term is 2 x 2 bytes a score (2 a s^2 b bytes_per_activation): 2.20 TB less.",
        "time: llm-analysis's time has no attention-kernel term: flash_attn off gives the same 9.30 s (ours "
        "charges the eager softmax's passes over the scores: 39.8 s against sdpa's 18.1 s; no measurement).",
    ],
    "llama3-70b train tp8 pp4 dp2 sp selective 8192": [
        "params: llm-analysis (given d_ff 28,672 and 8 KV heads) is L d d_ff + V d = 19,841,155,072 (28%) short of "
        "the class's 70,553,706,496, which ours equals; its weights and optimizer a GPU by the same share.",
        "FLOPs: 3 x the measured forward at 8,192 = ours. Megatron counts the core causal (263.88 T less) and "
        "its logits over 129,024; llm-analysis's 16 n d^2 MLP (SwiGLU's is 21 n d^2 here) is 12% short even "
        "with its recomputed attention core added.",
        "model states: Megatron's and ours 24,576 bytes apart (it spreads the final norm over the stages), as "
        "at Llama-2-70B. Activations (no measurement): ours 1.046x Megatron's SP + selective formula, whose "
        "MLP term is a non-gated FFN's and whose K and V are d wide, not d / 8.",
    ],
    "llama3.1-8b train tp8 sp 32k": [
        "FLOPs: 3 x the measured forward at 32,768 = ours (dense attention core, 3 x 4 L n^2 d = 53% of the "
        "step here). Megatron counts the core causal, 3 x 2 L n^2 d = 844.42 T less, and its logits over the vocabulary "
        "padded to 129,024; llm-analysis's 16 n d^2 MLP is 263.9 T short.",
        "model states: Megatron's formula and ours agree to the byte (18,086,436,864: 6 + 12 bytes a parameter "
        "of the tp 8 shard, the padded vocabulary).",
        "activations (no measurement): with SP but no selective recomputation Megatron's report takes "
        "compute_activation_memory_without_sp, s h (10 + 24 / tp) a layer x 1.05: its 10 s h (norm inputs, "
        "dropout masks, residuals) is not divided by SP, which splits them over tp in Megatron's code; ours "
        "follows that code (sequence-parallel norms, flash attention, fused SwiGLU). llm-analysis divides "
        "them by sp.",
    ],
    "llama3.1-8b train DTensor tp8 sp 32k": [
        "activations: measured on rank 0 of HF's class under DTensor tp 8 + SP on the fake process group: "
        "58,554,073,100 bytes, which ours equals (the same code: impl hf, framework fsdp2). The logits are "
        "gathered (loss_parallel off), so every rank keeps the loss's whole fp32 logits, 32,768 x 128,256 x 4 = "
        "16,810,770,432 bytes. Each layer keeps its attention's and MLP's all-gathered inputs whole: DTensor "
        "gathers before the colwise linear, which saves what it reads (2 x 2 s h = 536,870,912 of the layer's "
        "1,292,402,688).",
        "llm-analysis's SP formula is Megatron's, which saves the sharded input and gathers it again in "
        "backward, with no logits: 2.5x short of the measured bytes of this (PyTorch) code. Ours for "
        "Megatron's code at the same sizes is the tp 8 case's 19.41 GB.",
    ],
    "llama3.1-8b train tp4 cp2 sp 32k": [
        "model states: Megatron's formula shards the distributed optimizer over dp only (12 / 1 bytes a "
        "parameter); Megatron's optimizer (and ours) shards it over dp x cp = 2: ours is 6 x 2,008,289,280 "
        "bytes less (the tp 4 shard's parameters; as test_megatron_reference.py states for Llama 3.1 405B).",
        "activations (no measurement): Megatron's formula has no context parallelism, s is the whole 32,768 "
        "on each rank; ours divides the sequence by cp as the ring attention does (layout/context.py).",
        "FLOPs: a sequence's FLOPs do not depend on the layout: Megatron's differ from the tp 8 case's only by "
        "the vocabulary padding (128 x tp 4: 128,256 -> 128,512).",
        "llm-analysis has no context parallelism (no cp argument), so it is not run here.",
    ],
    "qwen3-30b-a3b train ep8 dp8": [
        "params: llm-analysis takes the head width as d / h = 64 (Qwen3's is 128: a 4,096-wide query on d 2,048), "
        "two matrices an expert, a tied head and no q/k norms: 48 x 9,437,184 + 48 x 128 x 2,048 x 768 + "
        "151,936 x 2,048 + 48 x 256 = 10,427,838,464 short of the class's 30,532,122,624, which ours equals.",
        "model states: Megatron's formula leaves out the q/k norms (qk_layernorm, 2 x 128 a layer): ours is "
        "48 x 256 x (6 + 12 / 8) = 92,160 bytes more; the rest agrees to the byte (kv_channels 128 counted).",
        "FLOPs: FlopCounterMode on HF's class counts top-8 experts a token: 3 x its forward = ours. Megatron's "
        "differ from ours by its causal attention core and the router it leaves out (3 x 2 n d E L = 0.31 T); "
        "llm-analysis's 16 n d^2 MLP and d-wide attention give 78.15 T (68%).",
        "activations (no measurement): Megatron's formula has no expert or query-width term (s h (10 + 24) a "
        "layer on h = 2,048); llm-analysis multiplies its MLP term by the experts a rank holds (128 / 8) and by "
        "top-k (8), as if each local expert saw top-k x every token: 179 GiB. A rank's experts see top-k x its "
        "tokens in all (spread over the 128), which ours keeps.",
    ],
    "mixtral-8x7b train ep8 dp8": [
        "params: llm-analysis (given 8 experts, top 2 and d_ff 14,336) counts each expert as two matrices and a "
        "tied head: L E d d_ff + V d = 15,163,457,536 short of the class's 46,702,792,704, which ours equals.",
        "FLOPs: 3 x HF's measured forward (top-2 experts a token) = ours. llm-analysis's MLP FLOPs are 16 n d^2 "
        "a layer with no experts or top-k (168.15 T, half of ours); "
        "Megatron's differ from ours by its causal attention core (13.19 T) and the router's 3 x 2 n d E L it "
        "leaves out (25.77 G).",
        "model states: Megatron's formula and ours agree to the byte (experts over ep, their optimizer over "
        "dp / ep).",
        "activations (no measurement): Megatron's formula has no expert term: 19,494,425,395 bytes, the same as "
        "Llama-2-7B's dense case (its ffn_hidden_size, top-k ignored). Ours keeps top-k = 2 experts' SwiGLU "
        "inputs and outputs a token and the router's; llm-analysis keeps top-k times its two-matrix MLP.",
    ],
}
