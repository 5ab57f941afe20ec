"""Where session 24's merged branches meet (validate/FINDINGS.md "Where the merged branches meet"):
each test failed before its fix; numbers are exact integers with their arithmetic."""

from __future__ import annotations

from tests.cli_run import run_json, run_main


def one_error_line(args: list[str], capsys) -> str:
    """The one `error:` line of a refused command (exit status 2, nothing on stdout, no traceback)."""
    code, out, err = run_main(args, capsys)
    lines = [line for line in err.strip().splitlines() if not line.startswith("warning:")]
    assert (code, out, len(lines)) == (2, "", 1), (code, out, err)
    assert lines[0].startswith("error: ") and "Traceback" not in err
    return lines[0]


# 1. DeepSeek-V4 with FP8 weights on FP8 tensor cores: its compressor leaf holds weight products beside
#    its indexer's scores against the n / 4 compressed entries, so no one FP8 share of the leaf's FLOPs
#    (a ValueError traceback before).

def test_deepseek_v4_w8a8_is_refused_in_one_line(capsys):
    line = one_error_line(["simulate", "-m", "deepseek-v4-flash", "--hardware", "b200", "--prompt", "4096",
                           "--gen", "128", "--weight-dtype", "fp8"], capsys)
    assert "W8A8" in line and "decoder.csa_layer.self_attention.compressor" in line and "--fp8-gemm w8a16" in line
