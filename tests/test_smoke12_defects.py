"""The eleventh new-user round's leftovers (issue 18, session 18; validate/FINDINGS.md "A new user's
eleventh round", "Found, not fixed"). Each test failed before its fix; the numbers are exact."""

from __future__ import annotations

import json

from tests.cli_run import run_main

CP_REFUSAL = ("layout: context parallelism (--cp) is modelled for training only: an inference prefill's "
              "key/value exchange and decode context parallelism (vLLM's dcp) are not.")


def test_estimate_refuses_to_serve_a_context_parallel_layout_as_simulate_does(capsys):
    """`estimate --cp 2 --hardware h100` sized each serving rank with the whole KV cache ("Inference
    on 2 GPUs: 15.96 GiB fits") while `simulate --cp 2` refuses the layout: the inference verdict now
    carries simulate's sentence; the training verdict (its ZeRO suggestion) stays."""
    args = ["--model", "llama3.1-8b", "--cp", "2", "--hardware", "h100", "--seq-len", "8192"]
    code, out, err = run_main(["estimate", *args, "--json"], capsys)
    fit = json.loads(out)["fit"]
    assert code == 0 and fit["inference"] == {"phase": "inference", "gpus": 2, "refused": CP_REFUSAL}
    # ZeRO 3 over the cp ranks (85,309,186,572 B) no longer fits the 81,117 MiB an H100 reports less the
    # reserve: the first suggestion is 4 GPUs (tests/test_smoke11_defects.py)
    assert fit["training"]["options"][0]["memory"] == 45_157_880_332
    code, out, _ = run_main(["estimate", *args], capsys)
    assert ("Inference on 2 h100-sxm GPUs: not sized; " + CP_REFUSAL.removeprefix("layout: ")) in out.splitlines()
    code, _, err = run_main(["simulate", "--model", "llama3.1-8b", "--cp", "2", "--hardware", "h100", "--prompt",
                         "8192", "--gen", "4"], capsys)
    assert code == 2 and err.strip() == f"error: {CP_REFUSAL}"


def test_a_hardware_file_states_no_zero_for_an_unknown_field(tmp_path, capsys):
    """`sm_count: 0` in a file edited from `hardware --show h100` fell back to the roofline without a
    word, and a clock or power of 0 read as "not given"; `hardware --show` wrote 0 for the unknown
    ones (b200's clock_mhz, gb200's power_watts). The writer now omits them and 0 is one line, exit 2,
    naming the field; every bundled file still loads and round-trips through --show."""
    from pathlib import Path

    from costmodel.hardware import Hardware
    from costmodel.hardware_schema import UNSTATED_AS_ZERO

    for path in sorted(Path("costmodel/hardware").glob("*.json")):
        shown = Hardware.from_dict(json.loads(path.read_text()), path.name).to_dict()
        assert all(shown.get(name, 1) != 0 for name in UNSTATED_AS_ZERO), path.name
        assert Hardware.from_dict(shown, path.name).to_dict() == shown
    for name, absent in (("b200", "clock_mhz"), ("gb200", "power_watts")):
        code, out, _ = run_main(["hardware", "--show", name], capsys)
        assert code == 0 and absent not in json.loads(out)
    code, out, _ = run_main(["hardware", "--show", "h100"], capsys)
    for name in UNSTATED_AS_ZERO:
        edited = tmp_path / f"{name}.json"
        edited.write_text(json.dumps(dict(json.loads(out), **{name: 0})))
        code, _, err = run_main(["simulate", "--model", "llama3.1-8b", "--hardware", str(edited)], capsys)
        assert code == 2 and err.splitlines() == [
            f"error: {edited}: not a valid hardware file: {name} must be greater than 0, got 0."]


def test_plan_serve_generates_what_serve_and_simulate_generate_by_default(capsys):
    """`plan --serve` sized 2,048 + 256 tokens a sequence where `serve --output` and `simulate --gen`
    default to 128: the three read one default (costmodel/spec.py DEFAULT_GEN_TOKENS). Llama 3.1 8B
    at tp 2, batch 32: the last step's context 2,048 + 127 (the last generated token is never fed back),
    each rank's KV cache 32 x 2,175 tokens x 131,072 B (32 layers x 8 key/value heads x 128 x 2 tensors x
    2 bytes) / 2 = 4,561,305,600 B."""
    from cli.plan import plan
    from cli.simulate import simulate
    from reports.serving import serve

    defaults = [{p.name: p.default for p in command.params}[name]
                for command, name in ((plan, "gen"), (simulate, "gen"), (serve, "output_tokens"))]
    assert [int(d) for d in defaults] == [128, 128, 128]
    code, out, err = run_main(["plan", "--model", "llama3.1-8b", "--hardware", "h100", "--gpus", "2", "--serve",
                           "--tp", "2", "--json"], capsys)  # (eager, host-bound: tp 1 x dp 2 ranks first since wt27_tphost)
    row = json.loads(out)["feasible"][0]
    assert code == 0 and row["layout"] == {"tp": 2, "pp": 1, "dp": 1, "batch": 32, "batch_per_replica": 32}
    assert row["last_step"]["context"] == 2_175  # the last step at 2,048 + 127 fed back (the last generated token never is)
    # Since session 26 the row's peak at batch 32 is the prefill's: vLLM's chunk of 8,192 tokens (its
    # default on an H100, serving/budgets.py) holds the FFN's 3 x 8,192 x 7,168 x 2 B = 352,321,536 a
    # rank, more than the 127 generated tokens' cache (32 x 127 x 131,072 / 2 = 266,338,304), beside
    # the prompt's cache and ids (32 x 2,048 x 8 B)
    assert (row["per_rank"]["kv_cache"], row["per_rank"]["transient"]) == (32 * 2_048 * 131_072 // 2,
                                                                           352_321_536 + 32 * 2_048 * 8)
    # at batch 64 the cache of the last step peaks (64 x 127 x 131,072 / 2 = 532,676,608 over the same chunk):
    # sized at 2,175 tokens, beside one token's ids and the gathered logits (64 x 128,256 x 2 B)
    code, out, err = run_main(["plan", "--model", "llama3.1-8b", "--hardware", "h100", "--gpus", "2", "--serve",
                           "--batch", "64", "--tp", "2", "--json"], capsys)
    row = json.loads(out)["feasible"][0]
    assert code == 0 and row["layout"] == {"tp": 2, "pp": 1, "dp": 1, "batch": 64, "batch_per_replica": 64}
    assert row["last_step"]["context"] == 2_175 and row["per_rank"]["kv_cache"] == 64 * 2_175 * 131_072 // 2
    assert row["per_rank"]["transient"] == 64 * 8 + 64 * 128_256 * 2


def test_an_int4_group_must_divide_each_quantized_matrix_k(capsys):
    """`--weight-dtype int4 --weight-group 7` was taken (each row's groups over K rounded up), though
    GPTQ's and AWQ's kernels (vLLM's create_weights) need a group that divides K: one sentence naming
    the first K in the model's order. Llama 3.1 8B: hidden 4,096 (q/k/v, gate/up), intermediate
    14,336 = 2^11 x 7 (down); groups of 4,096 divide the first, not the second."""
    base = ["estimate", "--model", "llama3.1-8b", "--weight-dtype", "int4", "--weight-group"]
    for group, width in (("7", 4_096), ("4096", 14_336)):
        code, _, err = run_main([*base, group], capsys)
        assert code == 2 and err.splitlines() == [
            f"error: --weight-group {group}: int4 groups of {group} input columns do not divide a quantized "
            f"matrix's K = {width} (GPTQ and AWQ kernels need whole groups); use a --weight-group that divides "
            "every K."]
    code, _, err = run_main([*base, "2048", "--json"], capsys)  # 4,096 and 14,336 = 7 x 2,048
    assert code == 0, err
    code, _, err = run_main([*base, "7", "--quant-layout", "gpt-fast"], capsys)  # its own 32-256 groups, K padded
    assert code == 2 and "gpt-fast's int4 takes groups of 32, 64, 128, 256 input columns, not 7" in err


_WINDOWED = dict(vocab_size=99, hidden_size=48, intermediate_size=37, num_hidden_layers=3, num_attention_heads=6,
                 num_key_value_heads=2, head_dim=10, sliding_window=4, max_position_embeddings=64)


def test_a_windowed_cache_after_the_prefill_is_the_storage_it_keeps(capsys):
    """The eleventh round read a sliding layer's cache after a prefill as w - 1 tokens (the afmoe
    config: 7,680 bytes against the estimate's 11,520): numel of keys[:, :, -w+1:], a view whose
    storage is the whole prompt's concatenation (DynamicSlidingWindowLayer.update), which is what
    stays allocated and what validate/measure/memory.kv_cache_bytes counts. The estimate's figure is
    that storage, exact for Mistral (every layer sliding), Gemma 2 (layers 0 and 2) and Gemma 3 at
    b 2, n 9, fp32: a layer's token 2 (k, v) x 2 (b) x 2 heads x 10 x 4 B = 320 B; after the prefill
    every layer holds 9 tokens, after T steps a sliding one min(9 + T, 4), a full one 9 + T. The
    KV cache line says so."""
    import torch
    import transformers

    from costmodel import estimate
    from validate.measure.memory import kv_cache_bytes

    cases = {"mistral": (dict(_WINDOWED, num_hidden_layers=2), (5_760, 2_560, 2_560)),
             "gemma2": (_WINDOWED, (8_640, 5_760, 6_400)),
             "gemma3_text": (dict(_WINDOWED, layer_types=["sliding_attention", "full_attention", "sliding_attention"]),
                             (8_640, 5_760, 6_400))}
    for model_type, (fields, expected) in cases.items():
        fields = dict(fields, model_type=model_type)
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**fields),
                                                              dtype=torch.float32).eval()
        ids = torch.randint(0, 99, (2, 9))
        measured = tuple(kv_cache_bytes(model, {"input_ids": ids}, gen) for gen in (0, 1, 3))
        # gen decode steps (measured) feed back all but the last token of a generation of gen + 1
        ours = tuple(estimate(dict(fields, name=model_type), seq_len=9, batch=2, dtype="fp32",
                              gen_tokens=gen + 1).to_dict()["memory"]["kv_cache"] for gen in (0, 1, 3))
        assert measured == ours == expected, model_type
    memory = estimate(dict(cases["mistral"][0], model_type="mistral", name="mistral"), seq_len=9, batch=2,
                      dtype="fp32").to_dict()["memory"]
    assert memory["kv_cache_note"] == (
        "sliding-window layers hold what Hugging Face's cache holds: the whole prompt after the prefill (T <= 1, "
        "no decode step: the w - 1 tokens it keeps are a view whose storage is the prefill's keys and values), "
        "min(n + T - 1, w) tokens once decoding has begun")


def test_plan_serve_refuses_gen_0_in_one_line(capsys):
    """`plan --serve --gen 0` ranked layouts by per-token decode figures with no decode step: now one
    sentence, exit 2 (simulate --gen 0 drops its decode lines)."""
    code, out, err = run_main(["plan", "-m", "llama3-8b", "--gpus", "2", "--serve", "--gen", "0"], capsys)
    assert code == 2 and out == ""
    assert err.strip() == ("error: plan --serve ranks layouts by their time per output token: --gen 0 generates "
                           "none; use --gen 1 or more.")


def test_plan_serve_refuses_gptq_groups_that_split_a_k_in_one_line(capsys):
    """int4 gptq groups of 96 do not divide Llama-3-8B's K = 4,096: plan --serve listed every layout
    as unsupported and exited 1; now simulate's one sentence, exit 2, before any layout is ranked."""
    args = ["-m", "llama3-8b", "--weight-dtype", "int4", "--weight-group", "96", "--quant-layout", "gptq"]
    code, out, err = run_main(["plan", *args, "--gpus", "2", "--serve"], capsys)
    sentence = ("error: --weight-group 96: int4 groups of 96 input columns do not divide a quantized matrix's "
                "K = 4096 (GPTQ and AWQ kernels need whole groups); use a --weight-group that divides every K.")
    assert code == 2 and out == "" and err.strip() == sentence
    assert run_main(["simulate", *args], capsys)[::2] == (2, sentence + "\n")
