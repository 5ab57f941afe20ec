"""--model org/name: a Hub id's config.json through huggingface_hub, from a local cache the test
builds (no network: HF_HUB_OFFLINE is set in every test)."""

from __future__ import annotations

import json

import pytest

import cli
from costmodel.presets import PRESET_DIR

pytest.importorskip("huggingface_hub")

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def cache_with(tmp_path, repo_id: str, config: dict) -> str:
    """A Hugging Face cache (HF_HUB_CACHE layout) holding one repo's config.json at refs/main."""
    repo = tmp_path / "hub" / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(config))
    return str(tmp_path / "hub")


@pytest.fixture
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("HF_HOME", raising=False)
    return monkeypatch


def llama3_8b_instruct() -> dict:
    """Meta-Llama-3-8B-Instruct's config.json: the base model's, with the chat template's end token."""
    config = json.loads((PRESET_DIR / "llama3-8b.json").read_text())
    config["eos_token_id"] = 128009
    return config


def test_an_instruct_id_reads_the_cached_config(tmp_path, offline, capsys):
    repo_id = "meta-llama/Meta-Llama-3-8B-Instruct"
    offline.setenv("HF_HUB_CACHE", cache_with(tmp_path, repo_id, llama3_8b_instruct()))
    assert cli.main(["estimate", "--model", repo_id, "--hardware", "h100-sxm", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["inputs"]["model"] == repo_id and data["inputs"]["family"] == "llama"
    assert data["params"]["total"] == 8_030_261_248  # LlamaForCausalLM built from this config
    assert data["fit"]["training"]["fits"] is False


def test_the_python_api_takes_a_hub_id(tmp_path, offline):
    import costmodel

    repo_id = "Qwen/Qwen2.5-7B-Instruct"
    config = json.loads((PRESET_DIR / "qwen2.5-7b.json").read_text())
    config.pop("model_type")  # some configs name only their class: read the family from it
    offline.setenv("HF_HUB_CACHE", cache_with(tmp_path, repo_id, config))
    assert costmodel.estimate(repo_id).to_dict()["params"]["total"] == \
        costmodel.estimate("qwen2.5-7b").to_dict()["params"]["total"]


def test_an_uncached_id_offline_is_one_line(tmp_path, offline, capsys):
    offline.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    assert cli.main(["estimate", "--model", "some-org/some-model"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "model 'some-org/some-model': its config.json is not in" in err[0] and "HF_HUB_OFFLINE" in err[0]


def test_presets_and_their_aliases_never_touch_the_hub(tmp_path, offline, capsys):
    offline.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    assert cli.main(["estimate", "--model", "meta-llama/Llama-2-7b-hf", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"]["model"] == "llama2-7b"


def test_without_huggingface_hub_the_error_says_how_to_get_it(monkeypatch, capsys):
    import sys

    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # as on a core-only install
    assert cli.main(["estimate", "--model", "meta-llama/Meta-Llama-3-8B-Instruct"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'transformer-costmodel[hub]'" in err[0]


def test_a_cached_config_needs_no_huggingface_hub(tmp_path, offline, capsys):
    """The core install (no `hub` extra) reads a cached config.json itself."""
    import sys

    repo_id = "meta-llama/Meta-Llama-3-8B-Instruct"
    offline.setenv("HF_HUB_CACHE", cache_with(tmp_path, repo_id, llama3_8b_instruct()))
    offline.setitem(sys.modules, "huggingface_hub", None)  # import huggingface_hub now fails
    assert cli.main(["estimate", "--model", repo_id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["total"] == 8_030_261_248
    assert cli.main(["estimate", "--model", "example-org/not-cached"]) == 2
    assert "needs huggingface_hub" in capsys.readouterr().err  # not cached: downloading needs it
