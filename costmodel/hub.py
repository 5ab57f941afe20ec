"""Any model by its Hugging Face Hub id (org/name): its config.json from the local Hugging Face
cache first (read directly: the core install needs no huggingface_hub for a cached config), from the
Hub through huggingface_hub only when the cache lacks it and offline mode is off.

    load_named("llama2-7b")                              # a preset or an alias: no Hub at all
    load_named("meta-llama/Meta-Llama-3-8B-Instruct")     # the cached (or downloaded) config.json

Chat, instruct and base ids of a supported architecture read the same way: the config names its
family (model_type, or the class in `architectures`). huggingface_hub is an extra
(`pip install transformer-costmodel[hub]`): it brings nine packages of its own. The cache and
offline mode are read from the environment at each call (HF_HUB_CACHE, HF_HOME,
HF_HUB_OFFLINE), so a test or a notebook can point them elsewhere.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .config import ConfigError, ModelConfig, show
from .hub_cache import HUB_ID, REPO_PREFIX, snapshot_config

TRUE = {"1", "true", "yes", "on"}
#: How close (difflib's ratio) an id the Hub cannot give must be to a preset's spelling for the error
#: to name it: a letter off in an org/name id (meta-lama/Llama-3.1-8B: 0.98; gemma-7b against gemma-2-27b,
#: another model, 0.9).
TYPO_RATIO = 0.95


def is_hub_id(name: str) -> bool:
    return isinstance(name, str) and bool(HUB_ID.match(name)) and not name.lower().endswith(".json")


def cache_dir() -> str | None:
    """The Hub cache huggingface_hub would use, read now: HF_HUB_CACHE, or HF_HOME/hub."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return str(Path(os.environ["HF_HOME"]) / "hub")
    return None


def cache_base() -> Path:
    """The folder the cache's repositories are in: cache_dir(), else huggingface_hub's default."""
    base = cache_dir()
    if base is None:
        home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        base = str(Path(home) / "huggingface" / "hub")
    return Path(base)


def cached_config(repo_id: str) -> Path | None:
    """repo_id's config.json at refs/main in the local cache, as huggingface_hub lays it out
    (models--org--name/refs/main names the snapshot; snapshots/<commit>/config.json), or None."""
    return snapshot_config(cache_base() / (REPO_PREFIX + repo_id.replace("/", "--")))


def cached_near(repo_id: str) -> list[str]:
    """The cached ids (with a config.json) spelled as repo_id but for case, or within a letter or two
    (difflib, TYPO_RATIO): the cache's folders keep the case an id was downloaded with, so
    meta-llama/llama-3.1-8b misses a cached meta-llama/Llama-3.1-8B."""
    import difflib

    try:
        folders = [f.name for f in cache_base().iterdir() if f.name.startswith(REPO_PREFIX)]
    except OSError:
        return []
    ids = [name[len(REPO_PREFIX):].replace("--", "/", 1) for name in folders]
    ids = [i for i in ids if cached_config(i) is not None]
    lowered = {i.lower(): i for i in ids}
    same = [i for i in ids if i.lower() == repo_id.lower()]
    return same or [lowered[i] for i in difflib.get_close_matches(repo_id.lower(), lowered, n=3, cutoff=TYPO_RATIO)]


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in TRUE


def hub_config_path(repo_id: str) -> str:
    """The local path of repo_id's config.json: the cache's copy, else a download (online only).
    Every failure is one ConfigError sentence."""
    cached = cached_config(repo_id)
    if cached is not None:
        return str(cached)
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub import errors
    except ImportError:
        raise ConfigError(f"model {show(repo_id)} is no preset; reading a Hub id needs huggingface_hub "
                          "(pip install 'transformer-costmodel[hub]'), or pass --config with its config.json.") from None
    cache = cache_dir()
    try:
        return hf_hub_download(repo_id, "config.json", cache_dir=cache, local_files_only=True)
    except (errors.LocalEntryNotFoundError, errors.EntryNotFoundError, FileNotFoundError):
        pass
    except errors.HFValidationError:
        raise ConfigError(f"{show(repo_id)} is not a Hugging Face model id.") from None
    where = cache or "the default Hugging Face cache"
    near = cached_near(repo_id)
    if near and (offline() or not resolves(hub_host())):  # what the cache holds, where the Hub cannot be asked
        raise ConfigError(f"model {show(repo_id)}: its config.json is not in {where}, which holds "
                          f"{', '.join(near)}: an id is read as spelled, its case too; did you mean {near[0]}?")
    if offline():
        raise ConfigError(f"model {show(repo_id)}: its config.json is not in {where}, and HF_HUB_OFFLINE is set; "
                          "download it once online, or pass --config.")
    unreachable = f"its config.json is not in {where}. Pass --config, or try again online."
    host = hub_host()
    if not resolves(host):  # no network: huggingface_hub would retry 5 times (23 s) and then blame the model
        raise ConfigError(f"model {show(repo_id)}: cannot reach the Hugging Face Hub ({host} does not resolve); "
                          + unreachable)
    try:
        return hf_hub_download(repo_id, "config.json", cache_dir=cache)
    except errors.LocalEntryNotFoundError:  # (an EntryNotFoundError in huggingface_hub 2.x): it could not connect
        raise ConfigError(f"model {show(repo_id)}: cannot reach the Hugging Face Hub; " + unreachable) from None
    except errors.GatedRepoError:
        raise ConfigError(f"model {show(repo_id)} is gated: accept its license on the Hub and log in "
                          "(hf auth login), or pass --config.") from None
    except errors.RepositoryNotFoundError:
        raise ConfigError(f"model {show(repo_id)}: no such model on the Hugging Face Hub (or it is private), "
                          "and no preset has that name (see `models`).") from None
    except errors.EntryNotFoundError:
        raise ConfigError(f"model {show(repo_id)} has no config.json on the Hub.") from None
    except Exception as error:  # no network, a proxy, a timeout: whatever the transport raises
        reason = str(error).splitlines()[0][:120] if str(error) else type(error).__name__
        raise ConfigError(f"model {show(repo_id)}: cannot reach the Hugging Face Hub ({reason}); "
                          + unreachable) from None


PROXIES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def hub_host() -> str:
    """The host huggingface_hub downloads from: HF_ENDPOINT's, else huggingface.co."""
    from urllib.parse import urlparse

    return urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname or "huggingface.co"


def resolves(host: str) -> bool:
    """Whether `host` has an address here (a name lookup, no connection); True behind a proxy,
    which resolves names itself."""
    import socket

    if any(os.environ.get(name) for name in PROXIES):
        return True
    try:
        socket.getaddrinfo(host, 443)
    except (socket.gaierror, UnicodeError):
        return False
    return True


def load_hub_config(repo_id: str) -> ModelConfig:
    """The ModelConfig of a Hub model, named by its id."""
    from .presets import parse_config

    path = hub_config_path(repo_id)
    return parse_config(Path(path).read_text(encoding="utf-8"), source=f"{repo_id} (config.json)", name=repo_id)


#: A Hub reference as a browser or the Hub's pages give it: the address's host, and after the id a revision
#: (ORG/NAME@REV, /tree/REV) or a file's page (/blob/REV/config.json, /resolve/...).
HUB_ADDRESS = re.compile(r"^(?:https?://)?(?:www\.)?(?:huggingface\.co|hf\.co)/", re.IGNORECASE)
HUB_REVISION = re.compile(r"^([^/@\s]+/[^/@\s]+?)(?:@(.+)|/(?:tree|blob|resolve)/([^/]+).*)$")


def hub_id(name: str) -> str:
    """The org/name id in what a user pasted: surrounding spaces, the Hub's address
    (https://huggingface.co/ORG/NAME, hf.co/ORG/NAME), a trailing slash and @main (or /tree/main) dropped
    (each read "unknown model"); another revision (ORG/NAME@REV, .../tree/REV) refused in one line, as only
    the main branch's config is read. Anything else is returned as given."""
    core = HUB_ADDRESS.sub("", name.strip()).rstrip("/")
    revision = HUB_REVISION.match(core)
    if revision and is_hub_id(revision.group(1)) and (revision.group(2) or revision.group(3)) == "main":
        return revision.group(1)  # the branch --model reads
    if revision and is_hub_id(revision.group(1)):
        raise ConfigError(f"model {show(name)}: a revision ({revision.group(2) or revision.group(3)}) is not read: "
                          f"--model {revision.group(1)} reads the main branch's config.json; for another "
                          "revision's, download it and pass --config path/to/config.json.")
    return core if is_hub_id(core) else name


def load_named(name: str) -> ModelConfig:
    """A preset or alias (any case) by name; else, for an org/name id (as hub_id reads it), the Hub's
    config.json."""
    from .presets import close_spellings, load_preset, resolve_name

    if resolve_name(name) is None:
        name = hub_id(name)
    if resolve_name(name) is None and is_hub_id(name):
        try:
            hub_config_path(name)  # the cache's copy or a download: a miss names a preset spelled nearly so
        except ConfigError as error:
            close = close_spellings(name, cutoff=TYPO_RATIO)
            if not close:
                raise
            raise ConfigError(f"{error} A preset spelled nearly so: {', '.join(close)}.") from None
        return load_hub_config(name)
    return load_preset(name)
