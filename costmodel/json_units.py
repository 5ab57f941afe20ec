"""The units of each command's --json numbers: JSON_UNITS, one object a command, which the command prints
as its "units" (estimate, simulate, plan, plan --serve --rate, serve, finetune, published). Moved out of
spec.py (the choices and defaults) whole; nothing here imports the rest of costmodel.
"""

from __future__ import annotations

#: The units of each command's --json numbers, printed as its "units" object (a key that names its
#: unit, *_seconds, *_bytes, gpu_hours, tokens_per_second, says it too). The thirteenth new-user
#: round found byte and second figures (plan's per_rank and step_time, estimate's memory) with no
#: unit anywhere in the JSON.
#: --tokens/--price's cost block, as simulate --train and plan write it.
_COST_UNITS = ("tokens: tokens; train_seconds: seconds; train_days: days; gpus: GPUs; gpu_hours: GPU-hours; "
               "flops: FLOP; price_per_gpu_hour: dollars a GPU-hour; dollars: dollars; price_source: where the price "
               "came from, --price or the hardware file (its price_per_gpu_hour)")
#: simulate --price without --train: a generation's cost block (its units were the training block's alone, none
#: of which it holds but price_per_gpu_hour and gpus).
_GENERATION_COST_UNITS = ("without --train: price_per_gpu_hour: dollars a GPU-hour; gpus: GPUs; dollars_per_hour: "
                          "dollars an hour, every GPU; dollars_per_million_output_tokens: dollars a million generated "
                          "tokens at the end-to-end rate; price_source: --price or the hardware file")

JSON_UNITS = {
    "estimate": {"params": "parameters (a count)",
                 "flops": ("FLOP over the whole batch; *_per_token: FLOP a token. forward, backward, training and "
                           "by_block count matrix products only, 2*m*n*k each as torch's FlopCounterMode counts "
                           "them: every score of the n_q x n_k attention matrix (the causal mask saves none), "
                           "bias adds not counted, backward 2x forward for a product with a trained operand; "
                           "other_*: the other ops (norms, softmax, activations, adds) at a stated FLOP an "
                           "element (costmodel/blocks/base.py OTHER_FLOPS_PER_ELEMENT)"),
                 "memory": "bytes; bytes_per_param: bytes a parameter; fp8_parameters: parameters (a count)",
                 "fit": "bytes (memory, capacity, weights.unquantized_memory)", "parallel": "bytes (per_rank, stages, communication, wire)",
                 "regime": ("FLOP of the layers' forward matrix products (attention_flops: the n^2 d scores and "
                            "weighted sums; projection_ffn_flops: the n d^2 projections and FFN; the head apart); "
                            "crossover_seq_len: tokens (the n where the two are equal)")},
    "simulate": {"seconds": "seconds (every key ending in seconds, time_per_output_token, step_time)",
                 "flops": "FLOP", "bytes": "bytes (memory, per_rank, stages, memory_capacity, *_bytes; but "
                                           "memory.max_batch: sequences, memory.max_context and model_context: tokens)",
                 "tokens_per_second": "tokens a second, summed over the batch's sequences (x dp with a layout)",
                 "parallel": "bytes (per_rank, stages, communication, wire; but stage, layers, "
                             "virtual_stage_layers, micro_batches_in_flight: counts)",
                 "step": "mfu, hfu, bubble_fraction: fractions of 1; model_flops: FLOP a step; "
                         "tflops_per_gpu: TFLOP/s a GPU; slowest_stage: a stage index",
                 "inputs.overlap": "tp, dp, pp, params, ep: fractions of 1 (the share hidden); slowdown: "
                                   "a fraction of compute time; prefetch, align_grad: true or false",
                 "cost": f"with --train: {_COST_UNITS}; {_GENERATION_COST_UNITS}"},
    "plan": {"per_rank": "bytes", "per_rank.stage": "a stage index", "step_time": "seconds", "time_per_output_token": "seconds",
             "last_step.seconds": "seconds", "*_seconds": "seconds", "memory_capacity": "bytes",
             "tokens_per_second": "tokens a second", "model_flops": "FLOP a step", "split": "seconds",
             "mfu, hfu": "fractions of 1", "cost": _COST_UNITS,
             "host": "ops_per_step: aten ops a decode step (every stage's); ops_per_rank (a pipeline): the busiest "
                     "stage's; seconds_per_step, op_seconds, kernels_seconds: seconds"},
    "finetune": {"memory": "bytes; params, trainable_params: parameters (a count)",
                 "fit": "bytes (memory, capacity, each option's memory; least.memory: the least one GPU holds, where no option fits)",
                 "time": "seconds (*_seconds, parts, seconds); gemm_flops: FLOPs; dequant_bytes: bytes; tokens: a count; "
                         "gpu_hours: hours; dollars: $ at price_per_gpu_hour; price_source: --price or the hardware file"},
    "serve": {"queueing, ttft, tpot, e2e, itl": "seconds", "*_s": "seconds", "*_per_s": "a second",
              "kv_use": "a fraction of the KV blocks", "setup.kv_cache": "bytes (*_bytes)",
              "setup.rate, rates.rate": 'requests a second; "inf": every request arrives at time 0 (--rate inf); '
                                        "null: no rate (--concurrency or --trace)",
              "cost, setup.price_per_gpu_hour": "dollars: price_per_gpu_hour a GPU-hour, dollars_per_hour the "
                                                "deployment's, dollars_per_million_output_tokens at "
                                                "output_tokens_per_s, the rate it sustains (basis: offered, or "
                                                "the run's throughput); price_source: --price or the hardware file"},
    "published": {"narayanan_2021_table_1": "params, params_eq2: parameters; tflops_*: TFLOP/s a GPU; seconds_ours: "
                                            "seconds a step; bubble: a fraction of the step",
                  "korthikanti_2022_table_5": "full_*, present_*: seconds an iteration; mfu_*, hfu_*: percent",
                  "other_runs": "each row's unit (published, roofline, kernels)",
                  "frontier": "each row's quantity (published, ours, kernels); memory_gib, over_gib: GiB",
                  "summary, summary_by_kind": "lowest, highest: ratios (ours / published); median_error: a "
                                              "fraction, |ratio - 1| (0.106 is 10.6%)"},
    "plan --serve --rate": {"*_s": "seconds (but *_per_s: a second)", "target.slo_ttft, target.slo_tpot": "seconds",
                            "target.rate": "requests a second",
                            "target.prompt, target.output": "tokens: a number or serve's length distribution",
                            "replica_requests_per_s": "requests a second (one replica)",
                            "replica_output_tokens_per_s": "output tokens a second (one replica, over its run)",
                            "replica_sustained_output_tokens_per_s": "output tokens a second (one replica, the rate "
                                                                     "$/M out is over)",
                            "sustained_basis": "offered (rate x the mean output tokens, kept up with) or run (the "
                                               "replica's throughput over its run)",
                            "gpus": "GPUs (tp x pp x replicas)", "max_num_seqs": "sequences",
                            "max_batched_tokens": "tokens a step", "num_blocks": "KV blocks of 16 tokens a replica",
                            "dollars_per_hour": "dollars an hour",
                            "dollars_per_million_output_tokens": "dollars a million output tokens"},
}
