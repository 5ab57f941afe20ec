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
    """Meta-Llama-3-8B-Instruct's config.json (NousResearch's copy, not an alias of a preset, as meta-llama's id
    is): the base model's, with the chat template's end token."""
    config = json.loads((PRESET_DIR / "llama3-8b.json").read_text())
    config["eos_token_id"] = 128009
    return config


def test_an_instruct_id_reads_the_cached_config(tmp_path, offline, capsys):
    repo_id = "NousResearch/Meta-Llama-3-8B-Instruct"
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
    assert cli.main(["estimate", "--model", "NousResearch/Meta-Llama-3-8B-Instruct"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'transformer-costmodel[hub]'" in err[0]


def test_a_cached_config_needs_no_huggingface_hub(tmp_path, offline, capsys):
    """The core install (no `hub` extra) reads a cached config.json itself."""
    import sys

    repo_id = "NousResearch/Meta-Llama-3-8B-Instruct"
    offline.setenv("HF_HUB_CACHE", cache_with(tmp_path, repo_id, llama3_8b_instruct()))
    offline.setitem(sys.modules, "huggingface_hub", None)  # import huggingface_hub now fails
    assert cli.main(["estimate", "--model", repo_id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["total"] == 8_030_261_248
    assert cli.main(["estimate", "--model", "example-org/not-cached"]) == 2
    assert "needs huggingface_hub" in capsys.readouterr().err  # not cached: downloading needs it


@pytest.fixture
def online_without_network(tmp_path, monkeypatch):
    """Online mode (HF_HUB_OFFLINE unset), an empty cache and no name resolution, as on a machine
    without a network: huggingface_hub retried for 23 s, then the error blamed the model."""
    import socket

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HOME", raising=False)
    for proxy in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))

    def no_dns(host, *args, **kwargs):
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    return monkeypatch


def test_an_uncached_id_without_a_network_says_so_at_once(online_without_network, capsys):
    import huggingface_hub

    def download(repo_id, filename, **kwargs):
        if kwargs.get("local_files_only"):
            raise huggingface_hub.errors.LocalEntryNotFoundError("not in the cache")
        raise AssertionError("the Hub was asked although its host does not resolve (5 retries, 23 s)")

    online_without_network.setattr(huggingface_hub, "hf_hub_download", download)
    assert cli.main(["estimate", "--model", "some-org/some-model"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "cannot reach the Hugging Face Hub" in err[0] and "huggingface.co" in err[0]
    assert "has no config.json on the Hub" not in err[0]


def test_a_download_that_cannot_connect_is_not_called_a_missing_file(online_without_network, capsys):
    """huggingface_hub 2.4 raises LocalEntryNotFoundError, a subclass of EntryNotFoundError, when it
    cannot connect: that is no network, not a repository without config.json."""
    import socket

    import huggingface_hub

    online_without_network.setattr(socket, "getaddrinfo", lambda *a, **k: [])  # the host resolves

    def download(repo_id, filename, **kwargs):
        raise huggingface_hub.errors.LocalEntryNotFoundError(
            "An error happened while trying to locate the file on the Hub and we cannot find the requested "
            "files in the local cache. Please check your connection and try again.")

    online_without_network.setattr(huggingface_hub, "hf_hub_download", download)
    assert cli.main(["estimate", "--model", "some-org/some-model"]) == 2
    err = capsys.readouterr().err.strip()
    assert "cannot reach the Hugging Face Hub" in err and "has no config.json" not in err
