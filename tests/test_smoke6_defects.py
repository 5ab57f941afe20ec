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


def test_a_preset_copy_with_its_bandwidth_edited_keeps_no_faster_gemv(tmp_path, capsys):
    """torchao's H100 (pytorch/ao README: 96 GB at 2.4 TB/s, 500 W) typed as a user types it: `hardware
    --show h100-sxm`, bandwidth and memory edited. The copy kept the SXM's measured 3.0165 TB/s GEMV
    rate and decoded Llama 3.1 8B int4wo-64 at 328 tokens/s; with it at 0, as the published row
    sets it, 323 (303 before torchao's wqkv ran as one GEMM, kernel_facts.json fused_projections;
    published_runs.json torchao-h100: 322.0 beside torchao's 241.39)."""
    assert cli.main(["hardware", "--show", "h100-sxm"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gemv_bandwidth_bytes_per_s"] == 3_016_544_000_000.0
    data.update(name="h100-96gb", bandwidth_bytes_per_s=2.4e12, memory_bytes=103_079_215_104, power_limit_watts=500)
    del data["device_memory_bytes"]  # the SXM's reported total goes with its capacity (test_hardware_files.py)
    path = tmp_path / "h100-96gb.json"
    path.write_text(json.dumps(data))
    decode = ["simulate", "--model", "llama3.1-8b", "--hardware", str(path), "--prompt", "6", "--gen", "200",
              "--kv-cache", "static", "--cuda-graphs", "--decode-code", "gpt-fast", "--attention", "sdpa",
              "--weight-dtype", "int4", "--weight-group", "64", "--quant-layout", "torchao", "--quantize-head",
              "--json"]
    assert cli.main(decode) == 2  # the kept rate is above the edited bandwidth (session 21: schema bound)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and ("gemv_bandwidth_bytes_per_s (3.017e+12) must be at most "
                                                   "bandwidth_bytes_per_s (2.4e+12)") in err
    path.write_text(json.dumps(dict(data, bandwidth_bytes_per_s=3.9e12)))  # edited up: the H100 NVL's
    assert cli.main(decode) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "gemv_bandwidth_bytes_per_s is still h100-sxm's measured 3.017e+12" in err
    path.write_text(json.dumps(dict(data, gemv_bandwidth_bytes_per_s=0.0)))
    assert cli.main(decode) == 0
    tokens = json.loads(capsys.readouterr().out)["decode"]["decode_tokens_per_second"]
    assert round(tokens) == 323


def test_an_fp8_runs_mfu_names_its_bf16_peak(capsys):
    """MFU divides by the run's dtype's datasheet peak (bf16), as FP8 training runs are reported, so
    an FP8 step may read above 100%; the step line says which peak. Llama 3 8B on 8 H100s, FSDP2,
    compiled: 849 ms in bf16, 694 ms with torchao's tensorwise FP8, MFU 56.5% and 69.1%, both over
    989.4 TFLOP/s (model FLOPs the same: 69.1 / 56.5 = 849 / 694 to the rounding; 848 and 693 ms before
    FSDP2's collectives were issued one per unit (session 27: 65 all-gathers, 33 reduce-scatters); 841 and 687 ms
    before FSDP's all-gathers and reduce-scatters took NCCL's ring rate and short-K GEMMs their
    measured rate, validate/FINDINGS.md)."""
    args = ["simulate", "--train", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8", "--seq-len",
            "8192", "--batch", "1", "--global-batch", "8", "--framework", "fsdp2", "--zero", "3", "--compile"]
    lines = {}
    for extra in ([], ["--fp8", "tensorwise"]):
        assert cli.main(args + extra) == 0
        lines[bool(extra)] = capsys.readouterr().out.splitlines()[2]
    # (849 ms, 56.5% and 694 ms, 69.1% before FSDP2's copies and exposed edges, session 28; 905 ms, 53.0% and
    # 750 ms, 63.9% before session 31's loss traffic, blocks/head.py fused_loss_bytes)
    assert "907 ms" in lines[False] and "MFU 52.8% (dense model FLOPs over the bf16 datasheet peak)," in lines[False]
    assert "753 ms" in lines[True] and ("MFU 63.7% (dense model FLOPs over the bf16 datasheet peak, as FP8 runs are "
                                        "reported: it may pass 100%),") in lines[True]
