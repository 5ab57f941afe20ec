"""Survey: every causal-LM model type transformers ships, run through the CLI as a user would.

For each model_type of AutoModelForCausalLM's mapping, its configuration class's defaults are
written twice (the full `to_dict()` and the `to_diff_dict()` that `save_pretrained` writes to the
Hub, which leaves transformers' defaults out), `python cli.py estimate --config config.json
--json` runs on each in-process, and its parameter count is compared with the model built from
the same config on the meta device (`sum(p.numel())`). `simulate` runs once on the full dict.
Each type is classified:

  exact        parameters equal the meta model's, for both files
  wrong        the CLI answers with a different parameter count
  unsupported  one `error:` line on stderr, exit 2
  no reference the CLI answers, but transformers cannot build its own default config to compare
  defect       a traceback, or an exit status other than 0 and 2

Usage: PYTHONPATH=. python validate/hf_survey.py [--types a,b] [--json OUT]
(about a minute per 40 types: each is built on the meta device).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import traceback
from pathlib import Path

import torch
import transformers
from transformers.models.auto.configuration_auto import CONFIG_MAPPING
from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

import cli


def run_cli(args: list[str]) -> tuple[int | str, str, str]:
    """(exit status or 'traceback', stdout, stderr) of `python cli.py *args`, in-process."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(args)
    except BaseException as error:  # noqa: BLE001 - a traceback is what the survey looks for
        if isinstance(error, KeyboardInterrupt):
            raise
        return "traceback", out.getvalue(), traceback.format_exc(limit=-3)
    return code, out.getvalue(), err.getvalue()


def meta_params(config) -> int | str:
    """sum(p.numel()) of AutoModelForCausalLM built from the config on the meta device."""
    try:
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config)
        return sum(p.numel() for p in model.parameters())
    except Exception as error:  # noqa: BLE001 - a class that cannot be built is reported, not fatal
        return f"build failed: {type(error).__name__}: {str(error)[:100]}"


def survey_one(model_type: str, folder: Path, simulate: bool = True) -> dict:
    """The row of one model_type (see the module docstring)."""
    row: dict = {"model_type": model_type}
    try:
        config = CONFIG_MAPPING[model_type]()
    except Exception as error:  # noqa: BLE001
        row.update(status="no default config", detail=f"{type(error).__name__}: {error}"[:160])
        return row
    row["torch"] = meta_params(config)
    files = {"full": config.to_dict(), "diff": config.to_diff_dict()}
    statuses = []
    for kind, data in files.items():
        path = folder / model_type / kind / "config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, default=str))
        code, out, err = run_cli(["estimate", "--config", str(path), "--json"])
        if code == 0:
            ours = json.loads(out)["params"]["total"]
            row[f"ours_{kind}"] = ours
            if isinstance(row["torch"], str):  # transformers cannot build its own default
                statuses.append("no reference")
            else:
                statuses.append("exact" if ours == row["torch"] else "wrong")
        elif code == 2 and err.count("\n") <= 1 and err.startswith("error:"):
            statuses.append("unsupported")
            row.setdefault("detail", err.strip()[:200])
        else:
            statuses.append("defect")
            row[f"detail_{kind}"] = (err.strip().splitlines() or ["?"])[-1][:300]
    if simulate and statuses[0] == "exact":
        code, out, err = run_cli(["simulate", "--config", str(folder / model_type / "full" / "config.json")])
        if code != 0:
            statuses.append("defect")
            row["detail_simulate"] = (err.strip().splitlines() or ["?"])[-1][:300]
    order = ("defect", "wrong", "unsupported", "no reference", "exact")
    row["status"] = next(s for s in order if s in statuses)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--types", help="comma-separated model types (default: all)")
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args(argv)
    types = args.types.split(",") if args.types else sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for model_type in types:
            row = survey_one(model_type, Path(folder))
            rows.append(row)
            extra = {k: v for k, v in row.items() if k not in ("model_type", "status")}
            print(f"{model_type:28s} {row['status']:12s} {extra}", flush=True)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    print(counts)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
