"""Markdown report: GFM, same content as the terminal, PNG plots beside it, log strings escaped."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from _report_fixtures import EVIL, evil, flat, healthy, mixed
from logdoctor.cli import app
from logdoctor.model import Diagnosis
from logdoctor.report.markdown import render_markdown

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)]+)\)")


def test_plots_are_written_beside_the_report_and_linked(tmp_path):
    plots = tmp_path / "report_plots"
    text = render_markdown(mixed(), plots_dir=plots)
    links = IMAGE.findall(text)
    assert len(links) == 5
    for link in links:
        png = (tmp_path / link).read_bytes()
        assert png.startswith(PNG_MAGIC) and len(png) > 5000


def test_same_content_as_the_terminal_report():
    text = render_markdown(Diagnosis("runs/", [flat()]))
    assert "### 🔴 CRITICAL · sweep/lr=1e-7/seed0" in text
    assert "`flat`" in text and "confidence 0.93" in text
    assert "- **where:** `loss`, steps 0–4,000" in text
    assert "loss level **2.301 → 2.298**, slope **-7e-7/step**, p **0.41**" in text
    assert "  1. flat cause one" in text and "  3. flat cause three" in text  # every cause, ranked
    assert "- **confirm with replay:** update\\_ratio" in text and "Confirm with replay" not in text
    assert "- **docs:** `logdoctor explain flat`" in text
    assert "![" not in text  # no plots without a plots_dir


def test_summary_table_is_worst_first_and_links_to_sections():
    text = render_markdown(mixed())
    rows = [line for line in text.splitlines() if line.startswith("| ") and "](#run-" in line]
    assert len(rows) == 5
    assert [r.split("|")[1].split()[-1] for r in rows] == ["critical", "critical", "warning", "warning", "healthy"]
    for anchor in re.findall(r"\(#(run-\d+)\)", text):
        assert f'<a id="{anchor}"></a>' in text


def test_log_strings_cannot_inject_markup_or_break_the_table():
    d = mixed()
    bad = evil()
    bad.run.name = EVIL + " | col"
    d.runs.append(bad)
    text = render_markdown(d)
    prose = re.sub(r"(`+).*?\1", "", text)  # code spans show their content verbatim: safe
    assert EVIL not in prose
    assert "\\<script\\>" in prose and "`/runs/<script>alert(1)</script>`" in text
    row = next(line for line in text.splitlines() if "](#run-6)" in line)
    assert len(re.findall(r"(?<!\\)\|", row)) == 6  # 5 columns: the run's own '|' is escaped


def test_extra_sections_come_after_the_header():
    text = render_markdown(mixed(), extra_sections=[("Audit", "diverge in **8/8** runs with lr >= 0.003")])
    assert text.index("## Audit") < text.index("## Summary")
    assert "diverge in **8/8** runs" in text


def test_cli_md_writes_report_and_plots(tmp_path):
    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True)
    steps = np.arange(0, 2000, 10)
    loss = 2.3 * np.exp(-steps / 400) + 0.1
    (run / "metrics.csv").write_text("step,train_loss\n" + "".join(f"{s},{v}\n" for s, v in zip(steps, loss)))
    out = tmp_path / "report.md"
    result = CliRunner().invoke(app, ["analyze", str(tmp_path / "runs"), "--format", "md", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "report_plots").is_dir()
    for link in IMAGE.findall(out.read_text()):
        assert (tmp_path / link).read_bytes().startswith(PNG_MAGIC)
    out2 = tmp_path / "bare.md"
    result = CliRunner().invoke(app, ["analyze", str(tmp_path / "runs"), "--format", "md", "-o", str(out2), "--no-plots"])
    assert result.exit_code == 0 and not IMAGE.search(out2.read_text())
    assert not (tmp_path / "bare_plots").exists()


def test_unwritable_plots_folder_is_one_line_exit_2(tmp_path):
    run = tmp_path / "runs" / "a"
    run.mkdir(parents=True)
    (run / "metrics.csv").write_text("step,train_loss\n" + "".join(f"{s},{2.0 / (s + 1)}\n" for s in range(50)))
    (tmp_path / "r_plots").write_text("a file where the plots folder should go")
    result = CliRunner().invoke(app, ["analyze", str(tmp_path / "runs"), "-f", "md", "-o", str(tmp_path / "r.md")])
    assert result.exit_code == 2
    assert "Traceback" not in result.output and "cannot write plots" in result.output


def test_empty_diagnosis(tmp_path: Path):
    assert "No training runs found under `nothing/`." in render_markdown(Diagnosis("nothing/", []), plots_dir=tmp_path / "p")


def test_sections_come_worst_first_like_the_summary_table():
    text = render_markdown(mixed())
    headings = [line.split(" · ", 1)[1] for line in text.splitlines() if line.startswith("### ")]
    rows = [re.search(r"\[(.+?)\]\(#run-", line).group(1) for line in text.splitlines() if "](#run-" in line]
    assert headings == [r.replace("\\", "") for r in rows]


def test_a_rerun_replaces_its_own_plots_and_leaves_other_files_alone(tmp_path):
    """A re-run deletes what the previous report listed in its manifest, nothing else: a user's
    file named like one of ours (`2024-curves.png`) stays."""
    plots = tmp_path / "report_plots"
    plots.mkdir()
    (plots / "notes.png").write_bytes(PNG_MAGIC)
    (plots / "2024-curves.png").write_bytes(PNG_MAGIC)
    first = render_markdown(Diagnosis("runs/", [flat(), healthy("b"), healthy("c")]), plots_dir=plots)
    assert len(IMAGE.findall(first)) == 3
    text = render_markdown(Diagnosis("runs/", [flat()]), plots_dir=plots)
    pngs = sorted(p.name for p in plots.glob("*.png"))
    assert pngs == sorted([IMAGE.findall(text)[0].split("/")[-1], "notes.png", "2024-curves.png"])


@pytest.mark.parametrize("fmt", ["md", "html", "json", "terminal"])
def test_a_missing_output_folder_is_one_line_exit_2_in_every_format(tmp_path, fmt):
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.csv").write_text("step,train_loss\n" + "".join(f"{s},{2.0 / (s + 1)}\n" for s in range(50)))
    result = CliRunner().invoke(app, ["analyze", str(run), "-f", fmt, "-o", str(tmp_path / "no" / "such" / "r.out")])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "no").exists()


def test_on_off_options_show_no_value_in_help():
    result = CliRunner().invoke(app, ["analyze", "--help"], env={"COLUMNS": "120"})
    ours = [line for line in result.stdout.splitlines() if any(f in line for f in ("--quiet", "--no-plots", "--trust-checkpoint"))]
    assert len(ours) == 3 and not any("<bool>" in line for line in ours)


SAMPLES = Path(__file__).resolve().parents[1] / "sample_runs"


@pytest.mark.skipif(not any(SAMPLES.glob("*")), reason="sample_runs/ is empty")
def test_the_bundled_runs_report_fits_one_github_comment():
    """The README sells the Markdown report for pasting into an issue or PR; GitHub refuses a comment
    over 65,536 characters and the 52 bundled runs made 74,384. A code's causes and fixes now come
    once and are linked after; -q drops the healthy runs' sections."""
    from logdoctor.diagnose import analyze
    from logdoctor.report.text import by_severity, md_escape, slug

    diagnosis = analyze(SAMPLES)
    ordered = by_severity(diagnosis.runs)
    # the image line each run's section gets when plots are written beside `r.md`
    images = sum(len(f"![loss and findings of {md_escape(rd.run.name)}](r_plots/{i:04d}-{slug(rd.run.name)}.png)\n\n")
                 for i, rd in enumerate(ordered, 1))
    full = render_markdown(diagnosis)
    assert len(full) + images <= 65_536
    quiet = render_markdown(diagnosis, quiet=True)
    assert len(quiet) < len(full) and "No problem found." not in quiet
    assert all(rd.run.name.replace("_", "\\_") in quiet for rd in diagnosis.runs)  # every run is still in the table
    assert "as for [" in full and "as for [" not in render_markdown(diagnosis, verbose=True)
