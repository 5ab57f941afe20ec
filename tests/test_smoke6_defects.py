"""The sixth new-user round's defects (validate/FINDINGS.md "Issue 18: the sixth round"), each
typed as the user typed it: options a layout reads only beside another were silently ignored, and
the refusal for experts beside tensor parallelism still said folding was not modelled."""
import json

import pytest

import cli

TRAIN = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--seq-len", "4096",
         "--batch", "1", "--dp", "8"]


@pytest.mark.parametrize("extra, words", [
    (["--cp-kv-heads", "repeated"], "--cp-kv-heads says how context parallelism"),
    (["--cp-rotate", "ring"], "--cp-rotate says how context parallelism"),
    (["--cp", "1", "--cp-kv-heads", "repeated"], "it needs --cp above 1"),
    (["--etp", "1"], "--etp is modelled with expert parallelism only"),
])
def test_an_option_that_changes_nothing_without_its_partner_is_one_line(extra, words, capsys):
    """Both ran (exit 0) and printed llama3-8b's 529 ms step as if the option had been read."""
    assert cli.main(TRAIN + extra) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and words in err


def test_etp_without_ep_on_a_mixture_of_experts_is_refused(capsys):
    """tp 2 with --etp 1 and no --ep ran the experts under tp (check_expert_parallel returns at ep 1)."""
    assert cli.main(["estimate", "--model", "mixtral-8x7b", "--tp", "2", "--sp", "--dp", "4", "--etp", "1",
                     "--framework", "megatron"]) == 2
    assert "without --ep the experts run under --tp" in capsys.readouterr().err


def test_the_same_options_with_their_partner_still_run(capsys):
    """The refusals above do not touch the layouts they qualify: --cp 2 with repeated heads moves
    Llama 3 8B's 32 heads, 4 x 8 KV heads' bytes (test_context_heads: 2 GiB and 8 GiB)."""
    args = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--seq-len", "8192",
            "--cp", "2", "--gpus", "2", "--framework", "fsdp2", "--zero", "3", "--attention", "flash", "--json",
            "--cp-kv-heads", "repeated"]
    assert cli.main(args) == 0
    assert json.loads(capsys.readouterr().out)["parallel"]["communication"]["cp"]["all_gather"] == 8 * 2**30


def test_ep_beside_tp_names_the_folding_that_is_modelled(capsys):
    """Mixtral 8x22B as NeMo 25.02's DGX-B200 row lays it out (TP 2 with EP) without --etp: the
    refusal said folding was 'neither modelled' and to use --tp 1, though --etp 1 runs it."""
    assert cli.main(["estimate", "--model", "mixtral-8x7b", "--tp", "2", "--sp", "--dp", "4", "--ep", "4",
                     "--framework", "megatron"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "--etp 1 with --sp and --framework megatron" in err and "neither modelled" not in err
