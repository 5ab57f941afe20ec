"""AutoAWQ's benchmark rows attend a window of n_generate keys (wt39_rowcheckd, session 39; the sources' "amended").

examples/benchmark.py loads from_quantized(..., fuse_layers=True, max_new_tokens=n_generate), and each fused block's
WindowedCache holds max_seq_len = config.max_new_tokens positions (5c7e368: awq/models/llama.py 121; 34085ed: 115).
The prefill of n_generate tokens fills it, and the first decode step rolls it (roll_kv_n_steps, n = min(100,
max_seq_len)), so no decode step attends more than n_generate keys. The rows state it as config_changes
sliding_window = their Decode Length, which reports/published_rows.run_model applies to a decode row's preset as it
does to a training row's.
"""

from __future__ import annotations

import copy

from reports.published_decode import decode_run
from tests.unseen_rows import decode_setup_of, runs_of, source_of


def test_every_row_states_its_decode_length_as_the_window():
    rows = runs_of("autoawq-pr320") + runs_of("autoawq-v0.1.6")
    assert len(rows) == 30  # 8 + 22
    for run in rows:
        assert run["config_changes"] == {"sliding_window": run["gen"]}, run["id"]
        cfg = decode_setup_of(run)[0]
        assert (cfg.sliding_window, cfg.name) == (run["gen"], run["model"]), run["id"]


def test_the_window_shortens_the_long_rows_steps():
    """The 4096/4096 row attends 4,096 keys a step, not 4,097-8,191: ours / published 1.359 -> 1.467 (kernel model);
    the 32/32 row's 33-63 keys -> 32 move it by under 0.1%."""
    source = source_of("autoawq-pr320")
    rows = {r["id"].split(" batch 1 ")[1]: r for r in runs_of("autoawq-pr320")}
    # wt43_eagerops: the rows' host calls are counted now (autoawq-fused, 1,064 a step at the A100's 7.1 us: 7.554 ms),
    # longer than either step's kernels, so the window no longer shows in the step (was 1.359 -> 1.467 and
    # 1.448 -> 1.449 under the per-block launch term); it still shows in the cache held (the last test's bytes)
    for length, unwindowed, windowed in (("4096/4096 a100", 1.71, 1.71), ("32/32 a100", 1.423, 1.423)):
        run = rows[length]
        bare = copy.deepcopy(run)
        del bare["config_changes"]
        published = run["published_tokens_per_s"]
        assert round(decode_run(bare, source, "kernels") / published, 3) == unwindowed
        assert round(decode_run(run, source, "kernels") / published, 3) == windowed


def test_the_rows_simulate_line_names_the_window():
    """validate/off_decode_rows.row_command has no option for a config change: it follows the line as a note."""
    from validate.off_decode_rows import row_command

    run = next(r for r in runs_of("autoawq-pr320") if " 4096/4096 " in r["id"])
    assert row_command(run, source_of("autoawq-pr320")).endswith("  (the model with {'sliding_window': 4096})")


def test_the_window_leaves_the_prefill_alone():
    """wt39_review: the window changes the decode steps' attention reads only. Every row's prompt is its Decode Length
    (benchmark.py's context = n_generate random ids), so the prefill of the prompt attends within the window: the 4096/4096
    row's prefill is the same 0.3906 s with and without it, and its decode step 9.503 -> 8.806 ms (the first at 4,097
    keys, 4,096 windowed). AutoAWQ's prefill is not windowed (its fused attention attends the prompt's own keys), so a
    row with prompt > gen would need more than a sliding_window to say it."""
    from costmodel.roofline import simulate_inference
    from reports.published_decode import decode_setup

    rows = runs_of("autoawq-pr320") + runs_of("autoawq-v0.1.6")
    assert all(decode_setup_of(r)[2]["prompt"] == decode_setup_of(r)[2]["gen"] for r in rows)
    source = source_of("autoawq-pr320")
    run = next(r for r in runs_of("autoawq-pr320") if " 4096/4096 " in r["id"])
    bare = copy.deepcopy(run)
    del bare["config_changes"]
    results = []
    for row in (bare, run):
        cfg, hardware, s, quantization = decode_setup(row, source)
        results.append(simulate_inference(
            cfg, hardware, prompt=s["prompt"], gen=s["gen"], batch=s["batch"], dtype=s["dtype"], attention=s["attention"],
            kv_cache=s["kv_cache"], cuda_graphs=s["cuda_graphs"], quantization=quantization, time_model="kernels",
            implementation=s["implementation"], decode_kernel=s["decode_kernel"], sampling=s["sampling"],
            cache_size=s["cache_size"], compiled=s["compiled"]))
    (unwindowed, windowed) = results
    # wt43_eagerops: 0.3906 -> 0.3877, the prefill's per-block launches replaced by the counted calls' host time
    # wt45_megatron: 0.3877 -> 0.3861, the prefill's write-dominated GEMMs (the scores) at the A100 file's Copy rate
    assert round(unwindowed["prefill"]["seconds"], 4) == round(windowed["prefill"]["seconds"], 4) == 0.3861
    assert unwindowed["prefill"]["flops"] == windowed["prefill"]["flops"]
    assert [round(r["decode"]["time_per_output_token"] * 1e3, 3) for r in results] == [7.554, 7.554]  # wt43_eagerops: host-bound (was 9.503, 8.806)
    assert (unwindowed["memory"]["kv_bytes_per_token_past_windows"], windowed["memory"]["kv_bytes_per_token_past_windows"]) \
        == (524288, 0)  # 32 layers x 2 x 4,096 x 2 bytes a position past the window: none held
