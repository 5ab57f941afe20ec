"""Defects a new user hit in session 37 (wt37_user2: the Python API, serve, finetune, config files,
--json): each test failed before its fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import costmodel
from costmodel.errors import ConfigError, show
from costmodel.finetune import finetune_memory
from costmodel.lora_adapters import FineTune
from tests.cli_run import one_error_line

ROOT = Path(__file__).resolve().parent.parent


def test_the_apis_text_and_json_run_outside_the_checkout(tmp_path):
    """In a notebook outside the checkout (`pip install -e .` puts costmodel, not the checkout's root,
    on sys.path), `costmodel.simulate(...).to_dict()`, printing a plan and an Estimate's HTML raised
    ModuleNotFoundError: No module named 'reports'."""
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); import costmodel; sys.path.remove({str(ROOT)!r})\n"
            "run = costmodel.simulate('llama3-8b', prompt=128, gen=8)\n"
            "print(run.to_dict()['inputs']['prompt'], str(run).split(' ')[0])\n"
            "print(costmodel.estimate('llama2-7b')._repr_html_()[:14])\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["128 llama3-8b", "<pre>llama2-7b"]


def test_numpy_integers_reach_the_api_as_the_numbers_they_are():
    """`costmodel.estimate("llama2-7b", seq_len=np.int64(1024))` said "seq_len must be an integer, got
    np.int64(1024)" (so did simulate's batch, a layout's tp, plan's gpus), while sweep took numpy's
    integers; serve let block_size=np.int64(32) through into a summary json.dumps could not write."""
    as_numpy = costmodel.estimate("llama2-7b", seq_len=np.int64(1024), batch=np.int32(2), layout={"tp": np.int64(2)})
    as_int = costmodel.estimate("llama2-7b", seq_len=1024, batch=2, layout={"tp": 2})
    assert as_numpy.to_dict() == as_int.to_dict()
    assert as_numpy.to_dict()["params"]["total"] == 6738415616  # README
    json.dumps(as_numpy.to_dict())
    run = costmodel.simulate("llama3-8b", prompt=np.int64(128), gen=np.int64(8), batch=np.int64(4))
    assert run.to_dict() == costmodel.simulate("llama3-8b", prompt=128, gen=8, batch=4).to_dict()
    assert costmodel.plan("llama3-8b", np.int64(2)).best["layout"] == costmodel.plan("llama3-8b", 2).best["layout"]
    served = costmodel.serve("llama3-8b", "h100-sxm", rate=np.float64(5), requests=np.int64(10), seed=np.int64(3),
                             block_size=np.int64(32)).summary()
    assert type(served["setup"]["block_size"]) is int and served["setup"]["block_size"] == 32
    json.dumps(served)


def test_a_sweeps_zero_batch_is_named_batch():
    """`costmodel.sweep("llama2-7b", seq_len=[512], batch=[0, 2])` said "seq_len must be at least 1, got 0"."""
    with pytest.raises(ConfigError, match=r"^workload: batch must be at least 1, got 0\.$"):
        costmodel.sweep("llama2-7b", seq_len=[512], batch=[0, 2])
    with pytest.raises(ConfigError, match=r"^workload: seq_len must be at least 1, got -5\.$"):
        costmodel.sweep("llama2-7b", seq_len=[-5, 512])


def test_a_gzipped_trace_is_one_line(tmp_path, capsys):
    """`serve --trace trace.jsonl.gz` raised a UnicodeDecodeError traceback; `costmodel.serve(..., trace=[{...}])`
    a TypeError ("expected str, bytes or os.PathLike object, not list")."""
    import gzip

    trace = tmp_path / "trace.jsonl.gz"
    trace.write_bytes(gzip.compress(b'{"arrival": 0, "prompt_tokens": 100, "output_tokens": 10}\n'))
    line = one_error_line(["serve", "--model", "llama3-8b", "--trace", str(trace)], capsys)
    assert line == (f"error: the trace {show(str(trace))} is not UTF-8 text (compressed? decompress it: one JSON "
                    "object a line).")
    with pytest.raises(ConfigError, match=r"^--trace: a path to a JSONL file, one request a line, got list "):
        costmodel.serve("llama3-8b", trace=[{"arrival": 0, "prompt_tokens": 10, "output_tokens": 5}])


@pytest.mark.parametrize("value", ["1", [1], True])
def test_a_serving_slo_that_is_not_a_number_is_one_config_error(value):
    """`costmodel.serve("llama3-8b", rate=5, slo_ttft="1")` raised TypeError "'>' not supported between
    instances of 'str' and 'int'" (True ran as a 1-second target)."""
    with pytest.raises(ConfigError, match=r"^--slo-ttft must be a positive number of seconds, got "):
        costmodel.serve("llama3-8b", "h100-sxm", rate=5, requests=10, slo_ttft=value)


def test_lora_targets_as_a_string_are_the_comma_separated_names():
    """`FineTune(targets="q_proj")` (docs/finetuning.md's Python API) read the string letter by letter:
    "--lora-targets: 'q' is not one of q_proj, ..."; the CLI split the commas itself."""
    assert FineTune(targets=" q_proj, v_proj").targets == ("q_proj", "v_proj")
    assert FineTune(targets="all-linear").targets == ("all-linear",)
    cfg = costmodel.load_model("llama2-7b")
    workload, _ = costmodel.make_workload(cfg, 512)
    # peft: A (16 x 4096) and B (4096 x 16) on each of the 32 layers' q_proj = 4,194,304, fp32 adapters
    memory = finetune_memory(cfg, workload, FineTune(targets="q_proj"))
    assert (memory.trainable_params, memory.adapters) == (4_194_304, 16_777_216)


#: state-spaces/mamba2-2.7b (tests/test_smoke10_defects.py's RELEASED): 64 Mamba-2 layers, no attention.
MAMBA2 = dict(model_type="mamba2", hidden_size=2560, num_hidden_layers=64, num_heads=80, head_dim=64, expand=2,
              n_groups=1, state_size=128, vocab_size=50288, tie_word_embeddings=True)


def _strict(data: dict) -> dict:
    """data through JSON that refuses Infinity and NaN, as a JSON reader other than Python's does."""
    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    return json.loads(json.dumps(data), parse_constant=refuse)


def test_to_dict_is_the_json_without_infinity(tmp_path, capsys):
    """README: "to_dict() is exactly `estimate --json`"; but for a pure Mamba-2 stack to_dict() held
    crossover_seq_len inf (json.dumps wrote Infinity, which JSON has not) where --json printed null."""
    import warnings

    from tests.cli_run import run_json

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = costmodel.estimate(MAMBA2).to_dict()
    assert data["regime"]["crossover_seq_len"] is None
    assert _strict(data) == data
    path = tmp_path / "mamba2.json"
    path.write_text(json.dumps(MAMBA2))
    assert run_json(["estimate", "--config", str(path)], capsys)["regime"]["crossover_seq_len"] is None
    assert costmodel.estimate("llama2-7b").to_dict()["regime"]["crossover_seq_len"] == 24704.0  # tests/test_cli.py


def test_the_apis_warnings_point_at_the_callers_line():
    """A sequence past the context warns at the notebook's line, not inside costmodel (the numpy door
    adds a frame)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        costmodel.estimate("llama2-7b", seq_len=8192)
        costmodel.sweep("llama2-7b", seq_len=[512, 8192])
    assert [Path(w.filename).name for w in caught] == [Path(__file__).name] * 2, [w.filename for w in caught]


def test_a_serve_runs_to_dict_is_serve_json(capsys):
    """docs/serving.md: "run.summary()  # what `serve --json` prints"; but with one-token outputs its TPOT
    percentiles were NaN (json.dumps wrote NaN, not JSON) where --json printed null, it had no units, and
    --rate inf stayed a float; ServeRun.to_dict() is now the JSON, and the command prints it."""
    from tests.cli_run import run_json

    run = costmodel.serve("llama3-8b", "h100-sxm", rate=float("inf"), requests=3, output="1")
    data = run.to_dict()
    assert data["tpot"] == {"mean": None, "p50": None, "p90": None, "p99": None}
    assert data["setup"]["rate"] == "inf" and "units" in data
    assert _strict(data) == data
    assert run_json(["serve", "--model", "llama3-8b", "--rate", "inf", "--requests", "3", "--output", "1"],
                    capsys) == data


def test_a_hub_id_in_another_case_names_the_cached_one(tmp_path, monkeypatch, capsys):
    """Offline, `estimate --model nousresearch/meta-llama-3-8b-instruct` with NousResearch/Meta-Llama-3-8B-Instruct
    cached said "its config.json is not in ..., download it once online": the cache keeps the case an id was
    downloaded with, and the error did not say the model was there under its own spelling."""
    from tests.test_hub_ids import cache_with, llama3_8b_instruct

    repo_id = "NousResearch/Meta-Llama-3-8B-Instruct"
    cache = cache_with(tmp_path, repo_id, llama3_8b_instruct())
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", cache)
    line = one_error_line(["estimate", "--model", repo_id.lower()], capsys)
    assert line == (f"error: model {repo_id.lower()!r}: its config.json is not in {cache}, which holds {repo_id}: "
                    f"an id is read as spelled, its case too; did you mean {repo_id}?")
    line = one_error_line(["estimate", "--model", "NousResearch/Other-Model"], capsys)  # nothing near: as before
    assert line.endswith("and HF_HUB_OFFLINE is set; download it once online, or pass --config.")


def test_the_documented_python_calls_resolve():
    """docs/finetuning.md's Python API named `finetune_verdict(...)` with no module (it is not in
    costmodel.finetune, the module the sentence named first); every `costmodel.x.y(` the README and
    docs show must import, and that paragraph must name no bare function."""
    import importlib
    import re

    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for path in texts:
        for dotted in set(re.findall(r"`(costmodel(?:\.\w+)+)\(", path.read_text())):
            parts = dotted.split(".")
            for cut in range(len(parts) - 1, 0, -1):  # the longest importable module, then attributes
                try:
                    target = importlib.import_module(".".join(parts[:cut]))
                except ImportError:
                    continue
                for name in parts[cut:]:
                    target = getattr(target, name)
                assert callable(target), (path.name, dotted)
                break
    paragraph = (ROOT / "docs" / "finetuning.md").read_text().split("The Python API:", 1)[1].split("\n\n", 1)[0]
    assert not re.findall(r"`(\w+)\(", paragraph), paragraph


def test_a_hugging_face_config_without_model_type_says_add_model_type(tmp_path, capsys):
    """A config.json saved without model_type and architectures (Llama 3.1 8B's fields) was read as
    ModelConfig's fields: "unknown field 'hidden_act'", and `costmodel.estimate({"hidden_size": 64})`
    "unknown field 'hidden_size'"; now the missing model_type is the error, as with architectures of no
    known class."""
    config = json.loads((ROOT / "costmodel" / "presets" / "llama2-7b.json").read_text())
    config.pop("model_type", None)
    config.pop("architectures", None)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    line = one_error_line(["estimate", "--config", str(path)], capsys)
    assert line.startswith(f"error: {path}: missing field 'model_type'; add \"model_type\" (one of llama, "), line
    with pytest.raises(ConfigError, match=r"^config dict: missing field 'model_type'; add \"model_type\""):
        costmodel.estimate({"hidden_size": 64})
    assert costmodel.estimate({**config, "model_type": "llama"}).to_dict()["params"]["total"] == 6738415616


def test_lora_targets_other_than_names_and_all_linear_beside_names_are_one_line(capsys):
    """Review of session 37: FineTune(targets=5) was a TypeError ('int' object is not iterable) and b"q_proj" read
    as its bytes' numbers ("113 is not one of"); all-linear beside q_proj was dropped, q_proj's adapters alone
    costed (peft takes all-linear only as the whole value), through the API and --lora-targets alike."""
    for targets, kind in ((5, "int"), (b"q_proj", "bytes")):
        with pytest.raises(ConfigError, match=f"^--lora-targets: a module name or names .*, got {kind}.$"):
            FineTune(targets=targets)
    with pytest.raises(ConfigError, match="^--lora-targets: all-linear names every linear already; give it alone, "
                                          "not beside q_proj.$"):
        FineTune(targets=["all-linear", "q_proj"])
    assert FineTune(targets="all-linear, all-linear").targets == ("all-linear",)
    assert FineTune(targets={"v_proj", "q_proj"}).targets == ("q_proj", "v_proj")  # a set: the modules' order
    assert one_error_line(["finetune", "--model", "llama2-7b", "--lora-targets", "all-linear,q_proj"], capsys) == (
        "error: --lora-targets: all-linear names every linear already; give it alone, not beside q_proj.")
