"""A new user's fifteenth round (session 21; validate/FINDINGS.md "A new user's fifteenth round").
Each test failed before its fix; the numbers are exact integers with their arithmetic or the
figure another command prints for the same case."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_json, run_main


@pytest.mark.parametrize("model,why", [
    ("phi3-mini", "fine-tuning memory with a sliding window (2,047) shorter than the sequence"),  # 2,048 by default
    ("pythia-1.4b", "fine-tuning memory for gpt_neox is measured under --attention eager only"),
])
def test_finetune_default_falls_back_to_the_modelled_attention(model, why, capsys):
    """`finetune --model phi3-mini` and `--model pythia-1.4b` with no option refused ("use --attention
    eager"): the default sdpa is not modelled for either. The default now sizes the step under eager,
    the attention that is, with a note saying why; the figures are `--attention eager`'s, and an
    explicit --attention sdpa is still refused."""
    code, out, err = run_main(["finetune", "--model", model, "--json"], capsys)
    assert code == 0, err
    default = json.loads(out)
    assert default["inputs"]["attention"] == "eager"
    assert f"note: attention eager, not transformers' default sdpa: {why}" in err
    assert default["memory"] == run_json(["finetune", "--model", model, "--attention", "eager"], capsys)["memory"]
    code, out, err = run_main(["finetune", "--model", model, "--attention", "sdpa"], capsys)
    assert (code, out) == (2, "") and err.splitlines()[-1].startswith("error: fine-tuning memory")
    # what would make it fit is typed with the eager it was sized under: a shorter --seq-len alone runs
    # sdpa within Phi-3's window (12.44 GiB at 381 tokens x 4, where the suggestion said 15.48 under eager)
    fit = run_json(["finetune", "--model", model, "--hardware", "t4", "--batch", "4"], capsys)["fit"]
    assert fit["options"] and all(o["change"].endswith(" --attention eager") for o in fit["options"])
    for option in fit["options"]:  # each change is --option value pairs, in place of the typed ones
        change = option["change"].split()
        typed = {"--hardware": "t4", "--batch": "4", **dict(zip(change[::2], change[1::2]))}
        again = run_json(["finetune", "--model", model, *(t for pair in typed.items() for t in pair)], capsys)
        assert again["memory"]["total"] == option["memory"]
    # within the window, Phi-3's default stays transformers' sdpa, without a note
    code, out, err = run_main(["finetune", "--model", "phi3-mini", "--seq-len", "1024", "--json"], capsys)
    assert code == 0 and json.loads(out)["inputs"]["attention"] == "sdpa" and "note:" not in err


def _hardware_file(tmp_path, capsys, **fields):
    code, out, _ = run_main(["hardware", "--show", "h100-sxm"], capsys)
    assert code == 0
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps({**json.loads(out), "name": "my-h100", **fields}))
    return str(path)


def test_gemv_bandwidth_above_the_memory_bandwidth_is_refused(tmp_path, capsys):
    """gemv_bandwidth_bytes_per_s had no upper bound: 1e30 B/s was taken and every GEMM's bytes read at
    it. A read-and-reduce stream reads memory, so a rate above bandwidth_bytes_per_s (H100 SXM: 3.35e12)
    is one error line, exit 2; the bandwidth itself is accepted."""
    for rate in (3.36e12, 1e30):
        path = _hardware_file(tmp_path, capsys, gemv_bandwidth_bytes_per_s=rate)
        code, out, err = run_main(["simulate", "--model", "llama2-7b", "--hardware", path, "--prompt", "100",
                                   "--gen", "2"], capsys)
        assert (code, out) == (2, "") and err.count("\n") == 1
        assert f"gemv_bandwidth_bytes_per_s ({rate:.4g}) must be at most bandwidth_bytes_per_s (3.35e+12)" in err
    path = _hardware_file(tmp_path, capsys, gemv_bandwidth_bytes_per_s=3.35e12)
    code, _, err = run_main(["simulate", "--model", "llama2-7b", "--hardware", path, "--prompt", "100",
                             "--gen", "2"], capsys)
    assert code == 0, err


def test_simulate_says_by_how_much_one_sequence_does_not_fit(capsys):
    """A 10M-token prompt on Llama-2-7B said "fits batch <= 0" and nothing of how far one sequence is
    from fitting. The memory now states it: the prefill at batch 1 needs 5,256,436,895,744 bytes, the
    H100's usable 70.8 GiB (76,014,734,540 bytes: the 81,117 MiB it reports x 0.9 less the 512 MiB
    reserve) leave 5,180,422,161,204 bytes over; a batch of which one sequence fits is 0 over."""
    case = ["simulate", "--model", "llama2-7b", "--hardware", "h100", "--gen", "1"]
    data = run_json([*case, "--prompt", "10000000"], capsys)
    memory, usable = data["memory"], data["hardware"]["serving_memory_bytes"]
    assert usable == 81_117 * 2**20 * 9 // 10 - 512 * 2**20 == 76_014_734_540
    # session 26: the eager scores, 32 heads x 1e14 pairs x 10 B, replace the last position's logits
    assert memory["bytes_by_phase"]["prefill"] == 32_005_256_436_831_744
    assert (memory["max_batch"], memory["one_sequence_over_bytes"]) == (0, 32_005_256_436_831_744 - usable)
    # (at 100,000 tokens one sequence fits under sdpa; eager's scores, 32 x 1e10 x 10 B, do not since session 26)
    memory = run_json([*case, "--prompt", "100000", "--batch", "64", "--attention", "sdpa"], capsys)["memory"]
    assert (memory["fits"], memory["max_batch"], memory["one_sequence_over_bytes"]) == (False, 1, 0)
    code, out, _ = run_main([*case, "--prompt", "10000000"], capsys)  # the text says it too
    assert code == 0 and "fits batch <= 0" not in out
    assert "one sequence of this prompt does not fit: it needs 28.43 PiB more than the 70.79 GiB usable" in out


def test_kimi_linear_reads_output_router_logits(tmp_path, capsys):
    """kimi_linear refused output_router_logits as a load-balancing loss the tree does not hold, but
    transformers 5.24's KimiLinearForCausalLM never reads the flag into its loss (modeling_kimi_linear.py:
    the loss is the language model's alone; KimiLinearConfig has no router_aux_loss_coef). The config
    is read, and its parameters still equal the class's on the meta device."""
    from tests.family_configs import estimated_total, hf_meta_count
    from tests.test_hf_kimi_linear import KIMI

    fields = dict(KIMI, output_router_logits=True)
    assert estimated_total(fields, "x") == hf_meta_count(fields) == estimated_total(KIMI, "x")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fields))
    code, _, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 0, err


@pytest.mark.parametrize("args,typed,values", [
    (["sweep", "--model", "llama2-7b", "--model", "mistral-7b", "--seq-len", "128"], "--model",
     "('llama2-7b', then 'mistral-7b')"),
    (["estimate", "--model", "gpt2", "--seq-len", "128", "-n", "256"], "--seq-len and -n", "('128', then '256')"),
    (["simulate", "--model=gpt2", "--hardware", "h100", "--hardware=a100-80gb"], "--hardware",
     "('h100', then 'a100-80gb')"),
    (["serve", "--model", "llama3.2-1b", "--hardware", "l4", "--rate", "2", "--prefix-caching", "--no-prefix-caching"],
     "--prefix-caching and --no-prefix-caching", ""),
])
def test_an_option_given_two_values_is_refused(args, typed, values, capsys):
    """click keeps the last value of a single-valued option: `sweep --model llama2-7b --model mistral-7b`
    swept Mistral alone (its CSV's model column), `report --model a --model b` reported b, a flag and its
    --no- form ran the last. One line, exit 2, nothing on stdout; the same value twice, and the options
    that take several (formulas --quantity), still run."""
    code, out, err = run_main(args, capsys)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"error: {typed}: one option given two values{' ' + values if values else ''}; ")
    code, out, err = run_main(["report", "--model", "gpt2", "--model", "llama2-7b", "--out", "x", "--no-measure"], capsys)
    assert code == 2 and err.rstrip().endswith("give it once (--models takes several, comma-separated).")
    assert run_main(["estimate", "--model", "gpt2", "--model", "gpt2", "--sp", "--sp", "--tp", "2"], capsys)[0] == 0
    code, out, _ = run_main(["formulas", "--model", "gpt2", "--block", "ffn.mlp", "--quantity", "params",
                             "--quantity", "flops_matmul"], capsys)
    assert code == 0 and "params = 2*d*d_ff + d + d_ff" in out and "flops_matmul = 4*b*d*d_ff*n" in out


def test_json_units_name_the_counts_among_the_bytes(capsys):
    """`finetune --json` said its memory was all bytes, but memory.params and trainable_params are
    parameter counts (Llama-2-7B with LoRA r 16 on q and v: 6,738,415,616 + 8,388,608 = 6,746,804,224
    parameters, 32 layers x 2 x 16 x (4,096 + 4,096) = 8,388,608 trainable); `simulate --json` said the
    same of a memory holding max_batch (sequences) and max_context (tokens)."""
    tune = run_json(["finetune", "--model", "llama2-7b"], capsys)
    assert (tune["memory"]["params"], tune["memory"]["trainable_params"]) == (6_746_804_224, 8_388_608)
    assert tune["units"]["memory"] == "bytes; params, trainable_params: parameters (a count)"
    sim = run_json(["simulate", "--model", "llama2-7b", "--hardware", "h100", "--gen", "2"], capsys)
    assert "memory.max_batch: sequences, memory.max_context and model_context: tokens" in sim["units"]["bytes"]


def test_python_sweep_axes_are_whole_numbers():
    """costmodel.sweep read each axis through int(): seq_len=128.9 swept 128, the string "128" swept the
    lengths 1, 2 and 8, [128, True] swept batch-like 1, and [] failed with an IndexError, where
    costmodel.estimate refuses a non-integer length in one ConfigError. Numpy's integers still pass."""
    import numpy as np

    import costmodel
    from costmodel.config import ConfigError

    for bad, message in ((128.9, "got 128.9"), ("128", "got '128'"), ([128, True], "got True"), ([], "is empty")):
        with pytest.raises(ConfigError, match=message):
            costmodel.sweep("gpt2", seq_len=bad)
    frame = costmodel.sweep("gpt2", seq_len=np.array([256, 128, 256]), batch=np.int64(2))
    assert frame[["seq_len", "batch"]].values.tolist() == [[128, 2], [256, 2]]
    # GPT-2's KV cache at n 128, batch 2: 2 (K, V) x 12 layers x 768 x 2 bytes (bf16) x 128 x 2 = 9,437,184
    assert frame["kv_cache_bytes"].tolist()[0] == 9_437_184
