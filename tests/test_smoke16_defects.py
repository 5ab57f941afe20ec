"""A new user's sixteenth round (session 22; validate/FINDINGS.md "A new user's sixteenth round").
Each test failed before its fix; the numbers are exact integers with their arithmetic or the
figure another command prints for the same case."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_json, run_main


@pytest.mark.slow
def test_generate_feeds_back_all_but_the_last_token():
    """The fact the bound rests on: transformers' generate with max_new_tokens=T runs the prompt and
    T - 1 one-token steps, so a tiny GPT-2 of 8 learned positions generates from a prompt of 8 with
    T = 1, from 7 with T = 2, and fails (IndexError in wpe) from 7 with T = 3."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GPT2Config(n_positions=8, n_embd=16, n_layer=1, n_head=2, vocab_size=50,
                                  bos_token_id=0, eos_token_id=None)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    fed = []
    model.transformer.wpe.register_forward_pre_hook(lambda module, args: fed.extend(args[0].flatten().tolist()))
    for prompt, new in ((8, 1), (7, 2)):
        fed.clear()
        out = model.generate(torch.ones(1, prompt, dtype=torch.long), max_new_tokens=new, do_sample=False,
                             pad_token_id=0)
        assert out.shape == (1, prompt + new) and max(fed) == prompt + new - 2 == 7
    with pytest.raises(IndexError):
        model.generate(torch.ones(1, 7, dtype=torch.long), max_new_tokens=3, do_sample=False, pad_token_id=0)


@pytest.mark.parametrize("args", [
    ["simulate", "--model", "gpt2", "--prompt", "1024", "--gen", "1"],
    ["estimate", "--model", "gpt2", "--seq-len", "1024", "--gen-tokens", "1"],
    ["plan", "--serve", "--model", "gpt2", "--prompt", "1024", "--gen", "1", "--hardware", "a100-80gb",
     "--gpus", "1"],
])
def test_a_full_prompt_and_one_generated_token_fit_learned_positions(args, capsys):
    """`simulate --model gpt2 --prompt 1024 --gen 1` was refused ("sequence length 1025 exceeds the
    1024 learned positions"), and so were estimate and plan --serve: the one generated token is
    never fed back, so 1024 positions are used. One more generated token is still refused."""
    code, out, err = run_main(args, capsys)
    assert code == 0, err
    more = [("2" if a == "1" and i and args[i - 1] in ("--gen", "--gen-tokens") else a) for i, a in enumerate(args)]
    code, out, err = run_main(more, capsys)
    assert (code, out) == (2, "")
    assert err.strip() == "error: sequence length 1025 exceeds the 1024 learned positions of model 'gpt2'."


def test_the_default_prompt_leaves_room_for_the_tokens_fed_back(capsys):
    """With --gen 5 and no --prompt, the default prompt is what GPT-2's 1,024 positions leave once
    the 4 tokens fed back are added: 1,020 (it was 1,019), and the last decode step's context is
    1,020 + 5 - 1 = 1,024."""
    report = run_json(["simulate", "--model", "gpt2", "--gen", "5"], capsys)
    assert report["inputs"]["prompt"] == 1020


def test_xglm_buffers_hold_the_two_offset_rows(tmp_path, capsys):
    """XGLMSinusoidalPositionalEmbedding holds max_position_embeddings + 2 rows (it looks position p
    up at row p + 2): (64 + 2) x 48 x 2 bytes of bf16 = 6,336 (tests/test_hf_xglm.py measures the
    class's). estimate said 6,144, the table without its offset rows."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "xglm", "vocab_size": 99, "d_model": 48, "ffn_dim": 37,
                                "num_layers": 2, "attention_heads": 6, "max_position_embeddings": 64}))
    report = run_json(["estimate", "--config", str(path), "--seq-len", "9"], capsys)
    assert report["memory"]["buffers"] == (64 + 2) * 48 * 2 == 6336


def test_training_json_names_the_units_of_its_cost_split_and_fractions(capsys):
    """`simulate --train --tokens --price --json` held parallel.communication and .wire in bytes,
    step.mfu as a fraction and cost.gpu_hours/dollars with no unit under "units" (they named
    seconds, FLOP, memory bytes and tokens a second only); `plan --json` held split.* in seconds,
    mfu/hfu and the cost block likewise unnamed."""
    args = ["--model", "llama2-7b", "--hardware", "h100-sxm", "--gpus", "8", "--tokens", "1e12", "--price", "2"]
    sim = run_json(["simulate", "--train", *args], capsys)
    assert sim["parallel"]["communication"]["dp"]["all_reduce"] == 13_476_831_232  # 6,738,415,616 x 2 bytes
    assert 0 < sim["step"]["mfu"] < 1 and sim["cost"]["price_per_gpu_hour"] == 2.0
    assert sim["units"]["parallel"].startswith("bytes (per_rank, stages, communication, wire")
    assert sim["units"]["step"].startswith("mfu, hfu, bubble_fraction: fractions of 1")
    assert "gpu_hours: GPU-hours" in sim["units"]["cost"] and "dollars: dollars" in sim["units"]["cost"]
    plan = run_json(["plan", *args], capsys)
    best = plan["feasible"][0]
    assert set(best["split"]) >= {"compute", "communication", "bubble", "optimizer"} and 0 < best["mfu"] < 1
    assert plan["units"]["split"] == "seconds" and plan["units"]["mfu, hfu"] == "fractions of 1"
    # session 40 (wt40_user2): simulate's cost units name a generation's block too (`simulate --price` without
    # --train), after the training block's units, which plan's are
    assert sim["units"]["cost"].startswith(f"with --train: {plan['units']['cost']}; without --train: ")
    assert plan["units"]["per_rank"] == "bytes"


@pytest.mark.parametrize("typed,preset", [
    ("NVIDIA H100", "h100-sxm"),            # suggested h800, h200, h20 (not the H100)
    ("nvidia h100 sxm", "h100-sxm"),
    ("nvidia-a100-80gb", "a100-80gb"),
    ("AMD MI300X", "mi300x"),
    ("NVIDIA Tesla T4", "t4"),
])
def test_a_vendor_word_before_a_known_name_is_read(typed, preset, capsys):
    """'NVIDIA H100 80GB HBM3' (the driver's name, an alias) and 'H100' resolved, but 'NVIDIA H100'
    was an unknown hardware whose suggestions left out the H100: the vendor's words before a known
    name (hardware_aliases.json "_vendor_words") are now dropped, where the whole name is unknown."""
    assert run_json(["hardware", "--show", typed], capsys)["name"] == preset


def test_a_vendor_word_keeps_a_refused_name_refused(capsys):
    """'NVIDIA A100' is 'a100' with the vendor's word: refused with its sentence, as 'a100' is."""
    code, out, err = run_main(["hardware", "--show", "NVIDIA A100"], capsys)
    assert (code, out) == (2, "") and "comes as 40 or 80 GB SXM4 and as 80 GB PCIe" in err


def test_one_hardware_named_twice_in_the_capacity_search_is_refused(capsys):
    """`plan --serve --rate --hardware "h100,NVIDIA H100 80GB HBM3"` (one preset by two of its names)
    searched h100-sxm twice: every row listed twice and "72 configurations" where there are 36.
    It is one line now, as report's --models names a model twice."""
    code, out, err = run_main(["plan", "--serve", "--model", "llama3-8b", "--hardware", "h100,NVIDIA H100 80GB HBM3",
                               "--rate", "5", "--slo-ttft", "2", "--slo-tpot", "0.1"], capsys)
    assert (code, out) == (2, "")
    assert err == "error: --hardware: h100-sxm is named twice (its spellings and aliases are one hardware).\n"


def test_a_rate_given_twice_in_a_rate_sweep_is_refused(capsys):
    """`serve --rates 1,1` ran the same simulation twice and printed two equal rows."""
    code, out, err = run_main(["serve", "--model", "llama3-8b", "--requests", "20", "--rates", "1,1.0"], capsys)
    assert (code, out, err) == (2, "", "error: --rates '1,1.0': a rate is given twice.\n")
