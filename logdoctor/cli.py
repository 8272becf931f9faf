"""Command-line interface (typer). Thin: parse options, call the library, render.

Heavy modules (scipy, matplotlib, torch) are imported inside the commands that
need them so `logdoctor --help` starts fast.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="logdoctor: diagnose ML training runs from the logs they already wrote.",
    pretty_exceptions_enable=False,
)


class OutputFormat(str, Enum):
    terminal = "terminal"
    json = "json"
    md = "md"
    html = "html"


class FailOn(str, Enum):
    critical = "critical"
    warning = "warning"
    never = "never"


class Device(str, Enum):
    auto = "auto"
    cuda = "cuda"
    cpu = "cpu"


#: Replay options shared by `replay` and `analyze --replay` (help texts in one place).
_MODEL_HELP = "Model for dynamic probes: module:factory, path/to/file.py:factory, or a torch.export .pt2."
_BATCH_HELP = "One batch for dynamic probes: a .pt file with (inputs, targets) or a dict with input/target keys."
_DATA_HELP = "Instead of --batch: module:fn returning a batch or an iterable of batches."
_LOSS_HELP = "Loss: cross_entropy, nll, mse, l1, smooth_l1, bce, or module:fn (default: from the targets)."
_TRUST_HELP = "Allow full unpickling of the checkpoint (runs code in it): only for files you trust."


def flag(*names: str, help: str):  # noqa: A002 - typer's own keyword
    """An on/off option, shown in --help without a `<bool>` value it does not take."""
    return typer.Option(False, *names, help=help, metavar="")


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, no_color=bool(os.environ.get("NO_COLOR")), highlight=False)


def fail(message: str) -> "typer.Exit":
    """Print one clear line on stderr and return the exit (code 2) to raise."""
    print(f"logdoctor: {message}", file=sys.stderr)
    return typer.Exit(code=2)


def _load_config(config_file: Optional[Path], path: Path, select: Optional[str], ignore: Optional[str]):
    from .config import ConfigError, check_rules, load_config, unknown_codes
    from .replay import PROBE_CODES
    from .rules import all_rules

    rules = all_rules()
    known = set(rules) | set(PROBE_CODES)  # probes are switched on and off like rules
    try:
        config = load_config(config_file, start=path if path.exists() else None)
        if config.rules or config.select or config.ignore:
            thresholds, complete = _threshold_catalogue(rules, set(config.rules) - set(rules))
            check_rules(config, thresholds, known, complete)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    split = lambda s: [x.strip() for x in s.split(",") if x.strip()] if s else None  # noqa: E731
    for code in unknown_codes((split(select) or []) + (split(ignore) or []), known):
        raise fail(f"unknown rule code '{code}' (see `logdoctor rules`)")
    return config.merged(split(select), split(ignore))


def _rules_only(config):
    """The config log rules see: a select list naming only probes leaves every rule on (see
    replay.runner.probe_enabled, the other half)."""
    from dataclasses import replace

    from .replay import PROBE_CODES

    if not config.select:
        return config
    return replace(config, select=[c for c in config.select if c not in PROBE_CODES] or None)


def _threshold_catalogue(rules: dict, others: set[str]) -> tuple[dict[str, dict], bool]:
    """Code -> default thresholds of every rule, plus every replay probe when a `[rules.<code>]`
    table names a code that is no rule (the probe catalogue loads PyTorch: imported only then).
    The flag says whether the catalogue is complete: without PyTorch a probe's table cannot be
    checked, and only replay, which needs PyTorch, reads it."""
    catalogue = {code: cls.defaults for code, cls in rules.items()}
    if not others:
        return catalogue, True
    try:
        from .replay.catalogue import all_probes
    except ImportError:
        return catalogue, False
    catalogue.update({code: cls.defaults for code, cls in all_probes().items()})
    return catalogue, True


def exit_code(statuses: list[str], fail_on: FailOn) -> int:
    """1 when any run is at or above the --fail-on level, else 0."""
    if fail_on == FailOn.never:
        return 0
    levels = {"critical"} if fail_on == FailOn.critical else {"critical", "warning"}
    return 1 if any(s in levels for s in statuses) else 0


@app.command()
def analyze(
    path: Path = typer.Argument(..., help="A run folder, a log file, or a folder of many runs."),
    fmt: OutputFormat = typer.Option(OutputFormat.terminal, "--format", "-f", help="Report format."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report here (default: stdout)."),
    select: Optional[str] = typer.Option(None, help="Only these rule codes (comma-separated)."),
    ignore: Optional[str] = typer.Option(None, help="Skip these rule codes (comma-separated)."),
    config_file: Optional[Path] = typer.Option(None, "--config", help="A logdoctor.toml or pyproject.toml."),
    fail_on: FailOn = typer.Option(FailOn.never, "--fail-on", help="Exit 1 when a run is at or above this status."),
    quiet: bool = flag("--quiet", "-q", help="Only problems: skip healthy runs and progress."),
    no_plots: bool = flag("--no-plots", help="Markdown/HTML without plots."),
    replay_ckpt: Optional[Path] = typer.Option(None, "--replay", help="Also probe this checkpoint and merge the results into its run's diagnosis."),
    model: Optional[str] = typer.Option(None, "--model", help=_MODEL_HELP),
    batch: Optional[Path] = typer.Option(None, "--batch", help=_BATCH_HELP),
    data: Optional[str] = typer.Option(None, "--data", help=_DATA_HELP),
    loss: Optional[str] = typer.Option(None, "--loss", help=_LOSS_HELP),
    device: Device = typer.Option(Device.auto, "--device", help="Where dynamic probes run."),
    trust_checkpoint: bool = flag("--trust-checkpoint", help=_TRUST_HELP),
) -> None:
    """Diagnose every training run under PATH."""
    from .diagnose import analyze as run_analysis
    from .ingest import ReadError

    if replay_ckpt is None and (model or batch or data or loss or trust_checkpoint):
        raise fail("--model/--batch/--data/--loss/--trust-checkpoint only apply together with --replay CKPT")
    config = _load_config(config_file, path, select, ignore)
    _require_output_folder(output)
    try:
        with _progress("diagnosing", enabled=not quiet) as progress:
            diagnosis = run_analysis(path, _rules_only(config), progress=progress)
    except ReadError as exc:
        raise fail(str(exc)) from None
    _print_skipped(diagnosis.errors)
    if not diagnosis.runs:
        raise _nothing_read(path, diagnosis.errors)
    if replay_ckpt is not None:
        from rich.markup import escape

        from .replay import ReplayError
        from .replay.command import merge_into

        opts = dict(model=model, batch=batch and str(batch), data=data, loss=loss, device=device.value, trust=trust_checkpoint, config=config)
        try:
            result = merge_into(diagnosis, replay_ckpt, **opts)
        except ReplayError as exc:
            raise fail(str(exc)) from None
        if not quiet:
            _console(stderr=True).print(escape(result.summary()), highlight=False)
    _emit(diagnosis, fmt, output, quiet, no_plots)
    raise typer.Exit(exit_code([rd.status for rd in diagnosis.runs], fail_on))


@app.command()
def replay(
    checkpoint: Path = typer.Argument(..., help="A checkpoint (.pt, .pth, .ckpt, .bin, .safetensors) or an HF checkpoint-N/ folder."),
    model: Optional[str] = typer.Option(None, "--model", help=_MODEL_HELP),
    batch: Optional[Path] = typer.Option(None, "--batch", help=_BATCH_HELP),
    data: Optional[str] = typer.Option(None, "--data", help=_DATA_HELP),
    loss: Optional[str] = typer.Option(None, "--loss", help=_LOSS_HELP),
    device: Device = typer.Option(Device.auto, "--device", help="Where dynamic probes run."),
    trust_checkpoint: bool = flag("--trust-checkpoint", help=_TRUST_HELP),
    fmt: OutputFormat = typer.Option(OutputFormat.terminal, "--format", "-f", help="Report format."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report here (default: stdout)."),
    config_file: Optional[Path] = typer.Option(None, "--config", help="A logdoctor.toml or pyproject.toml (probe thresholds)."),
    fail_on: FailOn = typer.Option(FailOn.never, "--fail-on", help="Exit 1 when a finding is at or above this level."),
    quiet: bool = flag("--quiet", "-q", help="No probe summary on stderr."),
    select: Optional[str] = typer.Option(None, help="Only these probe codes (comma-separated)."),
    ignore: Optional[str] = typer.Option(None, help="Skip these probe codes (comma-separated)."),
) -> None:
    """Probe a PyTorch checkpoint: static checks alone, dynamic ones with --model and --batch/--data."""
    from rich.markup import escape

    from .replay import ReplayError
    from .replay.command import run

    config = _load_config(config_file, checkpoint, select, ignore)
    opts = dict(model=model, batch=batch and str(batch), data=data, loss=loss, device=device.value, trust=trust_checkpoint, config=config)
    try:
        result = run(checkpoint, **opts)
    except ReplayError as exc:
        raise fail(str(exc)) from None
    if not quiet:
        _console(stderr=True).print(escape(result.summary()), highlight=False)
    diagnosis = result.diagnosis()
    _emit(diagnosis, fmt, output, False, True)
    raise typer.Exit(exit_code([rd.status for rd in diagnosis.runs], fail_on))


@contextmanager
def _progress(description: str, enabled: bool = True):
    """A transient progress bar on stderr; yields a `(done, total)` callback, or None off a terminal."""
    err = _console(stderr=True)
    if not enabled or not err.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(description, total=None)
        yield lambda done, total: bar.update(task, completed=done, total=total)


def _require_output_folder(output: Optional[Path]) -> None:
    """-o into a folder that does not exist: one line, checked before any run is read or plot
    drawn (a long sweep must not be read only to fail at the end), the same for every format."""
    if output is not None and not output.parent.is_dir():
        raise fail(f"{output}: cannot write report (no folder {output.parent})")


def _print_skipped(errors: list[str]) -> None:
    """One `skipped:` line on stderr per source that could not be used (never silently dropped)."""
    from rich.markup import escape

    err = _console(stderr=True)
    for line in errors:
        err.print(f"[yellow]skipped:[/] {escape(line)}", highlight=False, markup=True, soft_wrap=True)


def _nothing_read(path: Path, errors: list[str]) -> "typer.Exit":
    """Nothing to diagnose is an input error (exit 2), not a clean bill of health."""
    return fail(f"{path}: {'no usable training log' if errors else 'no training log found'}")


def _emit(
    diagnosis, fmt: OutputFormat, output: Optional[Path], quiet: bool, no_plots: bool, extra=None, sections=None
) -> None:
    """Render in the chosen format to stdout or a file.

    `extra` adds top-level keys to the JSON document (e.g. `audit`); `sections`
    is a list of `(title, markdown)` shown by the terminal, Markdown and HTML
    reports after their header (the audit summary).
    """
    _require_output_folder(output)
    if fmt == OutputFormat.json:
        from .report.json_report import render_json

        _write(render_json(diagnosis, extra), output)
    elif fmt == OutputFormat.terminal:
        from .report.terminal import render_terminal, render_text

        if output:
            _write(render_text(diagnosis, quiet=quiet, extra_sections=sections), output)
        else:
            render_terminal(diagnosis, _console(), quiet=quiet, extra_sections=sections)
    elif fmt == OutputFormat.md:
        from .report.markdown import render_markdown

        plots_dir = None
        if output and not no_plots:
            plots_dir = output.parent / f"{output.stem}_plots"
        elif not no_plots and not quiet:
            _console(stderr=True).print("note: Markdown on stdout has no plots; use -o report.md to write them")
        with _progress("plotting", enabled=not quiet and plots_dir is not None) as progress:
            try:
                text = render_markdown(diagnosis, extra_sections=sections, plots_dir=plots_dir, progress=progress)
            except OSError as exc:
                raise fail(f"{plots_dir}: cannot write plots ({exc.strerror})") from None
        _write(text, output)
    elif fmt == OutputFormat.html:
        from .report.html import render_html

        with _progress("plotting", enabled=not quiet and not no_plots) as progress:
            _write(render_html(diagnosis, extra_sections=sections, plots=not no_plots, progress=progress), output)


def _write(text: str, output: Optional[Path]) -> None:
    if output is None:
        sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise fail(f"{output}: cannot write report ({exc.strerror})") from None


class RankBy(str, Enum):
    final = "final"
    best = "best"


@app.command()
def audit(
    path: str = typer.Argument(..., help="A sweep folder (or an fsspec URL such as s3://bucket/sweep)."),
    fmt: OutputFormat = typer.Option(OutputFormat.terminal, "--format", "-f", help="Report format."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report here (default: stdout)."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes (default: one per core)."),
    scheduler: Optional[str] = typer.Option(None, help="Run on a Dask cluster: its scheduler, tcp://host:port."),
    cache_dir: Optional[Path] = typer.Option(None, help="Cache folder (default: .logdoctor-cache/ in PATH)."),
    no_cache: bool = flag("--no-cache", help="Re-read every run; neither use nor write the cache."),
    rank_by: RankBy = typer.Option(RankBy.final, help="Best run by final or best validation loss."),
    details: bool = flag("--details", help="Terminal: also print every run's findings."),
    select: Optional[str] = typer.Option(None, help="Only these rule codes (comma-separated)."),
    ignore: Optional[str] = typer.Option(None, help="Skip these rule codes (comma-separated)."),
    config_file: Optional[Path] = typer.Option(None, "--config", help="A logdoctor.toml or pyproject.toml."),
    fail_on: FailOn = typer.Option(FailOn.never, "--fail-on", help="Exit 1 when a run is at or above this status."),
    quiet: bool = flag("--quiet", "-q", help="Only problems: skip healthy runs and progress."),
) -> None:
    """Triage a sweep: diagnose every run in parallel, summarise, link failures to hyperparameters.

    Reports carry no plots (workers send back findings, not curves); `logdoctor
    analyze RUN` draws them for a run of interest.
    """
    from .audit import audit as run_audit
    from .audit.executor import SchedulerError
    from .audit.render import print_terminal, sections
    from .ingest import ReadError

    config = _rules_only(_load_config(config_file, Path(path), select, ignore))
    _require_output_folder(output)
    try:
        with _progress("auditing", enabled=not quiet) as progress:
            report = run_audit(
                path, config, jobs=jobs, scheduler=scheduler, cache_dir=cache_dir,
                use_cache=not no_cache, rank_by=rank_by.value, progress=progress,
            )
    except (ReadError, SchedulerError) as exc:
        raise fail(str(exc)) from None
    if not report.results:
        _print_skipped(report.errors)
        raise _nothing_read(path, report.errors)
    if fmt == OutputFormat.terminal and not details:
        if output:
            _write(_audit_text(report, quiet), output)
        else:
            print_terminal(_console(), report, quiet)
    else:
        _emit(report.diagnosis(), fmt, output, quiet, True, extra={"audit": report.to_json()}, sections=sections(report, quiet))
    raise typer.Exit(exit_code([r.status for r in report.results], fail_on))


def _audit_text(report, quiet: bool) -> str:
    """The terminal audit summary as plain text, for -o (written by _write: one error line on failure)."""
    import io

    from rich.console import Console

    from .audit.render import print_terminal

    buffer = io.StringIO()
    print_terminal(Console(file=buffer, no_color=True, width=120), report, quiet)
    return buffer.getvalue()


@app.command()
def inspect(
    path: Path = typer.Argument(..., help="A run folder, a log file, or a folder of many runs."),
    config_file: Optional[Path] = typer.Option(None, "--config", help="A logdoctor.toml or pyproject.toml."),
) -> None:
    """List the runs found, their format, metrics, step ranges and roles."""
    from .ingest import ReadError, load_runs
    from .report.inspect_report import render_inspect

    config = _load_config(config_file, path, None, None)
    try:
        runs, errors = load_runs(path)
    except ReadError as exc:
        raise fail(str(exc)) from None
    render_inspect(runs, errors, config, _console())


@app.command()
def rules() -> None:
    """List every rule (code, severity, one-line summary), then the replay probes' codes."""
    from rich.table import Table

    from .rules import all_rules

    from .replay import PROBE_CODES

    table = Table("code", "severity", "what it detects", box=None)
    for code, cls in all_rules().items():
        table.add_row(code, cls.severity, cls.summary())
    console = _console()
    console.print(table)
    # the probes' own summaries live in modules that import PyTorch: their codes are enough here
    console.print(f"\nreplay probes (logdoctor replay; `logdoctor explain CODE`): {', '.join(PROBE_CODES)}", highlight=False)


@app.command()
def explain(code: str = typer.Argument(..., help="A rule code, e.g. crawl.")) -> None:
    """Print a rule's documentation: symptom, causes, fix, probe, thresholds."""
    from .rules import all_rules
    from .ruledocs import rule_markdown

    cls = all_rules().get(code)
    if cls is None:
        from .replay.command import probe_class

        cls = probe_class(code)
    if cls is None:
        raise fail(f"unknown rule or replay probe code '{code}' (see `logdoctor rules`)")
    from rich.markdown import Markdown

    _console().print(Markdown(rule_markdown(cls)))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
