"""reports/: the figures' numbers, their text at the report's size (nothing off the canvas, nothing
overlapping), and the report page drawn whole in a headless browser.

Every number asserted here is written out with where it comes from, so a wrong formula or a wrong
grouping fails a test.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from typing import Any

import pytest


# ---------------------------------------------------------------------------------------------
# The figures' numbers


@pytest.mark.slow
def test_regime_map_keeps_every_preset_at_its_own_width():
    # The regime map scales a shape in width; at d = d_model it must be the config itself, for
    # every family (MoE experts, latent ranks, windows, heads wider than d/h included), so the
    # crossover and the attention share equal the unscaled model's there.
    import sympy as sp

    from costmodel import symbols as S
    from costmodel.presets import load_preset, preset_names
    from costmodel.tree import CostModel, model_values
    from reports import series

    for name in preset_names():
        cfg = load_preset(name)
        scaled = series.crossover_in_width(cfg)
        assert scaled.free_symbols == {S.d}, name
        assert float(scaled.subs(S.d, cfg.d_model)) == pytest.approx(series.crossover(cfg)[1], rel=1e-12)
        model, n = CostModel(cfg), 1000
        at = {**model_values(cfg), S.b: 1, S.n: n, S.s: n}
        attention, linear = model.attention_flops().xreplace(at), model.projection_ffn_flops().xreplace(at)
        share = series.attention_share_plane(cfg)(n, cfg.d_model)
        assert float(share) == pytest.approx(float(sp.Rational(attention, attention + linear)), rel=1e-12), name
    assert series.multiple_of_d(series.crossover_in_width(load_preset("mixtral-8x7b"))) == (
        "47/4 d + 4 = 11.75 d + 4")  # top-2 of 3.5 d experts; the router's 2 d E per token



def test_figure_numbers_from_the_tree():
    import numpy as np

    from reports import series

    gpt2 = series.load_model("gpt2")
    assert series.crossover(gpt2)[1] == 4608.0  # n* = 6 d for d_ff = 4d, h d_h = d
    assert series.multiple_of_d(series.crossover_in_width(gpt2)) == "6 d"
    shares = series.flop_shares(gpt2, np.array([16, 4608, 65536]))
    total = sum(shares.values())
    assert np.allclose(total, 1.0)
    attention = shares["attention scores QK^T"] + shares["weighted sum of values"]
    assert attention[0] < 0.01 < attention[1] < attention[2]
    llama = series.load_model("llama2-7b")
    curves = series.memory_curves(llama, np.array([4096]), batch=1, dtype="bf16")
    assert curves.kv_cache[0] == 32 * 2 * 4096 * 4096 * 2 == 2 * 2**30
    assert curves.weights == 2 * 6_738_415_616 and curves.states == 16 * 6_738_415_616
    eager, flash, full = curves.activations.values()
    assert full[0] < flash[0] < eager[0]
    groups = series.param_groups(llama)
    assert sum(groups.values()) == 6_738_415_616
    assert groups["output head"] == 32000 * 4096 and groups["embeddings"] == 32000 * 4096


def test_seeds_rule_and_gpus():
    from reports import series
    from reports.claims import seeds_rule

    # GPT-2 (tied): 12 L d^2 + V d.
    assert seeds_rule(series.load_model("gpt2")) == 12 * 12 * 768**2 + 50257 * 768
    # The seed toy: unshared, untied: three V x d tables, 4 layers.
    assert seeds_rule(series.load_model("seed-toy")) == 12 * 4 * 64**2 + 3 * 11 * 64
    capacities = {g["name"]: g["memory_bytes"] for g in series.gpus()}
    assert capacities["H200 141GB SXM"] == 141 * 2**30 and capacities["RTX 4090"] == 24 * 2**30
    assert capacities["A100 80GB SXM"] == 80 * 2**30  # from costmodel/hardware, the one source
    assert all(g["memory_bytes"] == g["memory_gib"] * 2**30 for g in series.gpus())


# ---------------------------------------------------------------------------------------------
# The figures' text, at the report's size


#: Every figure the report draws, for one model and for several (the README's comparison).
FIGURES = {
    "flops-gpt2": lambda b, load: b.make_flops([load("gpt2")]),
    "flops-4-models": lambda b, load: b.make_flops(
        [load(n) for n in ("gpt2", "bert-base-uncased", "llama2-7b", "llama2-70b")]),
    "regimes": lambda b, load: b.make_regimes([load("gpt2")]),
    "memory-gpt2": lambda b, load: b.make_memory(load("gpt2"), 1, "bf16"),
    "memory-llama2-70b": lambda b, load: b.make_memory(load("llama2-70b"), 8, "fp32"),
    "memory-bert-base-uncased": lambda b, load: b.make_memory(load("bert-base-uncased"), 1, "bf16"),
    "generation-gpt2": lambda b, load: b.make_generation(load("gpt2"), False, print),
    "generation-t5-small": lambda b, load: b.make_generation(load("t5-small"), False, print),
    "params": lambda b, load: b.make_params([load("gpt2")]),
    "params-none-highlighted": lambda b, load: b.make_params([]),
    "params-moe": lambda b, load: b.make_params([load("mixtral-8x7b"), load("deepseek-v3")]),
    "kv-cache": lambda b, load: b.make_kv_cache([load("gemma2-9b"), load("deepseek-v3")]),
    "validation": lambda b, load: b.make_validation([load("gpt2")], lambda message: None,
                                                    full_size=False),
    "layout-memory": lambda b, load: layout_figures(b, load)[0],
    "layout-step": lambda b, load: layout_figures(b, load)[1],
}


def layout_figures(build, load) -> list:
    """The two layout figures of a report given llama2-70b on 64 H100s (tp 8 x pp 2 x dp 4)."""
    from costmodel.config import Workload
    from costmodel.layout import Layout

    layout = Layout(tp=8, pp=2, dp=4, microbatches=32, framework="megatron", zero=1)
    return build.make_layouts(load("llama2-70b"), Workload(seq_len=4096, attention="sdpa"), layout, "h100-sxm")


@pytest.fixture(scope="module")
def figures():
    """name -> Made (drawn, not yet rendered to bytes)."""
    from reports import report as build
    from reports.series import load_model

    return {name: make(build, load_model) for name, make in FIGURES.items()}


def drawn_texts(figure) -> list[tuple[Any, Any]]:
    """(Text, its window extent) for every non-empty text the figure draws, with the figure's
    renderer, at the figure's own size and dpi (what savefig writes before any cropping).
    Recorded during a draw: tick labels outside the view and hidden texts are not drawn."""
    from matplotlib.text import Text

    drawn, original = [], Text.draw

    def record(self, renderer):
        original(self, renderer)
        if self.get_visible() and self.get_text().strip():
            drawn.append((self, Text.get_window_extent(self, renderer)))  # the text alone

    Text.draw = record
    try:
        figure.canvas.draw()
    finally:
        Text.draw = original
    return drawn


def text_problems(figure, margin: float = 2.0) -> list[str]:
    """Texts that leave the canvas, overlap another text, or (a panel's title) run past its
    panel's sides into a neighbour or the edge."""
    texts = drawn_texts(figure)
    width, height = figure.bbox.width, figure.bbox.height
    problems = []
    for text, box in texts:
        if box.x0 < margin or box.y0 < margin or box.x1 > width - margin or box.y1 > height - margin:
            problems.append(f"{text.get_text()!r} leaves the {width:.0f}x{height:.0f} canvas: "
                            f"{[round(v) for v in box.extents]}")
    for i, (first, a) in enumerate(texts):
        for second, b in texts[i + 1:]:
            if min(a.x1, b.x1) - max(a.x0, b.x0) > 0.5 and min(a.y1, b.y1) - max(a.y0, b.y0) > 0.5:
                problems.append(f"{first.get_text()!r} overlaps {second.get_text()!r}")
    for ax in figure.axes:
        title, panel = ax.title, ax.get_window_extent()
        if title.get_text() and ax.get_visible():
            box = title.get_window_extent()
            if box.x0 < panel.x0 - margin or box.x1 > panel.x1 + margin:
                problems.append(f"title {title.get_text()!r} is wider than its panel")
    return problems


@pytest.mark.parametrize("name", list(FIGURES))
def test_no_text_leaves_the_canvas_or_overlaps_another(figures, name):
    figure = figures[name].figure
    assert figure.dpi == 110  # the report's PNG resolution
    assert len(drawn_texts(figure)) > 10  # the check sees the figure's text
    assert text_problems(figure) == []


def test_the_text_check_finds_overlaps_and_text_off_the_canvas():
    from reports.figures import pyplot

    figure, ax = pyplot().subplots(figsize=(4, 3))
    ax.set_title("a title far wider than the panel it stands over, into the edge")
    ax.text(0.5, 0.5, "one", transform=ax.transAxes)
    ax.text(0.51, 0.5, "two", transform=ax.transAxes)
    ax.annotate("outside", (1, 0.5), xytext=(40, 0), xycoords="axes fraction",
                textcoords="offset points", annotation_clip=False)
    problems = text_problems(figure)
    assert any("'one' overlaps 'two'" in p for p in problems)
    assert any("'outside' leaves" in p for p in problems)
    assert any("is wider than its panel" in p for p in problems)
    pyplot().close(figure)


def test_gpu_labels_join_equal_capacities_and_name_the_capacity_once():
    from reports import series
    from reports.figures import gpu_labels

    labels = gpu_labels(series.gpus())
    assert list(labels) == sorted(labels)  # smallest first, as they are stacked
    assert labels[80 * 2**30] == "80 GiB: A100 PCIe, A100 SXM, H100 PCIe, H100 SXM5"
    assert labels[141 * 2**30] == "141 GiB: H200 SXM" and labels[24 * 2**30] == "24 GiB: RTX 4090"


# ---------------------------------------------------------------------------------------------
# The page in a browser


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture(scope="module")
def full_report_dir(tmp_path_factory, figures):
    """A report with every kind of figure: gpt2's without measurements, plus the
    formula-vs-measurement figure of the tiny models (the full-size runs are skipped)."""
    from reports import report as build
    from reports.series import load_model

    made = build.build([load_model("gpt2")], measure=False, progress=lambda message: None)
    validation = figures["validation"]
    if not validation.images:
        validation.render()
    made.made.append(validation)
    out = tmp_path_factory.mktemp("full") / "gpt2"
    build.write(made, out)
    return out


#: Run in the page after it loads: where each figure is drawn and at what size, and the page's
#: height (for a screenshot of the whole page).
LAYOUT_SCRIPT = """<script>
window.addEventListener("load", function () {
  var rows = [];
  for (var i = 0; i < document.images.length; i++) {
    var img = document.images[i], box = img.getBoundingClientRect();
    rows.push([img.closest("figure").previousElementSibling.id, box.left + img.clientLeft,
               box.top + img.clientTop + window.scrollY, img.clientWidth, img.clientHeight,
               img.naturalWidth, img.naturalHeight, img.parentElement.clientWidth].join(" "));
  }
  var out = document.createElement("pre");
  out.id = "layout";
  out.setAttribute("data-height", String(document.documentElement.scrollHeight));
  out.textContent = rows.join(";");
  document.body.appendChild(out);
});
</script>"""


def _run_chromium(args: list[str], page: str, **kwargs) -> subprocess.CompletedProcess:
    common = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
              "--no-first-run", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--disable-dev-shm-usage", "--hide-scrollbars",
              "--force-device-scale-factor=1"]
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([*common, f"--user-data-dir={profile}", *args, page],
                              capture_output=True, timeout=120, check=True, **kwargs)


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_page_renders_in_headless_chromium(full_report_dir, tmp_path):
    """Every figure loads and is painted whole, at the report's width, in a real browser."""
    from PIL import Image, ImageChops, ImageFilter, ImageStat

    html_text = (full_report_dir / "index.html").read_text()
    names = [m.split('"')[0] for m in html_text.split('<h2 id="')[1:] if "<figure>" in m]
    assert sorted(names) == sorted(["flops", "regimes", "memory-gpt2", "generation-gpt2", "params",
                                    "kv-cache", "validation"])
    page_file = full_report_dir / "layout.html"
    page_file.write_text(html_text.replace("</body>", LAYOUT_SCRIPT + "</body>"))
    page = page_file.resolve().as_uri()
    dom = _run_chromium(["--window-size=1280,2000", "--virtual-time-budget=10000", "--dump-dom"],
                        page, text=True).stdout
    check = dom.split('id="image-check"')[1].split(">")[0]
    assert 'data-loaded="7"' in check and 'data-total="7"' in check, check
    layout = dom.split('id="layout"')[1]
    height = int(layout.split('data-height="')[1].split('"')[0])
    rows = [row.split() for row in layout.split(">")[1].split("<")[0].split(";")]
    assert [row[0] for row in rows] == names
    shot = tmp_path / "shot.png"
    _run_chromium([f"--window-size=1280,{height}", f"--screenshot={shot}"], page)
    image = Image.open(shot).convert("RGB")
    assert image.size == (1280, height)
    assert max(ImageStat.Stat(image).stddev) > 20  # not a blank page
    for name, *numbers in rows:
        left, top, width, height_px, natural_width, natural_height, column = (
            round(float(v)) for v in numbers)
        # At the report's size: the PNG's own width, or shrunk to the text column, never cut.
        assert width == min(natural_width, column), name
        assert abs(height_px / width - natural_height / natural_width) < 0.01, name
        assert left >= 0 and left + width <= 1280 and top + height_px <= image.size[1], name
        # The browser's pixels against the PNG scaled alike, both blurred (the two scalers differ
        # on thin lines): a tenth of the PNG's distance from a blank box on the figures here; a
        # missing, cut or mirrored figure is as far as a blank box or farther.
        blur = ImageFilter.GaussianBlur(3)
        shown = image.crop((left, top, left + width, top + height_px)).filter(blur)
        drawn = Image.open(full_report_dir / "figures" / f"{name}.png").convert("RGB")
        drawn = drawn.resize((width, height_px), Image.Resampling.LANCZOS).filter(blur)
        blank = Image.new("RGB", shown.size, "white")
        difference = sum(ImageStat.Stat(ImageChops.difference(shown, drawn)).mean)
        against_blank = sum(ImageStat.Stat(ImageChops.difference(blank, drawn)).mean)
        assert difference < 0.3 * against_blank, (name, difference, against_blank)
