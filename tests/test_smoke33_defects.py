"""Defects found by the thirty-third new user (wt34_user, session 34): an ML engineer who read only the README and
docs/commands.md asking how many parameters, FLOPs and bytes a model takes, whether it fits, how long and what a
run costs, and whether every command gives the same figure for the same setup."""

from __future__ import annotations

from tests.cli_run import run_json

DP8 = ["simulate", "--train", "--model", "llama2-7b", "--hardware", "h100", "--gpus", "8", "--dp", "8",
       "--recompute", "full"]


def test_recomputing_every_layer_by_count_is_full_recomputation(capsys):
    """`simulate --train --model llama2-7b --gpus 8 --dp 8 --recompute full` took 328 ms a step, and the same with
    `--recompute-layers 32` (Megatron's block method over all 32 layers: the same run) 287 ms: the layers' norms
    took 17.4 ms with the first and 1.6 ms with the second. The kernel model reads the bytes Hugging Face's eager
    training code moves (kernel_facts.json eager_training_bytes) by a leaf's path, "decoder.layer.ffn.norm", and
    the layers that --recompute-layers sets apart are named "decoder.recomputed_layer.ffn.norm": their code is
    the same layer's, so they now read the same measured bytes."""
    whole = run_json(DP8, capsys)["step"]
    counted = run_json([*DP8, "--recompute-layers", "32"], capsys)["step"]
    assert abs(counted["seconds"] / whole["seconds"] - 1) < 1e-9
    assert abs(counted["compute_seconds"] / whole["compute_seconds"] - 1) < 1e-9
    norms = [s for k, s in counted["compute_by_block_seconds"].items() if k.endswith("self_attention.norm")]
    assert norms == [whole["compute_by_block_seconds"]["decoder.layer.self_attention.norm"]]
    # half the layers rerun: between no recomputation and full, as the recomputed forwards' share says
    half = run_json([*DP8, "--recompute-layers", "16"], capsys)["step"]["seconds"]
    none = run_json([*DP8[:-1], "none"], capsys)["step"]["seconds"]
    assert none < half < whole["seconds"]


def test_plan_serves_footnote_names_the_batch_simulate_takes_per_replica(capsys):
    """`plan --serve --model llama3-8b --gpus 4 --batch 64 --cuda-graphs on` ranked "2 x 1 x 2 ... 7.76 ms a token,
    8,252 tokens/s" under a footnote saying the times are "as `simulate` with the layout and `--attention flash`
    times them"; `simulate --tp 2 --dp 2 --batch 64 --attention flash --cuda-graphs on` gave 10.4 ms and 12,285
    tokens/s: simulate's --batch is each replica's, plan's the whole batch, split over the dp replicas (each
    serves 32). The footnote now names the replica's batch, and so does the JSON layout (`batch_per_replica`)."""
    from tests.cli_run import run_main

    args = ["plan", "--serve", "--model", "llama3-8b", "--hardware", "h100", "--gpus", "4", "--batch", "64",
            "--prompt", "1024", "--gen", "128", "--cuda-graphs", "on"]
    plan = run_json(args, capsys)
    two = next(e for e in plan["feasible"] if (e["layout"]["tp"], e["layout"]["dp"]) == (2, 2))
    assert (two["layout"]["batch"], two["layout"]["batch_per_replica"]) == (64, 32)
    sim = run_json(["simulate", "--model", "llama3-8b", "--hardware", "h100", "--tp", "2", "--dp", "2", "--batch",
                    "32", "--prompt", "1024", "--gen", "128", "--attention", "flash", "--cuda-graphs", "on"], capsys)
    assert abs(sim["generation"]["time_per_output_token"] / two["time_per_output_token"] - 1) < 1e-9
    assert abs(sim["generation"]["decode_tokens_per_second"] / two["tokens_per_second"] - 1) < 1e-9
    code, out, _ = run_main(args, capsys)
    assert code == 0 and "`--batch` each replica's share of the 64 sequences (batch / dp)" in out


def test_a_model_too_large_for_one_gpu_is_told_only_the_splits_it_takes(capsys, tmp_path):
    """`serve --config Qwen3-Next-80B-A3B-Instruct/config.json --hardware h200` (148.4 GiB of bf16 weights) said
    "spread it over more GPUs (--tp, --pp)"; `--tp 2` then said "--tp 2 splits Gated DeltaNet mixers, which are not
    modelled under tensor parallelism". The advice now names --pp alone where no larger tp splits the model, and
    --pp 2 serves it."""
    import json

    from tests.cli_run import one_error_line, run_main

    config = {"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "decoder_sparse_step": 1,
              "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu", "hidden_size": 2048,
              "intermediate_size": 5120, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
              "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128,
              "max_position_embeddings": 262144, "mlp_only_layers": [], "moe_intermediate_size": 512,
              "norm_topk_prob": True, "num_attention_heads": 16, "num_experts": 512, "num_experts_per_tok": 10,
              "num_hidden_layers": 48, "num_key_value_heads": 2, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06,
              "rope_theta": 10000000, "shared_expert_intermediate_size": 512, "tie_word_embeddings": False,
              "torch_dtype": "bfloat16", "vocab_size": 151936}  # Qwen/Qwen3-Next-80B-A3B-Instruct's config.json
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    serve = ["serve", "--config", str(path), "--hardware", "h200", "--rate", "2", "--requests", "20"]
    line = one_error_line(serve, capsys, warnings=True)
    assert "spread it over more GPUs (--pp)" in line and "--tp" not in line
    assert "--tp 2 splits Gated DeltaNet mixers" in one_error_line([*serve, "--tp", "2"], capsys, warnings=True)
    assert run_main([*serve, "--pp", "2"], capsys)[0] == 0
    # a model tensor parallelism splits keeps both
    assert "(--tp, --pp)" in one_error_line(["serve", "--model", "nemotron-3-super", "--hardware", "h100", "--rate",
                                             "1", "--requests", "10"], capsys, warnings=True)


def test_finetunes_recomputation_advice_states_what_a_frozen_base_reruns(capsys):
    """`finetune --model llama3-8b --hardware l40s --seq-len 4096 --batch 4 --lora-targets all-linear --lora-rank 64`
    (170.48 GiB) offered "--recompute full 34.07 GiB reruns each layer's forward in backward: a third more matmul
    FLOPs". A third is full training's share (forward 1, backward 2); a LoRA's frozen base runs no weight-gradient
    GEMM, so its backward is about one forward and the rerun adds about half: its own step's GEMM FLOPs go from
    61.5 to 90.1 TFLOP (llama3.1-8b, QLoRA, 2,048 tokens), 46% more. estimate's advice for full training keeps a
    third."""
    from tests.cli_run import run_main

    flops = [run_json(["finetune", "--model", "llama3.1-8b", "--method", "qlora", "--hardware", "h100",
                       "--recompute", r], capsys)["time"]["gemm_flops"]["base"] for r in ("none", "full")]
    assert (flops[0], flops[1]) == (61_478_161_874_944, 90_065_464_197_120) and 0.4 < flops[1] / flops[0] - 1 < 0.5
    code, out, _ = run_main(["finetune", "--model", "llama3-8b", "--hardware", "l40s", "--seq-len", "4096", "--batch",
                             "4", "--lora-targets", "all-linear", "--lora-rank", "64"], capsys)
    line = next(x for x in out.splitlines() if x.strip().startswith("--recompute full"))
    assert "about half more matmul FLOPs" in line and "a third" not in line
    code, out, _ = run_main(["estimate", "--model", "llama3.1-8b", "--hardware", "h100", "--seq-len", "8192", "--gpus",
                             "8", "--zero", "3", "--batch", "4"], capsys)
    assert "reruns each layer's forward in backward: a third more matmul FLOPs" in out


def test_gradient_checkpointing_reruns_the_adapters_too(capsys):
    """`finetune --model llama3.1-8b --method qlora --hardware h100 --recompute full --json` counted the adapters'
    GEMMs at 83.75 GFLOP a step, as without recomputation: forward once and backward (3x the forward), though
    gradient checkpointing reruns each decoder layer's forward whole, peft's lora_A and lora_B inside it, as it
    reruns the frozen base's GEMMs (counted: 61.5 -> 90.1 TFLOP). Under --recompute full they now run four times
    the forward's FLOPs (and the forward's seconds once more, in the adapters' part)."""
    base = ["finetune", "--model", "llama3.1-8b", "--method", "qlora", "--hardware", "h100"]
    plain, full = (run_json([*base, "--recompute", r], capsys)["time"] for r in ("none", "full"))
    forward = plain["gemm_flops"]["adapters"] // 3
    assert (plain["gemm_flops"]["adapters"], full["gemm_flops"]["adapters"]) == (3 * forward, 4 * forward)
    assert forward == 27_917_287_424  # 32 layers x (q_proj, v_proj) x (x A^T, h B^T) at 2,048 tokens, r = 16
    assert full["parts"]["adapters"] > plain["parts"]["adapters"]


def test_an_offload_the_verdict_offers_says_the_host_memory_it_needs(capsys):
    """`estimate --model deepseek-v3 --hardware h200 --gpus 8 --seq-len 4096` (can 8 H200s train it?) offered
    "--dp 8 --zero 3 --offload params --recompute full 51.33 GiB ZeRO-Infinity ...": that run holds 10.99 TiB in
    the host memory of its one node (estimate with those options: "host memory 1.37 TiB per rank, 10.99 TiB per
    node"), five times what a DGX H200 holds (2 TB), and the line did not say so. Each offload it offers now names
    the host bytes a node, the figure the estimate it names prints."""
    from tests.cli_run import run_main

    args = ["estimate", "--model", "deepseek-v3", "--hardware", "h200", "--gpus", "8", "--seq-len", "4096"]
    code, out, _ = run_main(args, capsys)
    line = next(x for x in out.splitlines() if "--offload params --recompute full" in x)
    named = run_json([*args, "--dp", "8", "--zero", "3", "--offload", "params", "--recompute", "full"], capsys)
    host = named["parallel"]["offload"]["host_bytes_per_node"]
    assert host == 12_078_475_278_336 and "10.99 TiB of host memory a node" in line
    code, out, _ = run_main(["estimate", "--model", "llama3.1-8b", "--hardware", "rtx-4090"], capsys)
    line = next(x for x in out.splitlines() if "--offload params" in x)
    assert "134.62 GiB of host memory a node" in line


def test_simulate_names_the_cache_a_token_adds_past_the_sliding_windows(capsys):
    """`simulate --model gemma3-12b --prompt 32768 --gen 256` said "KV cache 384.00 KiB per token per sequence":
    every layer's rate, which holds only while the context is within the 1,024-token window of its 40 sliding
    layers; past it each token adds the 8 full layers' 64 KiB (estimate's KV cache at n + T - 1 = 33,023: 2.33 GiB,
    not 33,023 x 384 KiB = 12.1 GiB), and the same line's "decoding to a context <= 795,693" already grows at that
    rate. The line and the JSON (`kv_bytes_per_token_past_windows`) now give both."""
    from tests.cli_run import run_main

    args = ["simulate", "--model", "gemma3-12b", "--prompt", "32768", "--gen", "256", "--attention", "flash"]
    memory = run_json(args, capsys)["memory"]
    assert (memory["kv_bytes_per_token"], memory["kv_bytes_per_token_past_windows"]) == (393_216, 65_536)
    code, out, _ = run_main(args, capsys)
    assert "KV cache 384.00 KiB per token per sequence (64.00 KiB past the sliding windows)" in out
    # a model without windows keeps one figure
    plain = run_json(["simulate", "--model", "llama3-8b", "--prompt", "1024", "--gen", "16"], capsys)["memory"]
    assert plain["kv_bytes_per_token"] == plain["kv_bytes_per_token_past_windows"] == 131_072  # (wt35_user: every
    # model's JSON has the key, so a script reads it for any model; the text line keeps one figure)
