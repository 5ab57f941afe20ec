"""OpenAI GPT, GPT-1 (costmodel/hf_openai_gpt.py: model_type "openai-gpt") against transformers 5.24's
OpenAIGPTLMHeadModel built from the same config dict: parameters, buffers (a P x P mask in the model
dtype in every layer, the position ids), validate's rows under eager attention (the class has no sdpa
path), bytes saved for backward, a prefill's FLOPs, and generation: the class holds no KV cache, so
generate() reruns the prefix for every token, which estimate and simulate say and count; the configs
refused in one line."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main
from tests.family_checks import assert_class_default_total, assert_counts_exact, family_checks
from tests.family_configs import assert_rows_exact, buffer_bytes_both, estimated_total, odd_config_rows

_BASE = dict(model_type="openai-gpt", vocab_size=99, n_embd=48, n_head=6, n_layer=3, n_positions=64)

CONFIGS = {
    # OpenAIGPTConfig's layout: gelu (transformers' gelu_new), a tied head, dropout 0.1 everywhere
    "openai-gpt": dict(_BASE),
    # relu, an untied head, no dropout, two layers, a context of 40
    "openai-gpt-untied": dict(_BASE, afn="relu", tie_word_embeddings=False, n_layer=2, n_positions=40,
                              resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0),
}


CHECKS = family_checks(CONFIGS)
test_parameters_equal_the_class = CHECKS.parameters_equal_the_class


def test_parameters_exact_integers():
    """The odd configs' counts and OpenAIGPTConfig()'s (openai-community/openai-gpt: d 768, 12 layers,
    12 heads, an MLP of 4 d, vocabulary 40,478, 512 positions, tied), the meta models' (transformers 5.24)."""
    # (99 + 64) * 48 + 3 * 28,272 (c_attn 48*144 + 144, c_proj 48*48 + 48, c_fc 48*192 + 192,
    # c_proj 192*48 + 48, two LayerNorms 4*48); untied: (2*99 + 40) * 48 + 2 * 28,272
    assert_counts_exact(CONFIGS, [92_640, 67_968])
    assert_class_default_total("openai-gpt", 116_534_784)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_buffers_equal_the_class(name):
    """Every layer's Attention.bias, tril(ones(P, P)) in the model dtype (bf16: 2 bytes), and the model's
    int64 position_ids of P: 3 * 64**2 * 2 + 64 * 8 and 2 * 40**2 * 2 + 40 * 8."""
    pytest.importorskip("transformers")
    ours, theirs = buffer_bytes_both(CONFIGS[name], name)
    assert ours == theirs == {"openai-gpt": 25_088, "openai-gpt-untied": 6_720}[name]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_validate_rows_exact(name):
    """validate's rows (validate/hf_openai_gpt.py writes the config.json back; bf16 under FakeTensorMode,
    b 2, n 12, 2 generated tokens, eager attention): parameters, forward and backward matmul FLOPs,
    other ops' elements, bytes saved for backward, and the KV cache the class holds after generating:
    none (its output has no cache field), 0 against 0."""
    pytest.importorskip("transformers")
    rows = odd_config_rows(CONFIGS[name], name, "eager")
    assert_rows_exact(rows)
    assert [(row.formula, row.measured) for row in rows if row.quantity == "KV-cache bytes"] == [(0, 0)]


# Bytes saved for backward of the class itself (b 2, n 9): the mask's product keeps only the buffer's slice
# (excluded as a buffer), the softmax runs in the activation dtype.
test_saved_bytes = CHECKS.saved_bytes


def test_saved_bytes_integers():
    """The bf16 figures at b 2, n 9 (eager), which the class's saved-tensor hooks measure (test_saved_bytes)."""
    from costmodel import estimate

    figures = [estimate(dict(CONFIGS[name], name=name), seq_len=9, batch=2, dtype="bf16").to_dict()
               ["memory"]["activations"] for name in sorted(CONFIGS)]
    assert figures == [184_324, 54_796]


test_prefill_flops = CHECKS.prefill_flops


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_generation_reruns_the_prefix(name):
    """transformers' generate() on the class (greedy, T = 4 new tokens, b 2, prompt 9) runs the prefill
    and T - 1 forwards over the prompt and the tokens so far, each with the last position's logits:
    its FlopCounterMode total equals simulate's steps, the prefill tree at n and its rerun leaves
    (Roofline.step_leaves) at n + 1 .. n + T - 1."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from torch.utils.flop_counter import FlopCounterMode

    from costmodel.config import Workload
    from costmodel.evaluate import exact, values
    from costmodel.hardware import load_hardware
    from costmodel.hf import from_hf_config
    from costmodel.roofline_model import Roofline

    config, b, n, new = CONFIGS[name], 2, 9, 4
    cfg = from_hf_config(config, name="odd")
    roof = Roofline(cfg, load_hardware("h100-sxm"), "fp32")
    leaves, rerun = roof.step_leaves()
    assert rerun and roof.decode_model is None

    def flops(tree_leaves, tokens: int) -> int:
        return sum(exact(leaf.total("flops_matmul"), values(cfg, Workload(seq_len=tokens, batch=b)))
                   for leaf in tree_leaves)

    ours = flops(roof.prefill_model.leaves, n) + sum(flops(leaves, n + t) for t in range(1, new))
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model(**config)).eval()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model.generate(torch.randint(0, 99, (b, n)), max_new_tokens=new, min_new_tokens=new,
                             do_sample=False, pad_token_id=0)
    assert out.shape == (b, n + new)
    assert counter.get_total_flops() == ours == {"openai-gpt": 14_524_416, "openai-gpt-untied": 9_708_288}[name]


def _config_file(tmp_path, fields):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(fields))
    return str(path)


def test_estimate_says_the_class_holds_no_cache(tmp_path, capsys):
    """estimate: a KV cache of 0 B, with the sentence saying why; the generation line is the last step's
    rerun, a prefill of n + T - 1 tokens (here 12 + 3 = 15 rows of ids: larger than the prompt's)."""
    from costmodel import estimate

    path = _config_file(tmp_path, CONFIGS["openai-gpt"])
    code, out, err = run_main(["estimate", "--config", path, "--seq-len", "12", "--gen-tokens", "4"], capsys)
    assert code == 0 and err == ""
    assert "KV cache                    0 B   (the class holds none: generation reruns the decoder" in out
    at = {T: estimate(dict(CONFIGS["openai-gpt"], name="x"), seq_len=12, gen_tokens=T).to_dict()["memory"]
          for T in (1, 4)}
    prefill_15 = estimate(dict(CONFIGS["openai-gpt"], name="x"), seq_len=15).to_dict()["memory"]
    assert at[4]["kv_cache"] == 0
    assert at[4]["generate_total"] == prefill_15["generate_total"] > at[1]["generate_total"]


def test_simulate_times_the_reruns(tmp_path, capsys):
    """simulate: the input line says no KV cache; each decode step is the rerun over its context (the
    roofline's uncached step), so the roofline's two columns agree."""
    path = _config_file(tmp_path, CONFIGS["openai-gpt"])
    code, out, err = run_main(["simulate", "--config", path, "--hardware", "h100-sxm", "--prompt", "12",
                              "--gen", "4", "--time-model", "roofline", "--json"], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["inputs"]["kv_cache_held"] is False and data["memory"]["kv_bytes_per_token"] == 0
    rows = data["generation_table"]
    assert [row["context"] for row in rows] == [13, 14, 15]
    assert [row["with_cache_seconds"] for row in rows] == [row["without_cache_seconds"] for row in rows]
    code, out, _ = run_main(["simulate", "--config", path, "--hardware", "h100-sxm", "--prompt", "12", "--gen", "4"], capsys)
    assert code == 0 and "no KV cache (the class holds none: every decode step reruns the decoder" in out


@pytest.mark.parametrize("args", [["serve", "--hardware", "h100-sxm", "--rate", "5", "--prompt", "12",
                                   "--output", "4"],
                                  ["simulate", "--hardware", "h100-sxm", "--tp", "2", "--prompt", "12", "--gen", "4"]])
def test_decode_steps_against_a_cache_refused(tmp_path, capsys, args):
    """An engine's or a layout's decode step (one token against a cache) is refused in one line."""
    path = _config_file(tmp_path, CONFIGS["openai-gpt"])
    code, _, err = run_main([args[0], "--config", path, *args[1:]], capsys)
    errors = [line for line in err.splitlines() if line.startswith("error:")]  # after a layout's notes
    assert code == 2 and errors == [err.splitlines()[-1]]
    assert errors[0].startswith("error: openai_gpt's Hugging Face class holds no KV cache")


@pytest.mark.parametrize("command", [["estimate", "--seq-len", "12"],
                                     ["simulate", "--hardware", "h100-sxm", "--prompt", "12", "--gen", "4"]])
def test_a_quantized_cache_refused(tmp_path, capsys, command):
    """--kv-dtype quantizes a cache the class does not hold: one line, exit 2."""
    path = _config_file(tmp_path, CONFIGS["openai-gpt"])
    code, _, err = run_main([command[0], "--config", path, *command[1:], "--kv-dtype", "fp8"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("error: kv_dtype fp8: openai_gpt's Hugging Face class holds no KV cache to quantize")


def test_sdpa_refused(tmp_path, capsys):
    path = _config_file(tmp_path, CONFIGS["openai-gpt"])
    code, _, err = run_main(["estimate", "--config", path, "--attention", "sdpa"], capsys)
    assert code == 2 and err.count("\n") == 1 and "has no scaled_dot_product_attention path" in err


@pytest.mark.parametrize("change, words", [
    ({"afn": "silu"}, "unsupported afn 'silu' for openai-gpt"),
    ({"attn_pdrop": 0.0}, "resid_pdrop, embd_pdrop and attn_pdrop differ"),
    ({"n_head": 5}, "n_embd (48) is not divisible by n_head (5)"),
])
def test_refused_in_one_line(tmp_path, capsys, change, words):
    path = _config_file(tmp_path, dict(CONFIGS["openai-gpt"], **change))
    code, _, err = run_main(["estimate", "--config", path], capsys)
    assert code == 2 and err.count("\n") == 1 and words in err


def test_architectures_alone():
    """A config.json naming only its class reads as the model_type."""
    fields = {k: v for k, v in CONFIGS["openai-gpt"].items() if k != "model_type"}
    assert estimated_total(dict(fields, architectures=["OpenAIGPTLMHeadModel"]), "x") == 92_640
