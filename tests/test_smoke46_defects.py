"""What a new user's round 46 turned up (wt46_user): the README and docs/ run as an ML engineer types them,
through the commands and the Python API, with the mistakes such a user makes. Each test runs the command or
the call as typed and checks the answer or the one error line; each failed before its fix.
"""

from __future__ import annotations

import json

import pytest

import costmodel
from costmodel.config import ConfigError
from costmodel.hardware import load_hardware
from costmodel.quantization import NF4_BLOCKSIZES
from tests.cli_run import one_error_line, run_json, run_main

BASE_HW = {"name": "x", "flops_per_s": {"bf16": 4e14}, "bandwidth_bytes_per_s": 2e12, "memory_bytes": 8e10,
           "vector_flops_per_s": 5e13}


# ---------------------------------------------------------------------------------------------
# 1. a GPU typed as the model, a model as the GPU

@pytest.mark.parametrize("args, said", [
    (["estimate", "--model", "h100"], "error: unknown model 'h100': 'h100' names a GPU (h100-sxm), not a model; it "
     "goes to --hardware (hardware= in Python), and --model takes a preset (`models`), a Hub id or a config.json."),
    (["estimate", "--model", "NVIDIA A100-SXM4-80GB"], "error: unknown model 'NVIDIA A100-SXM4-80GB': 'NVIDIA "
     "A100-SXM4-80GB' names a GPU (a100-80gb), not a model; it goes to --hardware (hardware= in Python), and --model "
     "takes a preset (`models`), a Hub id or a config.json."),
    (["estimate", "--model", "v100"], "error: unknown model 'v100': 'v100' names a GPU, not a model; it goes to "
     "--hardware (hardware= in Python), and --model takes a preset (`models`), a Hub id or a config.json."),
    (["simulate", "--model", "llama3-8b", "--hardware", "Llama-3.1-8B-Instruct"], "error: unknown hardware "
     "'Llama-3.1-8B-Instruct': 'Llama-3.1-8B-Instruct' names a model (llama3.1-8b), not a GPU; it goes to --model, "
     "and --hardware takes a GPU preset (`hardware`) or a hardware file (.json)."),
    # a preset's own name is not said again in brackets, as `--model v100` says none (it read "'llama3-8b' names a
    # model (llama3-8b)": wt46_integreview)
    (["plan", "--model", "llama3-8b", "--gpus", "8", "--hardware", "llama3-8b"], "error: unknown hardware "
     "'llama3-8b': 'llama3-8b' names a model, not a GPU; it goes to --model, and --hardware takes a GPU preset "
     "(`hardware`) or a hardware file (.json)."),
])
def test_a_gpu_given_as_the_model_and_a_model_as_the_gpu_say_where_each_goes(args, said, capsys):
    # `--model h100` read "unknown model 'h100'. Known: bert-base-uncased, bloom-176b, ..." (the 106 presets, no
    # word that h100 is a GPU), `--hardware llama3-8b` "unknown hardware 'llama3-8b'. Known: a10, ..." (37 names)
    assert one_error_line(args, capsys) == said
    with pytest.raises(ConfigError, match="names a GPU \\(h100-sxm\\), not a model"):
        costmodel.estimate("H100")
    # a misspelt name still gets its nearest names
    assert one_error_line(["estimate", "--model", "llama3-8bb"], capsys) == (
        "error: unknown model 'llama3-8bb'. Did you mean llama3-8b, llama3.1-8b, llama3-70b?")


# ---------------------------------------------------------------------------------------------
# 2. a file's misspelt field: the field it means

@pytest.mark.parametrize("extra, said", [
    ({"price_per_hour": 2}, "unknown field 'price_per_hour' (did you mean price_per_gpu_hour?)"),
    ({"memory": 8e10}, "unknown field 'memory' (did you mean memory_bytes?)"),
    ({"sm": 132}, "unknown field 'sm' (did you mean sm_count?)"),
    ({"interconnect": {"gpus_per_node": 8, "intra_node_bandwith_bytes_per_s": 4e11}},
     "interconnect has an unknown field 'intra_node_bandwith_bytes_per_s' (did you mean "
     "intra_node_bandwidth_bytes_per_s?)"),
])
def test_a_hardware_files_misspelt_field_names_the_field_it_means(extra, said, tmp_path, capsys):
    # "unknown field 'price_per_hour' (known: name, description, source, ... price_per_gpu_hour)": 38 names to
    # search for the one meant
    path = tmp_path / "my.json"
    path.write_text(json.dumps({**BASE_HW, **extra}))
    assert one_error_line(["hardware", "--show", str(path)], capsys) == (
        f"error: {path}: not a valid hardware file: {said}.")


def test_a_field_no_schema_is_near_still_lists_the_known_ones(tmp_path, capsys):
    path = tmp_path / "my.json"
    path.write_text(json.dumps({**BASE_HW, "zzz": 1}))
    line = one_error_line(["hardware", "--show", str(path)], capsys)
    assert line.startswith(f"error: {path}: not a valid hardware file: unknown field 'zzz' (known: name, description,")
    assert line.endswith("price_per_gpu_hour).")


@pytest.mark.parametrize("field, said", [
    ("n_layers", "unknown field 'n_layers' (did you mean n_encoder_layers or n_decoder_layers?)"),
    ("dmodel", "unknown field 'dmodel' (did you mean d_model?)"),
    ("zzz", "unknown field 'zzz'"),
])
def test_a_model_config_jsons_misspelt_field_names_the_field_it_means(field, said, tmp_path, capsys):
    # a ModelConfig JSON file (README: "a ModelConfig JSON file" beside config.json) read "unknown field 'n_layers'."
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps({"name": "tiny", "family": "llama", "d_model": 512, field: 4}))
    assert one_error_line(["estimate", "--config", str(path)], capsys) == f"error: {path}: {said}."


# ---------------------------------------------------------------------------------------------
# 3. nf4 in blocks bitsandbytes does not quantize

def test_nf4_takes_only_the_blocks_bitsandbytes_quantizes(capsys):
    # `--weight-dtype nf4 --weight-group 100` was sized ("groups of 100"); bitsandbytes 0.50.2's quantize_4bit
    # raises "invalid blocksize 100" (round 45's left item)
    said = ("error: workload: nf4 quantizes blocks of 32, 64, 128, 256, 512, 1024, 2048, 4096 values (bitsandbytes' "
            "quantize_4bit), not 100; the default is 64.")
    assert one_error_line(["estimate", "--model", "llama2-7b", "--weight-dtype", "nf4", "--weight-group", "100"],
                          capsys) == said
    with pytest.raises(ConfigError, match="nf4 quantizes blocks of 32, 64"):
        costmodel.estimate("llama2-7b", weight_dtype="nf4", weight_group=8192)
    # a block it takes: 128 values a block, the absmax one uint8 a block under double quantization
    data = costmodel.estimate("llama2-7b", weight_dtype="nf4", weight_group=128).to_dict()
    assert "groups of 128" in json.dumps(data)


def test_nf4_blocks_are_bitsandbytes_own():
    torch = pytest.importorskip("torch")
    functional = pytest.importorskip("bitsandbytes.functional")
    x = torch.randn(8192, dtype=torch.bfloat16)
    for size in NF4_BLOCKSIZES:  # each quantizes, one absmax a block
        assert functional.quantize_4bit(x, blocksize=size, quant_type="nf4")[1].absmax.numel() == 8192 // size
    for size in (16, 100, 8192):
        with pytest.raises(ValueError, match=f"invalid blocksize {size}"):
            functional.quantize_4bit(x, blocksize=size, quant_type="nf4")


# ---------------------------------------------------------------------------------------------
# 4. serve's "1 GPU(s)" and "1 replica(s)"

def test_serve_counts_its_gpus_and_replicas_as_simulate_does(capsys):
    # serve printed "1 replica(s)" and "cost: 1 GPU(s) x $2 an hour" where simulate printed "1 GPU x $2 an hour"
    # (round 45 left it: four tests pinned the wording)
    base = ["serve", "--model", "llama3-8b", "--hardware", "h100", "--rate", "5", "--requests", "20", "--price", "2"]
    out = run_main(base, capsys)[1]
    assert out.startswith("llama3-8b on 1 replica (round-robin) of 1 x h100-sxm (bf16)")
    assert "cost: 1 GPU x $2 an hour = $2.00/h; " in out
    out = run_main([*base, "--tp", "2"], capsys)[1]
    assert "cost: 2 GPUs x $2 an hour = $4.00/h; " in out
    out = run_main(["simulate", "--model", "llama3-8b", "--prompt", "100", "--gen", "10", "--price", "2"], capsys)[1]
    assert "(1 GPU x $2 an hour = $2.00/h)" in out


# ---------------------------------------------------------------------------------------------
# 5. a pipeline's host ops said to be on each rank

def test_a_pipelines_eager_host_ops_are_each_stages_share(capsys):
    # `simulate --tp 8 --pp 2` printed "host: 6,136 eager ops a step (transformers) on each rank's host": the whole
    # step's, both stages' (kernel_step.token sums them, stage after stage); each rank issues its stage's share
    args = ["simulate", "--model", "llama3-70b", "--hardware", "h100", "--prompt", "512", "--gen", "64", "--tp", "8"]
    host = run_json([*args, "--pp", "2", "--json"], capsys)["token"]["host"]
    assert (host["ops_per_step"], host["ops_per_rank"]) == (6136, 3096)  # 40 layers of 80 and the step's own 28
    assert host["seconds_per_step"] == pytest.approx(6136 * host["op_seconds"], rel=1e-12)
    out = run_main([*args, "--pp", "2"], capsys)[1]
    assert ("  host: 6,136 eager ops a step (transformers) over the pipeline's stages, up to 3,096 on one rank's host, "
            "40.2 ms to issue stage after stage; the stages' kernels and exposed communication take 15.1 ms: each "
            "stage is the longer of its two, host-bound") in out
    unpiped = run_json([*args, "--json"], capsys)["token"]["host"]
    assert unpiped["ops_per_step"] == 6136 and "ops_per_rank" not in unpiped
    assert "host: 6,136 eager ops a step (transformers) on each rank's host" in run_main(args, capsys)[1]


# ---------------------------------------------------------------------------------------------
# 6. deepspeed's --cp said as a --cp-rotate not typed

def test_deepspeeds_context_parallel_heads_refusal_names_ulysses(capsys):
    # `simulate --train --cp 3` (deepspeed, the default framework) read "--cp-rotate a2a scatters ..." though no
    # --cp-rotate was typed: deepspeed's --cp is DeepSpeed-Ulysses' all-to-all (round 45's left item)
    args = ["simulate", "--model", "llama3-8b", "--hardware", "h100", "--train", "--cp", "3", "--seq-len", "6k"]
    assert one_error_line(args, capsys) == (
        "error: layout: DeepSpeed-Ulysses (deepspeed's --cp, --cp-rotate a2a) scatters a rank's 32 attention heads "
        "over --cp 3; they do not divide ('Attention head count ... is not divisible by SP size').")
    assert one_error_line([*args, "--framework", "megatron", "--cp-rotate", "a2a"], capsys) == (
        "error: layout: --cp-rotate a2a scatters a rank's 32 attention heads over --cp 3; they do not divide "
        "('The number of attention heads needs to be divisible by CP size!').")
    assert load_hardware("h100").name == "h100-sxm"
