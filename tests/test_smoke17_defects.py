"""A new user's seventeenth round (session 23; validate/FINDINGS.md "A new user's seventeenth round").
Each test failed before its fix; the numbers are exact integers with their arithmetic, a
measurement of transformers' own generate, or the figure another command prints for the same case."""

from __future__ import annotations

import pytest

from tests.cli_run import run_json

TINY_LLAMA = {"model_type": "llama", "hidden_size": 48, "intermediate_size": 37, "num_hidden_layers": 3,
              "num_attention_heads": 6, "num_key_value_heads": 2, "vocab_size": 61,
              "max_position_embeddings": 64, "bos_token_id": 0, "eos_token_id": None, "pad_token_id": 0}
TINY_GPT2 = {"model_type": "gpt2", "n_embd": 24, "n_layer": 2, "n_head": 3, "n_positions": 32, "vocab_size": 50,
             "bos_token_id": 0, "eos_token_id": None, "pad_token_id": 0}


@pytest.mark.slow
@pytest.mark.parametrize("config", [TINY_GPT2, TINY_LLAMA], ids=["gpt2", "llama-gqa"])
@pytest.mark.parametrize("prompt, new", [(8, 1), (8, 2), (7, 5)])
def test_the_kv_cache_after_generate_holds_prompt_plus_new_minus_one(config, prompt, new):
    """transformers' generate(max_new_tokens=T) leaves n + T - 1 tokens in past_key_values (the
    last token is returned, never fed back); estimate's KV cache after T generated tokens was sized
    for n + T (a tiny GPT-2, prompt 8, T 5: 12 held, 13 counted). Measured: the bytes of every
    layer's keys and values in the returned cache."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import costmodel

    transformers.logging.set_verbosity_error()
    hf_config = transformers.AutoConfig.for_model(**config)
    model = transformers.AutoModelForCausalLM.from_config(hf_config).eval()
    with torch.no_grad():
        out = model.generate(torch.ones(2, prompt, dtype=torch.long), max_new_tokens=new, do_sample=False,
                             return_dict_in_generate=True, use_cache=True)
    cache = out.past_key_values
    assert cache.get_seq_length() == prompt + new - 1
    measured = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
    ours = costmodel.estimate(dict(config), seq_len=prompt, gen_tokens=new, batch=2, dtype="fp32")
    assert ours.to_dict()["memory"]["kv_cache"] == measured


def test_estimate_simulate_and_plan_size_the_cache_at_prompt_plus_gen_minus_one(capsys):
    """llama3-8b, prompt 2048, gen 128, batch 32: the cache is 32 sequences x 2,175 tokens x 32 layers
    x 2 (K, V) x 8 KV heads x 128 x 2 bytes = 9,122,611,200 (it was 2,176 tokens: 9,126,805,504), in
    estimate, in plan --serve's rank, and the last decode step's context is 2,175 in simulate and plan
    (plan said 2,176, a step the generation never runs); simulate's memory at that step is plan's total.
    Checked at batch 64 since session 26: at 32, plan --serve's rank peaks in the prefill (vLLM's chunk
    of 8,192 tokens holds the FFN's 3 x 8,192 x 14,336 x 2 B = 704,643,072, more than the 127 generated
    tokens' cache, 532,676,608); at 64 the last step's cache (64 x 127 x 131,072 = 1,065,353,216 over
    the prompt's) peaks, 64 x 2,175 tokens x 131,072 B = 18,245,222,400."""
    kv = 64 * 2175 * 32 * 2 * 8 * 128 * 2
    assert kv == 18_245_222_400
    workload = ["--model", "llama3-8b", "--batch", "64", "--attention", "flash"]
    estimate = run_json(["estimate", *workload, "--seq-len", "2048", "--gen-tokens", "128"], capsys)
    assert estimate["memory"]["kv_cache"] == kv
    plan = run_json(["plan", "--serve", *workload, "--prompt", "2048", "--gen", "128", "--gpus", "1",
                     "--hardware", "h100"], capsys)
    row = plan["feasible"][0]
    assert row["per_rank"]["kv_cache"] == kv and row["last_step"]["context"] == 2175
    simulate = run_json(["simulate", *workload, "--prompt", "2048", "--gen", "128", "--hardware", "h100"], capsys)
    assert simulate["generation_table"][-1]["context"] == 2175
    # the same eager step (kernel-bound at batch 64): the kernels less their per-block launches, which the
    # host's ops stand for (generate's 2,488 at the 6.545 us an op the H100 borrows); plan --serve's step
    # had no host term and kept 32 x 9 + 3 = 291 launches x 10 us more until wt27_tphost
    assert simulate["decode"]["last_token"]["seconds"] == row["last_step"]["seconds"]
    assert row["last_step"]["seconds"] > 2488 * 6.545241752576789e-06
    assert simulate["memory"]["bytes_by_phase"]["decode"] == row["per_rank"]["total"] == 34_322_162_688
    # weights 16,060,522,496 + that cache + 512 B of buffers + one token's ids (64 x 8 B) and logits (64 x 128,256 x 2 B)
    assert row["per_rank"]["total"] == 16_060_522_496 + kv + 512 + 64 * 8 + 64 * 128_256 * 2


def test_serve_rate_inf_is_told_apart_from_no_rate(capsys):
    """`serve --rate inf --json` wrote "rate": null (finite() maps infinities to null), the null of a run
    with no rate (--concurrency); it writes "inf", and the JSON units say what each means. --rates too."""
    from costmodel import json_units

    case = ["serve", "--model", "llama3-8b", "--hardware", "h100", "--requests", "4"]
    burst = run_json([*case, "--rate", "inf"], capsys)
    assert burst["setup"]["rate"] == "inf" and '"inf"' in burst["units"]["setup.rate, rates.rate"]
    assert burst["units"] == json_units.JSON_UNITS["serve"]
    assert run_json([*case, "--concurrency", "2"], capsys)["setup"]["rate"] is None
    assert run_json([*case, "--rate", "2"], capsys)["setup"]["rate"] == 2.0
    swept = run_json([*case, "--rates", "2,inf"], capsys)
    assert [row["rate"] for row in swept["rates"]] == [2.0, "inf"]


@pytest.mark.parametrize("layout, needed", [(["--gpus", "8", "--dp", "8"], "the most loaded rank needs 112.10 GiB"),
                                            ([], "one GPU needs 136.09 GiB")])
def test_simulate_train_says_it_does_not_fit_before_the_time_and_dollars(layout, needed, capsys):
    """`simulate --train` on a layout that does not fit printed the step, the time to train and the dollars
    first and "does NOT fit" at the end (llama2-7b, 8 H100s, dp 8: 112.10 GiB a rank, $74,885 for 1T
    tokens). The verdict is now the line under the title; --json puts "fits" first."""
    from tests.cli_run import run_main

    case = ["simulate", "--train", "--model", "llama2-7b", "--hardware", "h100", *layout, "--tokens", "1e12",
            "--price", "2"]
    code, out, err = run_main(case, capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1] == (f"DOES NOT FIT: {needed}, more than the 78.72 GiB of the GPU; the times and cost below "
                        "are for a run that cannot start (memory at the end).")
    assert lines.index(lines[1]) < min(i for i, line in enumerate(lines) if "time to train" in line)
    data = run_json(case, capsys)
    assert list(data)[:2] == ["fits", "memory_capacity"] and data["fits"] is False
    code, out, _ = run_main(["simulate", "--train", "--model", "gpt2", "--hardware", "h100"], capsys)
    assert code == 0 and "NOT FIT" not in out


@pytest.mark.parametrize("alpha", ["inf", "nan", "0"])
def test_finetune_refuses_an_infinite_lora_alpha(alpha, capsys):
    """`finetune --lora-alpha inf` ran (nan and 0 were refused): alpha / r scales the adapters' output,
    so an infinite alpha is no setting; one error line, exit 2."""
    from tests.cli_run import run_main

    code, out, err = run_main(["finetune", "--model", "qwen2.5-7b", "--lora-alpha", alpha], capsys)
    assert (code, out) == (2, "")
    assert err.strip() == f"error: --lora-alpha must be positive and finite, got {float(alpha)!r}."
