"""What validate/hf_survey.py found running the CLI on transformers' own configs, kept as tests.

A field that divides another (attention heads, Qwen2-MoE's decoder_sparse_step) set to 0 was a
ZeroDivisionError traceback; it is one `error:` line naming the field, exit 2.
"""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_main
from tests.family_configs import FAMILY_CONFIGS

#: (family config, field, value): each was a traceback before validate/FINDINGS.md's survey.
ZERO_DIVISORS = [
    ("phi3", "num_attention_heads", 0),
    ("falcon_new", "num_attention_heads", 0),
    ("bloom", "n_head", 0),
    ("bloom", "num_attention_heads", 0),
    ("qwen2_moe", "decoder_sparse_step", 0),
]


@pytest.mark.parametrize("family, field, value", ZERO_DIVISORS)
def test_a_zero_divisor_is_one_line_naming_the_field(family, field, value, tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**FAMILY_CONFIGS[family], field: value}))
    code, _, err = run_main(["estimate", "--config", str(path)], capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error:")
    assert field in err and "at least 1" in err
