"""The ninth new-user round's defects (validate/FINDINGS.md "A new user's ninth round"), each
typed as the user typed it: a serving layout's expert all-to-alls printed as tensor-parallel
all-reduces, `--mtp` silently ignored by inference, a one-GPU training report that did not say
which attention its memory counts."""

import pytest

import cli
from tests.cli_run import run_json

EP_SERVE = ["simulate", "--model", "mixtral-8x7b", "--hardware", "h100-sxm", "--ep", "4", "--gpus", "8",
            "--prompt", "512", "--gen", "128", "--batch", "8"]


def _one_line(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_serving_ep_all_to_all_is_not_a_tp_all_reduce(capsys):
    """`simulate --ep 4 --gpus 8` (tp 1) printed "of which tp all-reduces 40.5 us": StepTime.token
    summed the stages' tp, ep and cp collectives under tp_all_reduce_seconds. At tp 1 there is no
    all-reduce; the 40.5 us are the experts' all-to-alls, now reported apart."""
    from costmodel.layout.rank import ParallelEstimate
    from costmodel.layout.timing import step_time

    r = run_json(EP_SERVE, capsys)
    token, prefill = r["token"], r["prefill"]
    assert token["tp_all_reduce_seconds"] == 0.0 and prefill["tp_all_reduce_seconds"] == 0.0
    assert token["cp_seconds"] == 0.0 and token["pp_seconds"] == 0.0
    # the figure that was printed as the tp all-reduces (main at b587e21: 4.045570002785883e-05 s)
    assert token["ep_all_to_all_seconds"] == pytest.approx(4.045570002785883e-05, rel=1e-12)
    assert prefill["ep_all_to_all_seconds"] == pytest.approx(0.0100663344, rel=1e-12)  # at the H100's 320 GB/s
    # alltoall busbw (nccl_facts.json all_to_all_peak_busbw; 0.006808765562512759 on the NVLS all-reduce curve)
    # the rank's kernels (less their launches, which the host stands for since wt27_tphost) and its
    # all-to-alls; the eager step is its host's, generate's 3,160 counted Mixtral ops x 6.545 us (borrowed)
    assert token["host"]["kernels_seconds"] == pytest.approx(token["compute_seconds"] + token["ep_all_to_all_seconds"],
                                                             rel=1e-15)
    assert token["seconds_per_token"] == 3160 * 6.545241752576789e-06 and token["host"]["bound"] is True
    # the one rule: each stage's exposed "ep" of StepTime.stage, summed
    import costmodel
    cfg = costmodel.load_model("mixtral-8x7b")
    from costmodel.hardware import load_hardware
    from costmodel.layout import Layout
    from costmodel.workload import Workload
    workload = Workload(seq_len=512, gen_tokens=128, batch=8, dtype="bf16", precision="pure", attention="sdpa")
    layout = Layout(dp=8, ep=4, framework="deepspeed")
    timer = step_time(ParallelEstimate(cfg, workload, layout, phase="decode"), load_hardware("h100-sxm"))
    assert sum(timer.stage(s)["ep"] for s in timer.estimate.stages) == token["ep_all_to_all_seconds"]
    assert cli.main(EP_SERVE) == 0
    text = capsys.readouterr().out
    assert "tp 1 x pp 1 x dp 8 (ep 4), batch 8 per replica" in text
    assert "of which tp all-reduces 0 us, ep all-to-alls 10.1 ms, pipeline sends 0 us" in text
    assert "  of which tp all-reduces       0 us\n  ep all-to-alls             40.5 us\n" in text


def test_tp_serving_has_no_all_to_all_line(capsys):
    """A tensor-parallel layout without experts' parallelism keeps its one all-reduce line."""
    args = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--tp", "2", "--prompt", "512",
            "--gen", "16"]
    assert cli.main(args) == 0
    text = capsys.readouterr().out
    assert "ep all-to-alls" not in text and "of which tp all-reduces" in text
    token = run_json(args, capsys)["token"]
    assert token["ep_all_to_all_seconds"] == 0.0 and token["tp_all_reduce_seconds"] > 0


@pytest.mark.parametrize("layout", [[], ["--tp", "8"]])
def test_mtp_without_train_is_refused(layout, capsys):
    """`simulate --model deepseek-v3 --mtp 1` without --train printed the same JSON as without it
    (with_mtp dropped it unless --train): MTP is a training module here, so inference refuses it as
    it refuses --seq-len."""
    args = ["simulate", "--model", "deepseek-v3", "--hardware", "h200", "--prompt", "512", "--gen", "64",
            "--mtp", "1", *layout]
    assert cli.main(args) == 2
    assert _one_line(capsys) == ("error: --mtp: training options, read only with --train; inference takes "
                                 "--prompt, --gen and --batch.")


def test_one_gpu_training_names_its_attention(capsys):
    """`simulate --train` without a layout counted eager attention's n x n tensors (124.09 GiB of
    activations for Llama 3 8B at 4,096) and its header named neither the code nor the kernel,
    while `--dp 1` (sdpa, 26.60 GiB) names both: the header now says impl and attention."""
    args = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--seq-len", "4096",
            "--batch", "1"]
    assert cli.main(args) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == ("llama3-8b training on h100-sxm (bf16): seq_len 4096, batch 1, impl hf, attention eager, "
                     "recompute none; eager attention: the default without a layout (transformers' eager path, "
                     "which the memory and op counts are proven against); transformers itself, and a layout, run "
                     "sdpa: --attention sdpa times it")  # and why (session 31, defaults.attention_source)
    assert run_json(args, capsys)["memory"]["activations"] == 133_235_294_220


@pytest.mark.parametrize("keywords, refused", [({"seq_len": 4096}, "seq_len"),
                                               ({"recompute": "full", "tokens": 1e9}, "recompute, tokens"),
                                               ({"impl": "megatron"}, "impl")])
def test_api_simulate_refuses_training_keywords_for_inference(keywords, refused):
    """costmodel.simulate("llama3-8b", seq_len=4096) ran inference on a 2,048-token prompt (seq_len
    is a training keyword; inference reads prompt): the command refuses `--seq-len` without --train,
    the API now refuses it too."""
    import costmodel
    from costmodel.config import ConfigError

    with pytest.raises(ConfigError) as error:
        costmodel.simulate("llama3-8b", "h100-sxm", **keywords)
    assert str(error.value) == f"{refused}: read only with train=True; inference takes prompt, gen and batch."


def test_api_simulate_refuses_inference_keywords_for_training():
    import costmodel
    from costmodel.config import ConfigError

    with pytest.raises(ConfigError) as error:
        costmodel.simulate("llama3-8b", "h100-sxm", train=True, prompt=5, kv_cache="static")
    assert str(error.value) == ("prompt, kv_cache: inference keywords, which train=True ignores; a training step "
                                "takes seq_len and batch.")
    # the keywords each mode reads still run, and agree with the command
    run = costmodel.simulate("llama3-8b", "h100-sxm", train=True, seq_len=4096).to_dict()
    assert run["inputs"]["seq_len"] == 4096


def test_plan_serve_keeps_a_fixed_dp(capsys):
    """`plan --serve --gpus 8 --dp 2` listed dp 1, 4 and 8 too (plan_serving read tp and pp only;
    a training plan keeps a fixed dp): now tp x pp x 2 only, 8 = 4 x 1 x 2, 2 x 2 x 2, 1 x 4 x 2."""
    args = ["plan", "--serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8", "--dp", "2"]
    layouts = [(e["layout"]["tp"], e["layout"]["pp"], e["layout"]["dp"]) for e in run_json(args, capsys)["feasible"]]
    assert sorted(layouts) == [(1, 4, 2), (2, 2, 2), (4, 1, 2)]
    both = run_json(args + ["--tp", "2"], capsys)["feasible"]
    assert [(e["layout"]["tp"], e["layout"]["pp"], e["layout"]["dp"]) for e in both] == [(2, 2, 2)]
    assert cli.main(args[:-1] + ["3"]) == 2
    assert _one_line(capsys) == "error: dp 3 does not divide the 8 GPUs of --gpus (tp x pp x cp x dp must equal them)."


@pytest.mark.parametrize("keywords, refused", [({"ep": 2}, "ep"), ({"zero": 0}, "zero"),
                                               ({"framework": "megatron", "seq_len": 4096}, "framework, seq_len")])
def test_api_plan_serve_refuses_training_options(keywords, refused):
    """costmodel.plan(..., serve=True, ep=2) ranked the same tp x pp x dp layouts as without it (the
    serving grid reads tp, pp and dp only), where `plan --serve --ep 2` is refused."""
    import costmodel
    from costmodel.config import ConfigError

    with pytest.raises(ConfigError) as error:
        costmodel.plan("llama3-8b", 8, serve=True, batch=8, **keywords)
    assert str(error.value) == (f"plan: {refused}: training options, which serve=True ignores; a serving plan "
                                "takes batch, prompt and gen (and tp, pp, dp).")


def test_mtp_is_named_where_it_is_counted(capsys):
    """`--mtp 1` moved every figure (Llama 3 8B: 8,030,261,248 -> 8,281,939,968 parameters, the
    MTP depth's norms, 2d -> d projection and layer) while no header and no JSON `inputs` said it was
    on: estimate, simulate (with and without a layout) and plan now print ", MTP 1" and carry "mtp"."""
    est = run_json(["estimate", "--model", "llama3-8b", "--mtp", "1"], capsys)
    assert est["inputs"]["mtp"] == 1 and est["params"]["total"] == 8_281_939_968
    # one depth: three RMSNorms (enorm, hnorm and the depth's final norm, 3 x 4,096), the 2d -> d
    # projection (8,192 x 4,096) and one layer (218,112,000, "per decoder layer")
    assert est["params"]["total"] - 8_030_261_248 == 3 * 4096 + 8192 * 4096 + 218_112_000
    assert run_json(["estimate", "--model", "llama3-8b"], capsys)["inputs"]["mtp"] == 0
    train = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--train", "--seq-len", "4096",
             "--mtp", "1"]
    assert run_json(train, capsys)["inputs"]["mtp"] == 1
    # a layout trains MTP under Megatron-Core only (session 17's tenth round: HF's classes build none)
    assert run_json(train + ["--gpus", "8", "--framework", "megatron"], capsys)["inputs"]["mtp"] == 1
    heads = []
    for args in (["estimate", "--model", "llama3-8b", "--mtp", "1"], train,
                 train + ["--gpus", "8", "--framework", "megatron"],
                 ["plan", "--model", "llama3-8b", "--hardware", "h100-sxm", "--gpus", "8", "--seq-len", "4096",
                  "--global-batch", "64", "--mtp", "1", "--top", "1"]):
        assert cli.main(args) == 0
        heads.append(capsys.readouterr().out.splitlines()[0])
    assert heads == [
        "llama3-8b (decoder, llama): seq_len 2048, batch 1, bf16, impl hf, attention eager, recompute none, MTP 1",
        "llama3-8b training on h100-sxm (bf16): seq_len 4096, batch 1, impl hf, attention eager, recompute none, MTP 1; "
        "eager attention: the default without a layout (transformers' eager path, which the memory and op counts are "
        "proven against); transformers itself, and a layout, run sdpa: --attention sdpa times it",
        "llama3-8b training on 8 x h100-sxm (bf16): seq_len 4096, impl megatron, attention flash, recompute none, MTP 1; "
        "flash attention: the megatron layout's default code",
        "llama3-8b on 8 x h100-sxm, bf16, MTP 1: global batch 64 of 4,096 tokens; time model kernels"]


def test_fit_advice_is_what_the_advised_command_prints(capsys):
    """`estimate --model llama3-70b --seq-len 4096 --hardware h100-sxm` advised "--gpus 32 (--dp with
    --zero 3 --recompute full) 59.09 GiB"; typing it printed 52.98 GiB. The verdict evaluated its
    layouts with the one-GPU default code (eager) where the command typed with a layout runs the
    framework's (DeepSpeed: sdpa). Each layout the verdict tries now runs the code its framework
    implies unless --impl/--attention were typed (verdict.framework_code)."""
    base = ["estimate", "--model", "llama3-70b", "--seq-len", "4096", "--hardware", "h100-sxm", "--json"]
    advice = run_json(base[:-1], capsys)["fit"]["training"]["options"]
    assert [(o["change"], o["memory"]) for o in advice] == [  # (session 27: ZeRO-Infinity beside them)
        ("--gpus 32 (--dp with --zero 3 --recompute full)", 56_887_825_932),
        ("--dp 1 --zero 3 --offload params --recompute full", 9_369_141_772)]
    typed = run_json(base[:-1] + ["--gpus", "32", "--dp", "32", "--zero", "3", "--recompute", "full"], capsys)
    assert typed["fit"]["training"]["memory"] == 56_887_825_932  # 52.98 GiB
    # typed eager stays eager in every suggestion (59.09 GiB, the old figure, is eager's)
    eager = run_json(base[:-1] + ["--attention", "eager"], capsys)["fit"]["training"]["options"]
    assert [(o["change"], o["memory"]) for o in eager] == [
        ("--gpus 32 (--dp with --zero 3 --recompute full)", 63_446_668_812),
        ("--dp 1 --zero 3 --offload params --recompute full", 15_927_984_652)]
    typed = run_json(base[:-1] + ["--gpus", "32", "--dp", "32", "--zero", "3", "--recompute", "full", "--attention",
                               "eager"], capsys)
    assert typed["fit"]["training"]["memory"] == 63_446_668_812


def test_gpus_alone_with_hardware_agrees_with_gpus_alone(capsys):
    """`estimate --model llama3-8b --seq-len 4096 --gpus 8` printed 146.26 GiB a rank and the same with
    `--hardware h100-sxm` printed "Training on 8 GPUs (data parallel): 243.75 GiB" (eager's)."""
    args = ["estimate", "--model", "llama3-8b", "--seq-len", "4096", "--gpus", "8"]
    alone = run_json(args, capsys)["parallel"]["per_rank"]["total"]
    fit = run_json(args + ["--hardware", "h100-sxm"], capsys)["fit"]["training"]
    assert fit["memory"] == alone == 157_046_424_076  # 146.26 GiB


def test_mtp_depths_are_not_the_output_head(capsys):
    """`estimate --model llama3-8b --mtp 1` printed "output head 777.02 M": the lm_head's 525,336,576
    and the MTP depth's 251,678,720 (its leaves sit on the head's part, the last pipeline stage);
    on a tied model (Llama 3.2 1B) the depth hid the "tied to the embeddings" note. The depths are
    now their own entry (params.mtp, "MTP depths")."""
    params = run_json(["estimate", "--model", "llama3-8b", "--mtp", "1"], capsys)["params"]
    assert (params["head"], params["mtp"], params["total"]) == (525_336_576, 251_678_720, 8_281_939_968)
    assert "mtp" not in run_json(["estimate", "--model", "llama3-8b"], capsys)["params"]
    assert cli.main(["estimate", "--model", "llama3.2-1b", "--mtp", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  output head                   0  (tied to the embeddings: counted once, above)" in lines
    assert "  MTP depths              69.22 M  (--mtp 1; the output head shared, counted above)" in lines


@pytest.mark.parametrize("model, hardware, tp, weights", [
    ("deepseek-v3", "h200", 8, 85_140_071_456),   # serve said 84,143,819,052 (78.4 GiB; simulate 79.29 GiB)
    ("mixtral-8x7b", "h100-sxm", 4, 23_353_368_576),  # serve said 23,351,396,352
])
def test_serve_weights_a_gpu_are_simulates_rank(model, hardware, tp, weights, capsys):
    """`serve --model deepseek-v3 --tp 8` printed "weights 78.4 GiB ... per GPU" where `simulate --tp 8`
    printed 79.29 GiB a rank for the same checkpoint: serve divided every weight by tp, while the
    norms, the routers and latent attention's down-projections are whole on every GPU (vLLM's
    RMSNorm and ReplicatedLinear; the layout model's split). serve now reads the layout model's
    split (serving/kvcache.py rank_weight_bytes): the KV budget is 0.93 GiB smaller a GPU."""
    import costmodel
    from costmodel.hardware import load_hardware
    from costmodel.serving.replica import build_replica

    simulated = run_json(["simulate", "--model", model, "--hardware", hardware, "--tp", str(tp), "--prompt", "512",
                       "--gen", "16", "--attention", "flash"], capsys)
    assert simulated["per_rank"]["weights"] == weights
    _, _, setup = build_replica(costmodel.load_model(model), load_hardware(hardware), tp=tp)
    assert setup["kv_cache"]["weight_bytes"] == weights


@pytest.mark.parametrize("extra, named", [(["--seed", "5"], "--seed"), (["--requests", "5"], "--requests"),
                                          (["--prompt", "300", "--output", "50"], "--prompt, --output"),
                                          (["--concurrency", "2", "--requests", "7"], "--requests")])
def test_serve_trace_refuses_what_it_would_not_read(extra, named, capsys, tmp_path):
    """`serve --trace FILE --prompt 300 --output 50 --requests 5 --seed 5` ran the trace's two
    requests at their own lengths and printed nothing about the four options: a trace gives the
    requests and their lengths. Now one line, exit 2 (serving/api.py make_requests: the API too)."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"arrival": 0, "prompt_tokens": 100, "output_tokens": 10}\n'
                     '{"arrival": 0.5, "prompt_tokens": 200, "output_tokens": 20}\n')
    args = ["serve", "--model", "llama3-8b", "--hardware", "h100-sxm", "--trace", str(trace)]
    assert cli.main(args + extra) == 2
    assert _one_line(capsys) == (f"error: {named}: --trace gives the requests and their lengths; leave them out "
                                 "with a trace (they draw requests for --rate or --concurrency).")
    run = run_json(args + ["--concurrency", "2"], capsys)
    assert run["setup"]["load"] == "concurrency" and run["requests"] == 2


def test_layout_gen_0_prints_no_decode_step(capsys):
    """`simulate --tp 2 --prompt 512 --gen 0` printed "last step 7.43 ms 135 tokens/s ... a step at
    context 512" under the prefill: with no token to generate no decode step runs (one GPU's report
    prints the prefill alone). The step stays in the JSON (`token`, what plan reads)."""
    args = ["simulate", "--model", "llama3-8b", "--hardware", "h100-sxm", "--tp", "2", "--prompt", "512", "--gen", "0"]
    assert cli.main(args) == 0
    text = capsys.readouterr().out
    assert "last step" not in text and "prefill (first token)" in text
    assert run_json(args, capsys)["token"]["seconds_per_token"] > 0
    assert cli.main(args[:-1] + ["2"]) == 0
    # --gen 2: one token fed back, the one decode step at 512 + 1 (514 before session 23's n + T - 1)
    # (7.43 ms before wt27_tphost; each rank's host issues generate's 2,488 ops x 6.545 us since)
    assert "  last step                  16.3 ms   61.4 tokens/s over the replicas, a step at context 513" in \
        capsys.readouterr().out
