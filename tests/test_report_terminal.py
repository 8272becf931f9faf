"""Terminal report: status first, evidence in plain numbers, 80 columns, NO_COLOR, --quiet, markup-safe."""
from __future__ import annotations

import io
import re

import numpy as np
from rich.console import Console

from _report_fixtures import EVIL, diverging, flat, healthy, mixed, overfitting
from logdoctor.model import Diagnosis
from logdoctor.report.sparkline import BLOCKS, sparkline
from logdoctor.report.terminal import render_terminal, render_text
from logdoctor.report.text import evidence_items, evidence_text, fmt_num, md_code, md_escape, middle_ellipsis

ANSI = re.compile(r"\x1b\[")


def render(diagnosis, width=80, terminal=True, **kw) -> str:
    """What a terminal `width` columns wide shows (`terminal=False`: what a pipe or file gets)."""
    console = Console(file=io.StringIO(), width=width, no_color=True, color_system=None, force_terminal=terminal)
    render_terminal(diagnosis, console, **kw)
    return console.file.getvalue()


def test_numbers_read_like_a_person_wrote_them():
    from logdoctor.numbers import count

    assert (count(1, "run"), count(0, "run"), count(1040, "run")) == ("1 run", "0 runs", "1,040 runs")  # never '1 runs', 'run(s)'
    assert fmt_num(4000) == "4,000"
    assert fmt_num(4000.0) == "4,000"
    assert fmt_num(2.30123) == "2.301"
    assert fmt_num(-7e-7) == "-7e-7"
    assert fmt_num(3.2e9) == "3.2e9"
    assert fmt_num(float("nan")) == "NaN" and fmt_num(float("-inf")) == "-inf"
    assert fmt_num(True) == "yes"
    assert fmt_num(list(range(10))).endswith("(+4 more)")


def test_evidence_is_phrased_generically_from_its_keys():
    text = evidence_text({"loss_start": 2.301, "loss_end": 2.298, "slope_per_step": -7e-7, "p": 0.41})
    assert text == "loss level 2.301 → 2.298, slope -7e-7/step, p = 0.41"
    items = dict(evidence_items({"fraction_clipped": 0.973, "warmup_steps": 500, "spike_steps": [7499, 10799], "p_value": 0.003}))
    assert items == {"steps clipped": "97%", "warmup": "500 steps", "spikes at": "steps 7,499, 10,799", "trend": "p = 0.003"}
    # JSON-round-tripped non-finite values stay readable
    assert dict(evidence_items({"value": "inf"})) == {"value": "inf"}


def test_run_block_shows_status_evidence_cause_fix_and_sparkline():
    out = render(Diagnosis("runs/", [flat()]))
    lines = out.splitlines()
    assert lines[0].startswith("✖ CRITICAL  sweep/lr=1e-7/seed0")
    assert "loss level 2.301 → 2.298, slope -7e-7/step, p = 0.41" in out
    assert "steps 0–4,000" in out
    assert "cause: flat cause one" in out and "or: flat cause two" in out
    assert "flat cause three" not in out  # only the top causes in the terminal
    assert "fix:   flat fix:" in out
    spark = lines[1].split()[1]
    assert len(spark) == 24 and set(spark) <= set(BLOCKS)


def test_readable_at_80_columns_and_no_colour_codes():
    d = mixed()
    d.runs.append(healthy("a/very/long/run/name/" + "x" * 120))
    out = render(d, width=80)
    assert max(len(line) for line in out.splitlines()) <= 80
    assert not ANSI.search(out)


def test_summary_table_lists_runs_worst_first_and_the_counts_are_the_last_line():
    out = render(mixed())
    assert out.splitlines()[-1] == "5 runs: 2 critical, 2 warning, 1 healthy"
    table = out[re.search(r"^ *(status)? +run +findings", out, re.M).start():]
    order = [table.index(name) for name in ("sweep/lr=1.0/seed0", "sweep/lr=1e-7/seed0", "amp/fp16-run", "baseline/seed1")]
    assert order == sorted(order)


def test_no_summary_for_few_runs_and_quiet_is_one_line_per_problem_run_then_the_counts():
    d = Diagnosis("runs/", [healthy(), diverging()])
    assert "status" not in render(d).splitlines()[-2]
    quiet = render(mixed(), quiet=True).splitlines()
    assert len(quiet) == 5 and quiet[-1] == "5 runs: 2 critical, 2 warning, 1 healthy"
    assert re.match(r"✖ sweep/lr=1\.0/seed0 +diverge +Loss blows up and becomes NaN at step", quiet[0])
    assert len({line.index(" diverge ") if " diverge " in line else None for line in quiet[:2]} - {None}) <= 1  # columns
    assert not any("baseline/seed1" in line or "cause" in line for line in quiet)
    assert all(len(line) <= 80 for line in quiet)  # cut to the width, never wrapped


def test_info_findings_are_one_line_and_nan_shows_in_the_sparkline():
    out = render(Diagnosis("runs/", [overfitting(), diverging()]))
    assert "· spike — One small loss spike that recovered (height sigma 4.1)" in out
    diverge_line = next(line for line in out.splitlines() if line.strip().startswith("train/loss"))
    assert "×" in diverge_line and "→ NaN" in diverge_line


def test_log_strings_are_printed_verbatim_not_as_markup():
    rd = flat()
    rd.run.name = "[bold red]boom[/bold red] " + EVIL
    out = render(Diagnosis("runs/", [rd]))
    assert "[bold red]boom[/bold red] <script>" in out


def test_render_text_for_files_has_no_trailing_blanks_or_colour():
    text = render_text(mixed(), width=100, extra_sections=[("Audit", "**3/5** runs diverge with `lr >= 0.1`")])
    assert not ANSI.search(text)
    assert all(line == line.rstrip() for line in text.splitlines())
    assert "Audit" in text and "3/5 runs diverge" in text


def test_empty_diagnosis_says_so():
    assert "No training runs found under empty/." in render(Diagnosis("empty/", []))


def test_no_color_env_is_respected(monkeypatch):
    from logdoctor.cli import _console

    monkeypatch.setenv("NO_COLOR", "1")
    assert _console().no_color
    monkeypatch.delenv("NO_COLOR")
    assert not _console().no_color


def test_sparkline_shapes():
    from logdoctor.model import Series

    down = Series("l", np.arange(100), np.linspace(2, 1, 100))
    line = sparkline(down, 10)
    assert line[0] == "█" and line[-1] == "▁" and len(line) == 10
    assert sparkline(Series("c", np.arange(5), np.ones(5)), 10) == "▅" * 5  # constant: a flat middle line
    assert sparkline(None) == ""


def test_markdown_escaping_helpers():
    assert md_escape("a|b <x> *y*") == r"a\|b \<x\> \*y\*"
    assert md_code("a`b") == "``a`b``"


def test_long_run_names_keep_both_ends_in_narrow_tables():
    name = "lr_sweep_adamw_cosine/trial_0042/lightning_logs/version_3"
    short = middle_ellipsis(name, 24)
    assert len(short) == 24 and short.startswith("lr_swee") and short.endswith("version_3") and "…" in short
    assert middle_ellipsis("run_a", 24) == "run_a"


def test_sparkline_of_a_flat_noisy_loss_looks_flat():
    from logdoctor.model import Series

    rng = np.random.default_rng(0)
    flat_noisy = Series("l", np.arange(400), 4.577 + rng.normal(0, 0.004, 400))
    assert set(sparkline(flat_noisy, 24)) <= set("▄▅")
    falling = Series("l", np.arange(400), np.linspace(2.3, 0.2, 400))
    assert set(sparkline(falling, 24)) >= set("█▁")


SAMPLES = __import__("pathlib").Path(__file__).resolve().parent.parent / "sample_runs"


def test_real_sample_runs_fit_80_columns_without_trailing_blanks():
    """Healthy one-liners, long W&B/MLflow/Lightning names, info lines, the table: all within 80."""
    from typer.testing import CliRunner

    from logdoctor.cli import app

    out = CliRunner().invoke(app, ["analyze", str(SAMPLES)], env={"COLUMNS": "80", "NO_COLOR": "1"}).stdout
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert all(line == line.rstrip() for line in lines)
    assert "mlruns/947427902577955505" not in out and "lightning_logs" not in out  # writer boilerplate dropped
    assert not re.search(r", steps\n", out)  # the sparkline shrinks before a glance line wraps
    assert lines[-1] == "52 runs: " + lines[-1].split(": ", 1)[1] and "critical" in lines[-1]
    # every code's causes and fix once: the report stays readable in a few screens
    assert out.count("cause: ") < len(re.findall(r"^  \d+\. ", out, re.M)) / 2


def test_piped_cli_output_has_no_padding(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1"}
    out = subprocess.run([sys.executable, "-m", "logdoctor", "analyze", str(SAMPLES / "pl_clip_charlm_sgd")], capture_output=True, text=True, env=env).stdout
    assert out.strip() and all(line == line.rstrip() and len(line) <= 80 for line in out.splitlines())


def test_wrapped_lines_hang_under_their_label():
    rd = flat()
    rd.findings[0].causes[0] = "a long cause " * 12
    lines = render(Diagnosis("runs/", [rd]), width=60).splitlines()
    at = next(i for i, line in enumerate(lines) if "cause:" in line)
    column = lines[at].index("a long")
    assert lines[at + 1].startswith(" " * column) and lines[at + 1][column] != " "


def test_runs_come_worst_first_in_blocks_and_table_alike():
    out = render(mixed(), width=100)
    blocks = [line.split("  ")[1] for line in out.splitlines() if line[:1] in "✖▲✓" and "  [" in line]
    table = out[re.search(r"^ *(status)? +run +findings", out, re.M).start():]
    assert blocks == sorted(blocks, key=table.index)
    assert blocks[0] == "sweep/lr=1.0/seed0" and blocks[-1] == "baseline/seed1"


def test_evidence_keeps_the_first_items_and_counts_the_rest():
    rd = flat()
    rd.findings[0].evidence = {f"item_{i}": i for i in range(10)}
    out = render(Diagnosis("runs/", [rd]), width=120)
    assert "item 5 5" in out and "item 6" not in out and "(+4 more: -v)" in out
    assert "item 8 8" in render(Diagnosis("runs/", [rd]), width=120, verbose=True)


def test_quiet_on_an_all_healthy_input_says_so_in_one_line():
    out = render(Diagnosis("runs/", [healthy("a"), healthy("b")]), quiet=True)
    assert out.strip() == "2 runs: all healthy"


def test_glance_numbers_are_labelled_as_logged_points():
    """The glance shows raw first/last points; a finding's evidence may quote smoothed levels."""
    out = render(Diagnosis("runs/", [flat()]))
    assert "logged 2.3" in out.splitlines()[1]


def test_a_code_s_causes_and_fix_are_printed_once_unless_verbose():
    first, second = flat(), flat()
    second.run.name = "sweep/lr=1e-7/seed1"
    d = Diagnosis("runs/", [first, second])
    out = render(d, width=100)
    assert out.count("cause: flat cause one") == 1 and out.count("fix:   flat fix") == 1
    assert "cause, fix: as above (logdoctor explain flat)" in out
    assert out.count("probe: update_ratio (logdoctor replay)") == 1
    verbose = render(d, width=100, verbose=True)
    assert verbose.count("cause: flat cause one") == 2 and "flat cause three" in verbose  # every cause
    second.findings[0].causes = ["confirmed by probe lr_range: a different first cause"]
    assert "cause: confirmed by probe lr_range" in render(d, width=100)  # a run's own causes are shown


def test_every_finding_points_to_its_documentation():
    out = render(mixed(), width=100)
    for code in ("diverge", "flat", "scaler_collapse"):
        assert f"logdoctor explain {code}" in out
    assert "Confirm with replay" not in out  # the probe has a line of its own


def test_summary_names_are_cut_so_that_they_stay_distinct():
    d = Diagnosis("runs/", [healthy(f"learning_rate_sweep_adamw_cosine_trial_{i:04d}_seed_{i % 3}") for i in range(4)])
    table = render(d, width=60).splitlines()[-5:-1]
    names = [line.split()[1] for line in table]
    assert len(set(names)) == 4 and all("…" in n for n in names)


def test_piped_nothing_is_cut_so_grep_finds_every_run_and_headline():
    """`analyze runs -q | grep NAME` missed runs whose names were cut to 80 columns with `…`
    although no terminal was attached (ruff and pytest never cut what they do not draw)."""
    long = [healthy(f"learning_rate_sweep_adamw_cosine_trial_{i:04d}_seed_{i % 3}") for i in range(4)]
    d = Diagnosis("runs/", [*long, *mixed().runs])
    for quiet in (True, False):
        out = render(d, width=60, terminal=False, quiet=quiet)
        assert "…" not in out
        for rd in d.runs:
            if quiet and rd.status == "healthy":
                continue
            line = next(line for line in out.splitlines() if rd.run.name in line)
            assert not quiet or rd.findings[0].title in line


def test_evidence_reads_as_named_quantities_with_units():
    ev = {
        "val_best": 2.919, "val_best_step": 39, "val_end": 5.368, "val_relative_change": 0.839,
        "max_robust_z": 2058.0, "split_half_r": 0.7325, "fraction_clipped": 1.0,
        "slope_per_1k_steps": -1.154, "p_value": 1.4e-7, "spike_steps": [200, 1032],
    }
    text = evidence_text(ev)
    assert "validation from its best 2.919 → 5.368, best val at step 39, validation change from its best +84%" in text
    assert evidence_text({"median_ratio": 70.62}, "clip_saturation") == "median norm / threshold 70.62×"  # a rule's own key
    for phrase in ("largest spike 2,058× the noise", "pattern repeat r 0.73", "steps clipped 100%",
                   "slope -1.154 per 1k steps", "trend p = 1.4e-7", "spikes at steps 200, 1,032"):
        assert phrase in text
    assert evidence_text({"floor_at_fraction": 0.0004}) == "floor reached at 0.04%"  # never "0.0%" for a value that is not 0


def test_every_evidence_key_the_rules_report_on_the_bundled_runs_has_words_and_docs():
    """A new evidence key needs a name, a unit and a meaning in report/evidence.py (docs/json.md lists them)."""
    from logdoctor.diagnose import analyze
    from logdoctor.report.evidence import TERMS, term

    used = {(f.code, key) for rd in analyze(SAMPLES).runs for f in rd.findings for key in f.evidence}
    assert {key for code, key in used if term(key, code) is None} == set()
    docs = (SAMPLES.parent / "docs" / "json.md").read_text()
    assert [key for key in TERMS if f"`{key.split('.')[-1]}`" not in docs] == []


def test_the_did_it_learn_judgement_is_said_by_the_headline_not_repeated_as_evidence():
    """'learned no, why validation never got below…' after a headline that says just that is noise:
    the keys stay in JSON, the evidence line shows the numbers only."""
    line = evidence_text({"learned": False, "reason": "validation never got below its first evaluation", "loss_best": 0.0265})
    assert line == "best loss level 0.0265"


def test_headlines_and_evidence_of_the_bundled_runs_share_one_number_style():
    """One report said `3.277e+04` beside `32,768`, `1032` beside `1,032`, `70.6x` beside `70.62×`,
    `->` beside `→`: every headline and evidence line now goes through numbers.fmt_num."""
    from logdoctor.diagnose import analyze
    from logdoctor.report.terminal import evidence_line

    lines = [text for rd in analyze(SAMPLES).runs for f in rd.findings for text in (f.title, evidence_line(f, None))]
    styles = {
        "python exponent": r"\d[eE][+-]?0\d|e\+",
        "thousands without separator": r"(?<![\w.,])\d{4,}(?![\d,.])",
        "ratio with x": r"\d(\.\d+)?x\b",
        "ascii arrow": r"->",
        "plural in parentheses": r"\(s\)",
    }
    found = {name: [t for t in lines if re.search(pattern, t)] for name, pattern in styles.items()}
    assert {name: hits[:3] for name, hits in found.items() if hits} == {}
