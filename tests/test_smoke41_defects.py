"""Defects a new user hit in session 41's round (wt41_user): formulas read in one case only and listing every
symbol the project knows, ... Each test failed before its fix."""

from __future__ import annotations

from tests.cli_run import one_error_line, run_json, run_main

# ---------------------------------------------------------------------------------------------
# 1. formulas: --block and --quantity in one case only; the symbols line named all 80 symbols


def test_formulas_reads_block_and_quantity_in_any_case_and_names_the_symbols_it_uses(capsys):
    """`formulas --model llama2-7b --block Attention` said "no block ... Did you mean self_attention?" where
    `--block attention` answers, and `--quantity FLOPS_MATMUL` was an unknown quantity (every other choice is
    read in any case). Each answer closed with the meanings of all 80 symbols the project defines (Mamba-2's
    heads, RWKV's layers... under Llama's Q, K, V FLOPs); it names those the printed expressions use."""
    code, out, _ = run_main(["formulas", "--model", "llama2-7b", "--block", "Self_Attention.QKV",
                             "--quantity", "FLOPS_MATMUL"], capsys)
    assert code == 0
    assert out.splitlines() == [
        "decoder.layer.self_attention.qkv  (x L_dec): Q, K, V projections",
        "  flops_matmul = 2*b*d*d_h*h*n + 4*b*d*d_h*h_kv*n",
        "symbols: d: model width d_model, h: query heads, h_kv: key/value heads, d_h: head dimension, "
        "L_dec: decoder layers, b: batch size, n: sequence length (decoder side)"]
    data = run_json(["formulas", "--model", "llama2-7b", "--block", "scores", "--quantity", "flops_matmul"], capsys)
    assert data["blocks"][0]["formulas"] == {"flops_matmul": "2*b*d_h*h*n**2"}
    assert sorted(data["symbols"]) == ["L_dec", "b", "d_h", "h", "n"]  # the count's L_dec and the formula's
    latex = run_json(["formulas", "--model", "llama2-7b", "--block", "SCORES", "--quantity", "flops_matmul",
                      "--latex"], capsys)
    assert sorted(latex["symbols"]) == ["L_{dec}", "b", "d_{h}", "h", "n"]
    assert one_error_line(["formulas", "--model", "llama2-7b", "--block", "Atention"], capsys) == (
        "error: no block of llama2-7b has 'Atention' in its path. Did you mean self_attention?")


# ---------------------------------------------------------------------------------------------
# 2. serve --disaggregate ran prefill and decode pools of engines that cannot split them


def test_serve_refuses_to_disaggregate_engines_that_cannot_hand_over_a_kv_cache(capsys):
    """`serve --disaggregate 1:1 --scheduler static` printed "2 replica(s) (1 prefill + 1 decode) ... scheduler
    static: Hugging Face transformers generate()": a deployment no generate() call runs (it prefills and decodes
    each batch in one process); transformers' continuous batching neither. One line now; vllm keeps its pools."""
    base = ["serve", "--model", "llama3-8b", "--hardware", "h100", "--rate", "5", "--requests", "20",
            "--disaggregate", "1:1"]
    for scheduler in ("static", "hf-fifo", "hf-prefill-first"):
        line = one_error_line([*base, "--scheduler", scheduler], capsys)
        assert line.startswith("error: --disaggregate splits prefill and decode over two pools of one engine; "
                               f"the {scheduler} scheduler's cannot: "), line
        assert line.endswith("Use --scheduler vllm (or another serving engine's), or leave --disaggregate out.")
    data = run_json([*base, "--scheduler", "vllm"], capsys)
    assert (data["setup"]["disaggregate"], data["setup"]["replicas"]) == ([1, 1], 2)


# ---------------------------------------------------------------------------------------------
# 3. a length mix's kind in one case only


def test_a_length_mix_reads_its_kind_in_any_case(capsys):
    """`serve --prompt Uniform:1K:4K` said "use N, uniform:LOW:HIGH, ..." (the sizes' 1K was read, the kind's
    case was not; README: a choice in any case is the one it spells). The setup records the kind as read."""
    data = run_json(["serve", "--model", "llama3-8b", "--hardware", "h100", "--rate", "5", "--requests", "20",
                     "--prompt", "Uniform:1K:4K", "--output", "LOGNORMAL:128:0.5"], capsys)
    assert (data["setup"]["prompt"], data["setup"]["output"]) == ("uniform:1024:4096", "lognormal:128:0.5")
    from costmodel.serving.workload import Lengths

    assert Lengths.parse("UNIFORM:1k:4k") == Lengths.parse("uniform:1024:4096")


# ---------------------------------------------------------------------------------------------
# 4. serve --num-blocks beside --gpu-memory-utilization: the utilization ignored, the header naming it


def test_serve_num_blocks_is_not_said_to_come_from_a_memory_budget(capsys):
    """`serve --num-blocks 2000 --gpu-memory-utilization 0.5` ran 2,000 blocks and said they were "50% of 79.22 GiB
    less the 512 MiB reserve" (the budget holds 12,207; JSON kv_cache.num_blocks 12,207 beside setup.num_blocks
    2,000): the utilization sized nothing. Now one line; with --num-blocks alone the header says the blocks are
    the option's and what the budget (28,431 at 0.9, tests/test_smoke8_defects.py) would hold."""
    base = ["serve", "--model", "llama3-8b", "--hardware", "h100", "--rate", "5", "--requests", "20",
            "--num-blocks", "2000"]
    assert one_error_line([*base, "--gpu-memory-utilization", "0.5"], capsys) == (
        "error: --num-blocks 2000 sets the KV cache's blocks; --gpu-memory-utilization 0.5 sizes them from the "
        "GPU's memory (vLLM's num_gpu_blocks_override replaces what it would size): give one of them.")
    code, out, _ = run_main(base, capsys)
    assert code == 0
    assert ("KV cache per replica: 2,000 blocks of 16 tokens as --num-blocks sets them (the memory budget would "
            "hold 28,431: 131,072 B per token per GPU;") in out
    # too few blocks: the hint no longer sends a --num-blocks user to the utilization alone
    assert one_error_line([*base[:-1], "10"], capsys) == (
        "error: request 0 needs 40 KV blocks of 16 tokens; the cache holds 10 (raise --gpu-memory-utilization, or "
        "--num-blocks where it is given).")


# ---------------------------------------------------------------------------------------------
# 5. --framework deepspeed with Transformer Engine's recipes ran Megatron-Core's casts, unsaid


def test_deepspeed_refuses_the_recipes_only_transformer_engine_runs(capsys):
    """`simulate --train --framework deepspeed --fp8 mxfp8` on 8 B200s ran (532 ms a step, Megatron-Core's MXFP8
    casts) while `--fp8 delayed` under deepspeed was refused as "not modelled" (no source reads DeepSpeed running
    Transformer Engine); current, blockwise, mxfp8 and nvfp4 are Transformer Engine's too. Now one line each;
    torchao's tensorwise still runs, and plan --fp8 mxfp8 searches megatron and fsdp2 alone."""
    base = ["simulate", "--train", "--model", "llama3-8b", "--hardware", "b200", "--seq-len", "8192", "--dp", "8",
            "--batch", "1", "--framework", "deepspeed", "--fp8"]
    for recipe in ("current", "blockwise", "mxfp8", "nvfp4"):
        line = one_error_line([*base, recipe], capsys)
        assert line.startswith(f"error: layout: --fp8 {recipe} is Transformer Engine's recipe as Megatron-Core runs it"), line
        assert line.endswith("DeepSpeed running Transformer Engine is not modelled: use --framework megatron, or "
                             "--fp8 tensorwise or rowwise (torchao's Float8Linear, on any model's linear layers).")
    assert run_json([*base, "tensorwise"], capsys)["parallel"]["layout"]["fp8"] == "tensorwise"
    data = run_json(["plan", "--model", "llama3-8b", "--hardware", "b200", "--gpus", "8", "--seq-len", "8192",
                     "--global-batch", "64", "--fp8", "mxfp8"], capsys)
    assert {row["layout"]["framework"] for row in data["feasible"]} == {"megatron", "fsdp2"}
