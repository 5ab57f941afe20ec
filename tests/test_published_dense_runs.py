"""Megatron-Bridge's dense Llama 3 pre-training rows (issue 18): each "megatron-bridge" row of
costmodel/published_runs.json against the page's line (tests/megatron_bridge_dense_page.py), in
FP8, MXFP8 and NVFP4, the setup built from it, and the model's own sentence for the rows it refuses."""

from __future__ import annotations

import pytest

from costmodel.layout.fp8 import RECIPES
from reports.published_runs import train_setup
from tests.megatron_bridge_dense_page import HEADERS, LEFT_OUT, PAGE_ROWS, RECIPE_LAYOUTS
from tests.megatron_bridge_pages import named_cells, refusal as _reason, runs_and_source

SYSTEMS = {"DGX-H100": "h100-sxm", "DGX-B200": "b200", "DGX-GB200": "gb200", "DGX-GB300": "gb300"}
#: the page's precision -> the row's --fp8; 25.09 prints none (FP8 current scaling, the 'megatron-bridge' source)
PRECISIONS = {"FP8": "current", "FP8-CS": "current", None: "current", "MXFP8": "mxfp8", "FP8-MX": "mxfp8",
              "NVFP4": "nvfp4"}
MODELS = {"LLAMA3_8B": "llama3-8b", "LLAMA3_70B": "llama3-70b", "LLAMA3.1_405B": "llama3.1-405b"}


def _cell(value: str, figure: int) -> str:
    """One cell: '37556 (36108)' is 37556 as figure 0 and 36108 as figure 1; a plain cell is itself."""
    first, _, rest = value.partition("(")
    return rest.strip().rstrip(")").strip() if figure and rest else first.strip()


def _cells(header: int, line: str, heading: str, figure: int) -> dict[str, str]:
    return named_cells(HEADERS[header], [_cell(c, figure) for c in line.strip().strip("|").split("|")], heading)


def _runs() -> tuple[dict, dict]:
    return runs_and_source("megatron-bridge")


def test_every_dense_row_of_the_page_is_in_the_json_or_left_out_with_its_reason():
    """72 rows typed (the 22 FP8 rows typed first, the 10 other FP8 rows, 22 MXFP8 or FP8-MX and 18
    NVFP4), 12 lines left out (Megatron-FSDP over 64 GPUs with host offload): 80 lines, the four
    25.11 'FP8-CS (FP8-MX)' lines giving two rows each."""
    runs, _ = _runs()
    ours = [i for i in runs if i.startswith("megatron-bridge ")]
    assert sorted(ours) == sorted(r[0] for r in PAGE_ROWS) and len(ours) == 72
    precisions = [runs[i].get("fp8", "current") for i in ours]
    assert [precisions.count(p) for p in ("current", "mxfp8", "nvfp4")] == [32, 22, 18]
    lines = {(r[1], r[5]) for r in PAGE_ROWS} | {(r[0], r[3]) for r in LEFT_OUT}
    assert len(lines) == len(PAGE_ROWS) + len(LEFT_OUT) - 4 == 80
    for _, heading, header, line in LEFT_OUT:
        cells = _cells(header, line, heading, 0)
        assert cells["FSDP"] == "64" and cells["Model"] != "LLAMA3_8B"


@pytest.mark.parametrize("run_id, release, heading, header, figure, line", PAGE_ROWS, ids=[r[0] for r in PAGE_ROWS])
def test_each_dense_row_is_expressed_as_the_page_prints_it(run_id, release, heading, header, figure, line):
    runs, source = _runs()
    run, cells = runs[run_id], {**_cells(header, line, heading, figure), **RECIPE_LAYOUTS.get(run_id, {})}
    assert run_id.split()[1] == release
    assert run["model"] == MODELS[cells["Model"]]
    assert run.get("hardware", source["hardware"]) == SYSTEMS[cells["System"]]
    assert run["published_tokens_per_s_per_gpu"] == int(cells["Tokens / sec / GPU"])
    assert run["published_model_tflops_per_gpu"] == int(cells["Model TFLOP / sec / GPU"])
    vp = 1 if cells["VP"] == "n/a" else int(cells["VP"])
    assert (run["gpus"], run["tp"], run["pp"], run.get("cp", 1), run.get("virtual_stages", 1)) == \
        (int(cells["#-GPUs"]), int(cells["TP"]), int(cells["PP"]), int(cells["CP"]), vp)
    assert run["tp"] * run["pp"] * run.get("cp", 1) * run["dp"] == run["gpus"] and "ep" not in run
    assert (run["micro_batch"], run["global_batch"], run["seq_len"]) == \
        (int(cells["MBS"]), int(cells["GBS"]), int(cells["Sequence Length"]))
    # FSDP 0: DDP with the distributed optimizer; the 8B H100 rows' FSDP 8 as Megatron-FSDP (megatron --zero 3)
    fsdp = cells.get("FSDP", "0")
    assert run.get("framework", "megatron") == "megatron" and run.get("zero", 1) == (1 if fsdp == "0" else 3)
    assert run.get("fp8", source["fp8"]) == PRECISIONS[cells.get("Precision")]
    assert run.get("schedule", "1f1b") == ("interleaved" if vp > 1 else "1f1b")
    # The recipes' communication overlap: tp_comm_overlap (userbuffers) on every precision but NVFP4
    # (llama3_llm_pretrain.py and llama31_llm_pretrain.py at 21d102f5e: 'tp_comm_overlap = False if
    # precision == "nvfp4"'), overlap_p2p_comm wherever pp > 1 and vp > 1 (training/comm_overlap.py)
    interleaved = run["pp"] > 1 and vp > 1
    stated = {**({"tp": 1.0} if run["tp"] > 1 and interleaved and run.get("fp8") != "nvfp4" else {}),
              **({"pp": 1.0} if interleaved else {})}
    assert run.get("overlap") == (stated or None)


def test_the_rows_the_model_cannot_express_are_refused_with_its_sentence():
    """Every FP8 row builds; an MXFP8 or NVFP4 row builds where --fp8 names its recipe
    (costmodel/layout/fp8.py RECIPES) and is refused with the layout's own sentence where not."""
    runs, source = _runs()
    for run_id, *_ in PAGE_ROWS:
        run = runs[run_id]
        fp8 = run.get("fp8", source["fp8"])
        reason = _reason(run, source)
        if fp8 in RECIPES:
            assert reason is None, run_id
        else:
            assert reason == f"layout: fp8 must be one of {', '.join(RECIPES)}, got '{fp8}'.", run_id


@pytest.mark.parametrize("run_id, chunks, layers", [
    ("megatron-bridge 26.06 llama3.1-405b nvfp4 256xgb200", 128, (0, *[1] * 126, 0)),
    ("megatron-bridge 26.04.01 llama3.1-405b mxfp8 256xgb300", 32, (3, *[4] * 30, 3)),
    ("megatron-bridge 26.02.01 llama3.1-405b nvfp4 256xgb200", 64, (1, *[2] * 62, 1)),
])
def test_the_405b_rows_split_their_chunks_as_the_recipe_counts_the_embedding_and_the_loss(run_id, chunks, layers):
    """account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split
    (recipes/llama/llama3.py llama31_405b_pretrain_config, lines 1146-1147 at 21d102f5e): 126 layers
    + 2 over PP x VP chunks; at PP 16 x VP 8 each chunk holds one, so the first holds the embedding
    alone and the last the loss alone."""
    runs, _ = _runs()
    run = runs[run_id]
    assert run["pp"] * run["virtual_stages"] == chunks and tuple(run["stage_layers"]) == layers


@pytest.mark.parametrize("run_id", ["megatron-bridge 26.04 llama3-70b fp8-cs 64xh100",
                                    "megatron-bridge 26.04 llama3.1-405b fp8-cs 256xgb300",
                                    "megatron-bridge 25.09 llama3.1-405b fp8 128xb200"])
def test_an_added_fp8_row_builds_the_pages_layout(run_id):
    """The FP8 rows added with the MXFP8 and NVFP4 ones run now: Megatron-Core with the distributed
    optimizer, sequence parallelism under TP, the interleaved schedule, FP8 current scaling, cuDNN
    attention, the TP and pipeline overlap of the recipes."""
    runs, source = _runs()
    run = runs[run_id]
    estimate, hardware, options = train_setup(run, source)
    layout, workload = estimate.layout, estimate.workload
    assert (layout.tp, layout.pp, layout.cp, layout.dp, layout.virtual_stages) == \
        (run["tp"], run["pp"], run.get("cp", 1), run["dp"], run["virtual_stages"])
    assert (layout.framework, layout.zero, layout.fp8, layout.sp, layout.schedule) == \
        ("megatron", 1, "current", True, "interleaved")
    assert workload.batch * layout.microbatches * layout.dp == run["global_batch"]
    assert (workload.seq_len, workload.recompute) == (8192, "none") and hardware.name == run.get("hardware", "h100-sxm")
    overlap = options.pop("overlap")
    assert (overlap.tp, overlap.pp) == (1.0, 1.0)
    assert options == {"autocast": False, "attention_kernel": "cudnn"}


@pytest.mark.parametrize("run_id", sorted(RECIPE_LAYOUTS))
def test_a_row_typed_in_its_recipes_layout_would_not_fit_in_the_pages(run_id):
    """26.02.01's GB300 70B lines print layouts (MXFP8: PP 4, no VP, MBS 2; NVFP4: PP 1, MBS 2) that
    the release's recipe does not state (RECIPE_LAYOUTS) and that hold more than a GB300's 288 GiB
    on the most loaded rank: the MXFP8 one's first stage keeps 4 micro-batches of 2 x 8192 tokens
    (1F1B), the NVFP4 one all 80 layers' weights and gradients. The recipe's layout fits."""
    runs, source = _runs()
    run = runs[run_id]
    estimate, hardware, _ = train_setup(run, source)
    assert estimate.per_rank["total"] < hardware.training_memory_bytes
    printed = next(r for r in PAGE_ROWS if r[0] == run_id)
    cells = _cells(*printed[3:4], printed[5], printed[2], printed[4])
    pp, vp = int(cells["PP"]), 1 if cells["VP"] == "n/a" else int(cells["VP"])
    page = {**{k: v for k, v in run.items() if k not in ("schedule", "virtual_stages", "overlap")},
            "pp": pp, "dp": run["gpus"] // (run["tp"] * pp), "micro_batch": int(cells["MBS"])}
    assert vp == 1 and (pp, page["micro_batch"]) != (run["pp"], run["micro_batch"])
    estimate, hardware, _ = train_setup(page, source)
    assert estimate.per_rank["total"] > 1.4 * hardware.training_memory_bytes
