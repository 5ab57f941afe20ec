"""The Python API for notebooks: a model by any name, a workload by keywords, numbers back.

    import costmodel
    result = costmodel.estimate("llama2-7b", seq_len=4096, batch=8, dtype="bf16")
    result.to_dict()["params"]["total"]     # 6738415616; to_dict() is `estimate --json`
    result.blocks()                         # pandas DataFrame, one row per block, exact integers
    costmodel.sweep("llama2-7b", seq_len=[512, 2048, 8192], batch=[1, 8])  # a DataFrame

A model is a preset name (`python cli.py models`), a path to a Hugging Face config.json or a
ModelConfig JSON file, a dict of either, or a ModelConfig. The workload keywords are Workload's
fields (costmodel/config.py); seq_len defaults as in the CLI: 2048, or the model's context if
shorter. The CLI calls the same functions, so the two cannot disagree.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from .checkpoint import inference_options
from .config import ConfigError, ModelConfig, Workload, show
from .plain import plain_arguments
from .spec import DEFAULT_SEQ_LEN


#: How a --model that can only be a path begins (no preset name or Hub id does; ~ is the home folder).
PATH_STARTS = ("/", "./", "../", "~")


def load_model(model: Any) -> ModelConfig:
    """A ModelConfig from a preset name, a config file's path, a config dict or a ModelConfig."""
    from .presets import config_from_dict, load_config_file

    if isinstance(model, ModelConfig):
        return model
    if isinstance(model, dict):
        return config_from_dict(model, source="config dict", name=str(model.get("name", "config")))
    from .hub import HUB_ADDRESS

    if isinstance(model, Path) or (isinstance(model, str) and not HUB_ADDRESS.match(model.strip())  # a Hub file's page
                                   and (model.lower().endswith(".json") or model.startswith(PATH_STARTS)
                                        or "/" in model and Path(model).exists() or _local_folder(model))):
        return load_config_file(model)  # a missing ./dir/ says "no such file", not the 66 preset names
    if isinstance(model, str):
        from .hub import load_named

        return load_named(model)
    raise ConfigError(f"a model is a preset name, a config path, a dict or a ModelConfig; got "
                      f"{type(model).__name__}.")


def _local_folder(name: str) -> bool:
    """Whether a name with no slash that is no preset or alias is a folder or file here (a model downloaded with
    `--local-dir mymodel`; its model.safetensors): it read "unknown model 'mymodel'. Known: ..." and the 66
    names, though ./mymodel was read."""
    from .presets import resolve_name

    return "/" not in name and Path(name).exists() and resolve_name(name) is None


#: The commands' names for a workload field, which the API's keywords spell as the field (--gen is gen_tokens),
#: and the one a workload does not take (--hardware's fit verdict).
COMMAND_NAMES = {"gen": "did you mean gen_tokens? ", "prompt": "did you mean seq_len? ", "output": "did you mean gen_tokens? ",
                 "hardware": "a GPU's time and memory are costmodel.simulate(model, hardware)'s; ",
                 "layout": "a layout is estimate's and simulate's, not sweep's; "}


def check_workload_keywords(options: dict[str, Any], layout: bool = False) -> None:
    """Each keyword a workload field, else one ConfigError naming the fields: estimate(..., hardware="h100")
    raised Python's TypeError naming Workload.__init__, a class the caller never called. layout: the caller
    takes layout={...} (estimate), where estimate(..., tp=8) and (..., gpus=8) read "unknown keyword 'tp'" and
    the workload's fields, nothing on layout={'tp': 8}, which simulate's same refusal names (plain.layout_hint)."""
    import dataclasses
    import difflib

    from .plain import layout_hint

    fields = [field.name for field in dataclasses.fields(Workload) if field.name != "seq_len"]
    for name in options:
        if name not in fields:
            near = difflib.get_close_matches(name, fields, n=1)
            placed = layout_hint(name, options).strip(" ()") if layout else ""
            hint = (f"{placed}; " if placed else "") or COMMAND_NAMES.get(name) or (f"did you mean {near[0]}? " if near else "")
            raise ConfigError(f"unknown keyword {name!r}: {hint}a workload takes seq_len, {', '.join(fields)}.")


def make_workload(cfg: ModelConfig, seq_len: int | None = None, holds_cache: bool = True,
                  **options: Any) -> tuple[Workload, list[str]]:
    """The workload for a model with the defaults filled in, and the warnings it raises (a
    sequence past a context that is not a learned table). Invalid input raises ConfigError.
    The default length is 2048 tokens, or what the model's context leaves once the generated
    tokens fed back (gen_tokens - 1, which extend a decoder-only model's sequence) are added."""
    if seq_len is None:
        room = cfg.max_positions
        fed = max((options.get("gen_tokens") or 0) - 1, 0)  # the last token is never fed back
        if cfg.architecture != "encoder-decoder" and cfg.n_decoder_layers and fed < room:
            room -= fed
        seq_len = min(DEFAULT_SEQ_LEN, room)
    check_workload_keywords(options)
    workload = Workload(seq_len=seq_len, **options)
    return workload, workload.check_fits(cfg, holds_cache)  # holds_cache False: a training step only


def generation_start(cfg: ModelConfig) -> dict[str, int]:
    """The workload field of a generation's decoder prompt: an encoder-decoder's prompt is its
    source and its decoder starts from the start token (tgt_len spec.DECODER_START_PROMPT, as
    roofline.simulate_inference times it), so its context is that and the generated tokens, not
    the source's length; a decoder's prompt is its own (nothing to add)."""
    from .spec import DECODER_START_PROMPT

    return {"tgt_len": DECODER_START_PROMPT} if cfg.architecture == "encoder-decoder" else {}


def make_layout(layout: Any) -> Any:
    """A costmodel.layout.Layout from a Layout, a dict of its fields, or None (one device); anything
    else one ConfigError ("tp=2" read "'str' object has no attribute 'framework'")."""
    from .layout import Layout

    if layout is None or isinstance(layout, Layout):
        return layout
    if not isinstance(layout, dict):
        raise ConfigError(f"layout: a costmodel.layout.Layout or a dict of its fields (tp, pp, dp, ...), "
                          f"got {show(layout)}.")

    fields = dict(layout)
    unknown_layout_fields(fields)
    if fields.get("stage_layers") is not None:
        fields["stage_layers"] = tuple(fields["stage_layers"])
    try:
        return Layout(**fields)
    except TypeError as error:
        raise ConfigError(f"layout: {error}.") from None


def unknown_layout_fields(fields: dict[str, Any]) -> None:
    """One ConfigError for a key of layout={...} that is no Layout field: layout={'tpp': 2} read "layout:
    Layout.__init__() got an unexpected keyword argument 'tpp'.", a class the caller never called, no field
    named; layout={'gpus': 8} so too, where the GPUs are the layout's tp x pp x dp (plain.layout_hint's words)."""
    import dataclasses
    import difflib

    from .layout import Layout

    known = [field.name for field in dataclasses.fields(Layout)]
    for name in fields:
        if name in known:
            continue
        if name == "gpus":
            raise ConfigError("layout: gpus is no field of a layout: the GPUs are its tp x pp x dp (x cp); give "
                              "layout={'dp': 8} for 8 GPUs of data parallelism.")
        near = difflib.get_close_matches(str(name), known, n=1)
        raise ConfigError(f"layout: unknown field {name!r}{f' (did you mean {near[0]}?)' if near else ''}; a layout "
                          f"takes {', '.join(known)}.")


@plain_arguments
def estimate(model: Any, seq_len: int | None = None, layout: Any = None, **workload: Any) -> Any:
    """Every number `estimate` reports for a model and workload (costmodel.estimation.Estimate):
    .to_dict() is `estimate --json`, .blocks() a DataFrame of the per-block table. layout: a
    costmodel.layout.Layout or a dict of its fields (dp, tp, pp, sp, zero, microbatches, schedule,
    virtual_stages, framework, ...) for per-rank memory and communication; with a layout, impl
    and attention default to the framework's, and precision is the framework's (a different one is
    refused: defaults.layout_precision)."""
    from .defaults import implied, layout_precision
    from .estimation import Estimate
    from .spec import CANONICAL_DTYPE, DEFAULT_DTYPE

    cfg = load_model(model)
    check_workload_keywords(workload, layout=True)  # tp=8 beside the workload's keywords: layout={'tp': 8} said
    chosen_layout = make_layout(layout)
    if chosen_layout is not None:  # the framework's code and precision unless impl or attention is given
        workload = {**workload, **implied(chosen_layout.framework, workload.get("impl"), workload.get("attention"),
                                          cfg.family)}
        dtype = workload.get("dtype") or DEFAULT_DTYPE  # Workload refuses a bad one below
        workload["precision"] = layout_precision(chosen_layout, CANONICAL_DTYPE.get(dtype, dtype) if isinstance(
            dtype, str) else dtype, workload.get("precision"))
    chosen, notes = make_workload(cfg, seq_len, **inference_options(cfg, workload, beside_training=True))
    for note in notes:
        warnings.warn(note, stacklevel=3)  # the caller's line, past plain_arguments
    if chosen_layout is not None:
        chosen_layout.check(cfg)
        chosen_layout.check_schedule()
    return Estimate(cfg, chosen, chosen_layout)


@plain_arguments
def sweep(model: Any, seq_len: Any, batch: Any = 1, **workload: Any) -> Any:
    """Every sweep column (costmodel.grid.QUANTITIES: FLOPs, activations, KV cache, weights,
    training and inference bytes) on the grid seq_len x batch, as a pandas DataFrame; one value
    or a list for each axis. The inference bytes hold the weights in weight_dtype, the checkpoint's
    format by default (as estimate's). The `sweep` command writes this frame."""
    from .grid import run

    cfg = load_model(model)
    seq_lens, batches = _axis("seq_len", seq_len), _axis("batch", batch)
    chosen, notes = make_workload(cfg, seq_lens[-1], **inference_options(cfg, workload, beside_training=True))
    for note in notes:
        warnings.warn(note, stacklevel=3)  # the caller's line, past plain_arguments
    Workload(seq_len=seq_lens[0], batch=batches[0])  # the least of each positive, or one ConfigError naming its axis
    return run(cfg, chosen, seq_lens, batches).frame()



def _axis(name: str, values: Any) -> list[int]:
    """One sweep axis, its distinct values in order: a whole number or an iterable of them (numpy's
    integers included), else one ConfigError. int() read seq_len=128.9 as 128, the string "128" as
    the lengths 1, 2 and 8, and an empty list failed with an IndexError."""
    import operator

    from .config import show

    items = list(values) if hasattr(values, "__iter__") and not isinstance(values, (str, bytes)) else [values]
    if not items:
        raise ConfigError(f"sweep: {name} is empty; give at least one value.")
    whole = set()
    for value in items:
        try:
            if isinstance(value, bool):
                raise TypeError
            whole.add(operator.index(value))
        except TypeError:
            form = (f" (the command's text forms, 128:4096:x2 or 512,1024, are Python's "
                    f"[2**k for k in range(7, 13)] or [512, 1024])" if isinstance(value, str) else "")
            raise ConfigError(f"sweep: {name} values must be whole numbers, got {show(value)}{form}.") from None
    return sorted(whole)
