"""Command-line interface (typer). Thin: parse options, call the library, render.

Heavy modules (scipy, matplotlib, torch) are imported inside the commands that
need them so `logdoctor --help` starts fast.
"""
from __future__ import annotations

import json
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="logdoctor: diagnose ML training runs from the logs they already wrote.",
    pretty_exceptions_enable=False,
    # plain click help: wrapped at word boundaries, no boxes padded with trailing blanks
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from . import __version__

        print(f"logdoctor {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """logdoctor: diagnose ML training runs from the logs they already wrote."""


class OutputFormat(str, Enum):
    terminal = "terminal"
    json = "json"
    md = "md"
    html = "html"
    #: GitHub Actions workflow commands (`::error file=…::…`): a failing check points at the run.
    github = "github"


class ListFormat(str, Enum):
    terminal = "terminal"
    json = "json"


#: Report format named by the -o file's extension; a plain-text one (or none) is the terminal report as text.
_BY_EXTENSION = {".json": OutputFormat.json, ".md": OutputFormat.md, ".markdown": OutputFormat.md, ".html": OutputFormat.html, ".htm": OutputFormat.html}
_TEXT_EXTENSIONS = ("", ".txt", ".text", ".log", ".out")
_FORMAT_HELP = "Report format (default: from the -o file's extension, else terminal)."
_OUTPUT_HELP = "Write the report to this file; .html, .md, .json or .txt pick the format."


def report_format(fmt: Optional[OutputFormat], output: Optional[Path]) -> OutputFormat:
    """The format asked for, else the one the -o extension names, else the terminal report;
    a -f that contradicts the extension (`-f md -o out.html`) is a usage error, and so is an
    extension no format writes (`-o out.pdf` wrote terminal text under a PDF's name)."""
    suffix = output.suffix.lower() if output is not None else ""
    implied = _BY_EXTENSION.get(suffix)
    if fmt is None and implied is None and suffix not in _TEXT_EXTENSIONS:
        raise fail(f"{output}: no report format writes {suffix} files; name it .html, .md, .json or .txt, or pick a format with -f")
    if fmt is not None and implied is not None and fmt != implied:
        raise fail(f"{output}: -f {fmt.value} writes {fmt.value}, not {implied.value}; drop -f or rename the file")
    return fmt or implied or OutputFormat.terminal


class FailOn(str, Enum):
    critical = "critical"
    warning = "warning"
    never = "never"


class Device(str, Enum):
    auto = "auto"
    cuda = "cuda"
    cpu = "cpu"


#: Replay options shared by `replay` and `analyze --replay` (help texts in one place).
_MODEL_HELP = "Model for dynamic probes: hf (from the folder's config.json), timm[:NAME], module:factory or module:LightningClass (built from the saved hyperparameters), path/to/file.py:factory, or a torch.export .pt2."
_BATCH_HELP = "One batch for dynamic probes: a .pt file with (inputs, targets, ...) or a dict / BatchEncoding with a target key such as labels."
_DATA_HELP = "Instead of --batch: module:fn returning a batch or an iterable of batches."
_LOSS_HELP = "Loss: cross_entropy, nll, mse, l1, smooth_l1, bce, or module:fn (default: from the targets)."
_TRUST_HELP = "Allow full unpickling of the checkpoint (runs code in it): only for files you trust."


def flag(*names: str, help: str):  # noqa: A002 - typer's own keyword
    """An on/off option, shown in --help without a `<bool>` value it does not take."""
    return typer.Option(False, *names, help=help, metavar="")


def _console(stderr: bool = False):
    from rich.console import Console

    return Console(stderr=stderr, no_color=bool(os.environ.get("NO_COLOR")), highlight=False, emoji=False)


def fail(message: str) -> "typer.Exit":
    """Print one clear line on stderr and return the exit (code 2) to raise."""
    print(f"logdoctor: {message}", file=sys.stderr)
    return typer.Exit(code=2)


def _load_config(config_file: Optional[Path], path: Path, select: Optional[str], ignore: Optional[str], replaying: bool = False):
    """The configuration found for PATH with --select/--ignore on top; an unknown code is one
    line with the nearest known one, and a selection that leaves nothing to run says so."""
    from .config import ConfigError, check_rules, did_you_mean, load_config, unknown_codes
    from .replay import PROBE_CODES
    from .rules import all_rules

    rules = all_rules()
    known = set(rules) | set(PROBE_CODES)  # probes are switched on and off like rules
    try:
        config = load_config(config_file, start=path if os.path.exists(path) else None)  # False, not PermissionError, behind a folder that cannot be entered
        if config.rules or config.select or config.ignore:
            thresholds, complete = _threshold_catalogue(rules, set(config.rules) - set(rules))
            check_rules(config, thresholds, known, complete)
    except ConfigError as exc:
        raise fail(str(exc)) from None
    split = lambda s: [x.strip() for x in s.split(",") if x.strip()] if s else None  # noqa: E731
    for code in unknown_codes((split(select) or []) + (split(ignore) or []), known):
        raise fail(f"unknown rule code '{code}'{did_you_mean(code, sorted(known))} (see `logdoctor rules`)")
    merged = config.merged(split(select), split(ignore))
    _say_what_selection_does(merged, set(rules), set(PROBE_CODES), replaying)
    return merged


def _say_what_selection_does(config, rules: set[str], probes: set[str], replaying: bool) -> None:
    """A selection that switches everything off is an error; one naming only replay probes on a
    run without --replay is a note (every log rule still runs): neither may pass silently."""
    if not config.select and not config.ignore:
        return
    if not any(_rules_only(config).rule_enabled(code) for code in rules):
        what = " ".join(f"--{k} {','.join(v)}" for k, v in (("select", config.select or []), ("ignore", config.ignore)) if v)
        if not replaying:
            raise fail(f"nothing left to check: {what} leaves no rule on")
        _console(stderr=True).print(f"note: {what} leaves no log rule on: only replay probes run", highlight=False, soft_wrap=True)
    named = set(config.select or [])
    if not replaying and named and named <= probes:
        _console(stderr=True).print(
            f"note: {', '.join(sorted(named))}: replay probe(s), run only with --replay CKPT; every log rule runs", highlight=False, soft_wrap=True
        )


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


def fail_on_option(help: str):  # noqa: A002 - typer's own keyword
    """--fail-on, one of FailOn's values; a near miss is told the nearest (`warn`: did you mean
    'warning'?), which click's own choice check does not. The callback hands over the FailOn."""
    names = [m.value for m in FailOn]

    def check(value: str) -> FailOn:
        from .config import did_you_mean

        if value not in names:
            raise typer.BadParameter(f"'{value}' is not one of {', '.join(names)}{did_you_mean(value, names)}")
        return FailOn(value)

    return typer.Option(FailOn.never.value, "--fail-on", help=help, callback=check, metavar=f"[{'|'.join(names)}]")


def exit_code(statuses: list[str], fail_on: FailOn) -> int:
    """1 when any run is at or above the --fail-on level, else 0."""
    if fail_on == FailOn.never:
        return 0
    levels = {"critical"} if fail_on == FailOn.critical else {"critical", "warning"}
    return 1 if any(s in levels for s in statuses) else 0


@app.command()
def analyze(
    path: Path = typer.Argument(..., help="A run folder, a log file, a folder of many runs, or - for a console log on stdin."),
    fmt: Optional[OutputFormat] = typer.Option(None, "--format", "-f", help=_FORMAT_HELP),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help=_OUTPUT_HELP),
    select: Optional[str] = typer.Option(None, help="Only these rule codes (comma-separated)."),
    ignore: Optional[str] = typer.Option(None, help="Skip these rule codes (comma-separated)."),
    config_file: Optional[Path] = typer.Option(None, "--config", help="A logdoctor.toml or pyproject.toml."),
    fail_on: str = fail_on_option("Exit 1 when a run is at or above this status."),  # a FailOn (see fail_on_option)
    quiet: bool = flag("--quiet", "-q", help="One line per problem run, then the counts; no progress bar."),
    verbose: bool = flag("--verbose", "-v", help="Every cause, fix and evidence item on every finding."),
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
    fmt = report_format(fmt, output)
    config = _load_config(config_file, path, select, ignore, replaying=replay_ckpt is not None)
    _require_output_folder(output)
    try:
        with _progress("reading", enabled=not quiet) as progress:
            diagnosis = run_analysis(path, _rules_only(config), progress=progress)
    except ReadError as exc:
        _empty_json_report(path, [str(exc)], fmt, output, config)
        raise fail(str(exc)) from None
    _print_skipped(diagnosis.errors)
    if not diagnosis.runs:
        _empty_json_report(path, diagnosis.errors or [f"{path}: no training log found"], fmt, output, config)
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
            _console(stderr=True).print(escape(result.summary()), highlight=False, emoji=False)
    name_runs([rd.run for rd in diagnosis.runs], diagnosis.root)
    _emit(diagnosis, fmt, output, Style(quiet, verbose, no_plots, config.source))
    raise typer.Exit(exit_code([rd.status for rd in diagnosis.runs], fail_on))


def name_runs(runs: list, root) -> None:
    """Give every run its display name (`naming.display_names`), so every format shows the same one."""
    from .naming import display_names

    for run, name in zip(runs, display_names([run.name for run in runs], str(root))):
        run.name = name


@app.command()
def replay(
    checkpoint: Path = typer.Argument(..., help="A checkpoint (.pt, .pth, .ckpt, .bin, .safetensors) or an HF checkpoint-N/ folder."),
    model: Optional[str] = typer.Option(None, "--model", help=_MODEL_HELP),
    batch: Optional[Path] = typer.Option(None, "--batch", help=_BATCH_HELP),
    data: Optional[str] = typer.Option(None, "--data", help=_DATA_HELP),
    loss: Optional[str] = typer.Option(None, "--loss", help=_LOSS_HELP),
    device: Device = typer.Option(Device.auto, "--device", help="Where dynamic probes run."),
    trust_checkpoint: bool = flag("--trust-checkpoint", help=_TRUST_HELP),
    trust_batch: bool = flag("--trust-batch", help="Allow full unpickling of the --batch file (runs code in it)."),
    targets_index: Optional[int] = typer.Option(None, "--targets-index", help="Which element of a tuple batch holds the targets (default 1; the elements before it are the inputs)."),
    budget: Optional[float] = typer.Option(None, "--budget", help="Seconds the dynamic probes may take in all; what is cut is said."),
    fmt: Optional[OutputFormat] = typer.Option(None, "--format", "-f", help=_FORMAT_HELP),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help=_OUTPUT_HELP),
    config_file: Optional[Path] = typer.Option(None, "--config", help="A logdoctor.toml or pyproject.toml (probe thresholds)."),
    fail_on: str = fail_on_option("Exit 1 when a finding is at or above this level."),  # a FailOn (see fail_on_option)
    quiet: bool = flag("--quiet", "-q", help="No probe summary on stderr."),
    select: Optional[str] = typer.Option(None, help="Only these probe codes (comma-separated)."),
    ignore: Optional[str] = typer.Option(None, help="Skip these probe codes (comma-separated)."),
) -> None:
    """Probe a PyTorch checkpoint: static checks alone, dynamic ones with --model and --batch/--data."""
    from rich.markup import escape

    from .replay import ReplayError
    from .replay.command import run

    fmt = report_format(fmt, output)
    config = _load_config(config_file, checkpoint, select, ignore, replaying=True)
    opts = dict(model=model, batch=batch and str(batch), data=data, loss=loss, device=device.value, trust=trust_checkpoint, config=config)
    opts.update(trust_batch=trust_batch, targets_index=targets_index, budget=budget)
    try:
        result = run(checkpoint, **opts)
    except ReplayError as exc:
        raise fail(str(exc)) from None
    if not quiet:
        _console(stderr=True).print(escape(result.summary()), highlight=False, emoji=False)
    diagnosis = result.diagnosis()
    from .naming import root_label

    for rd in diagnosis.runs:  # the checkpoint's run, named like a run given as PATH
        rd.run.name = root_label(str(checkpoint))
    _emit(diagnosis, fmt, output, Style(no_plots=True, config_source=config.source))
    raise typer.Exit(exit_code([rd.status for rd in diagnosis.runs], fail_on))


@contextmanager
def _progress(description: str, enabled: bool = True):
    """A transient progress bar on stderr; yields a `(done, total)` callback, or None off a terminal."""
    err = _console(stderr=True) if enabled else None  # rich's Console only to ask about the terminal
    if err is None or not err.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(description, total=None)
        # a stage word (`reading`, `diagnosing`) replaces the description when the caller has stages
        yield lambda done, total, stage=None: bar.update(task, completed=done, total=total, description=stage or description)


def _require_output_folder(output: Optional[Path]) -> None:
    """-o into a folder that does not exist: one line, checked before any run is read or plot
    drawn (a long sweep must not be read only to fail at the end), the same for every format."""
    if output is not None and not output.parent.is_dir():
        raise fail(f"{output}: cannot write report (no folder {output.parent})")


def _print_skipped(errors: list[str]) -> None:
    """One `skipped:` line on stderr per source that could not be used (never silently dropped)."""
    if not errors:  # nothing to say: rich stays unloaded
        return
    from rich.markup import escape

    err = _console(stderr=True)
    for line in errors:
        err.print(f"[yellow]skipped:[/] {escape(line)}", highlight=False, markup=True, soft_wrap=True)


def _empty_json_report(path: Path, skipped: list[str], fmt: OutputFormat, output: Optional[Path], config) -> None:
    """With `--format json`, nothing usable is still a report: no runs, and `skipped` says why
    (a script reading stdout gets JSON; the exit code stays 2)."""
    if fmt != OutputFormat.json:
        return
    from .model import Diagnosis, printable

    _emit(Diagnosis(root=printable(str(path)), runs=[], errors=skipped), fmt, output, Style(quiet=True, config_source=config.source))


def _nothing_read(path: Path, errors: list[str]) -> "typer.Exit":
    """Nothing to diagnose is an input error (exit 2), not a clean bill of health."""
    return fail(f"{path}: {'no usable training log' if errors else 'no training log found'}")


@dataclass(frozen=True)
class Style:
    """How much a report says: `quiet` (problems only), `verbose` (everything on every finding),
    plots or none, and the configuration file used (named in the report)."""

    quiet: bool = False
    verbose: bool = False
    no_plots: bool = False
    config_source: Optional[str] = None
    #: Terminal: full blocks, but only for runs with a problem (`audit --details -q`).
    skip_healthy: bool = False


def _emit(diagnosis, fmt: OutputFormat, output: Optional[Path], style: Style, extra=None, sections=None) -> None:
    """Render in the chosen format to stdout or a file; a file written is named on stderr with
    the counts, so `-o` never leaves the terminal silent.

    `extra` adds top-level keys to the JSON document (e.g. `audit`); `sections`
    is a list of `(title, markdown)` shown by the terminal, Markdown and HTML
    reports after their header (the audit summary).
    """
    _require_output_folder(output)
    quiet = style.quiet
    if fmt == OutputFormat.github:
        from .report.github import diagnosis_commands

        _write(diagnosis_commands(diagnosis), output)
    elif fmt == OutputFormat.json:
        from .report.json_report import render_json

        _write(render_json(diagnosis, extra, quiet=quiet, config_source=style.config_source), output)
    elif fmt == OutputFormat.terminal:
        from .report.terminal import render_terminal, render_text

        opts = dict(quiet=quiet, verbose=style.verbose, extra_sections=sections, config_source=style.config_source, skip_healthy=style.skip_healthy)
        if output:
            _write(render_text(diagnosis, **opts), output)
        else:
            render_terminal(diagnosis, _console(), **opts)
    elif fmt == OutputFormat.md:
        from .report.markdown import render_markdown

        plots_dir = None
        if output and not style.no_plots:
            plots_dir = output.parent / f"{output.stem}_plots"
        elif not style.no_plots and not quiet:
            _console(stderr=True).print("note: Markdown on stdout has no plots; use -o report.md to write them")
        with _progress("plotting", enabled=not quiet and plots_dir is not None) as progress:
            try:
                text = render_markdown(diagnosis, extra_sections=sections, plots_dir=plots_dir, progress=progress,
                                       config_source=style.config_source, quiet=quiet, verbose=style.verbose)
            except OSError as exc:
                raise fail(f"{plots_dir}: cannot write plots ({exc.strerror})") from None
        _write(text, output)
    elif fmt == OutputFormat.html:
        from .report.html import render_html

        with _progress("plotting", enabled=not quiet and not style.no_plots) as progress:
            _write(render_html(diagnosis, extra_sections=sections, plots=not style.no_plots, progress=progress), output)
    if output is not None:
        from .report.text import counts_line

        print(f"wrote {output}: {counts_line(diagnosis.runs)}", file=sys.stderr)


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
    fmt: Optional[OutputFormat] = typer.Option(None, "--format", "-f", help=_FORMAT_HELP),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help=_OUTPUT_HELP),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes (default: one per core)."),
    scheduler: Optional[str] = typer.Option(None, help="Run on a Dask cluster: its scheduler, tcp://host:port."),
    cache_dir: Optional[Path] = typer.Option(None, help="Cache folder (default: logdoctor/audit/ in the user cache folder, $XDG_CACHE_HOME or ~/.cache)."),
    no_cache: bool = flag("--no-cache", help="Re-read every run; neither use nor write the cache."),
    rank_by: RankBy = typer.Option(RankBy.final, help="Best run by final or best validation loss."),
    details: bool = flag("--details", help="Terminal: also print every run's findings."),
    select: Optional[str] = typer.Option(None, help="Only these rule codes (comma-separated)."),
    ignore: Optional[str] = typer.Option(None, help="Skip these rule codes (comma-separated)."),
    config_file: Optional[Path] = typer.Option(None, "--config", help="A logdoctor.toml or pyproject.toml."),
    fail_on: str = fail_on_option("Exit 1 when a run is at or above this status."),  # a FailOn (see fail_on_option)
    quiet: bool = flag("--quiet", "-q", help="Only problems: skip healthy runs and progress."),
    verbose: bool = flag("--verbose", "-v", help="With --details: every cause, fix and evidence item."),
) -> None:
    """Triage a sweep: diagnose every run in parallel, summarise, link failures to hyperparameters.

    Workers send back findings and each run's loss thinned to 200 points, never the logs: the HTML page
    overlays those curves and plots the outcome against the linked setting; Markdown and terminal reports
    carry no plots (`logdoctor analyze RUN` draws every panel of a run of interest).
    """
    from .audit import audit as run_audit
    from .audit.executor import SchedulerError
    from .audit.render import print_terminal, sections
    from .audit.sweep import Interrupted
    from .ingest import ReadError

    fmt = report_format(fmt, output)
    config = _load_config(config_file, Path(path), select, ignore)
    rules_config = _rules_only(config)
    _require_output_folder(output)
    try:
        with _progress("auditing", enabled=not quiet) as progress:
            report = run_audit(
                path, rules_config, jobs=jobs, scheduler=scheduler, cache_dir=cache_dir,
                use_cache=not no_cache, rank_by=rank_by.value, progress=progress,
            )
    except (ReadError, SchedulerError) as exc:
        raise fail(str(exc)) from None
    except Interrupted as stop:  # Ctrl-C: one line, how far it got and that a rerun resumes
        print(f"logdoctor: {stop}", file=sys.stderr)
        raise typer.Exit(code=130) from None
    if not report.results:
        _print_skipped(report.errors)
        raise _nothing_read(path, report.errors)
    from .naming import display_names
    from .numbers import count

    for result, name in zip(report.results, display_names([r.run for r in report.results], path)):
        result.run = name
    if fmt == OutputFormat.terminal and not details:
        from .audit.render import print_terminal

        if output:
            _write(_trimmed(lambda console: print_terminal(console, report, quiet), width=120), output)
            print(f"wrote {output}: {count(len(report.results), 'run')}", file=sys.stderr)
        else:
            sys.stdout.write(_trimmed(lambda console: print_terminal(console, report, quiet), like=_console()))
    elif fmt == OutputFormat.html:
        from .audit.page import render_page

        _write(render_page(report, quiet), output)
        if output is not None:
            print(f"wrote {output}: {count(len(report.results), 'run')}", file=sys.stderr)
    else:
        # --details asks for the findings: with -q, those of the runs with a problem
        style = Style(quiet and not details, verbose, True, config.source, skip_healthy=quiet)
        drawn = fmt not in (OutputFormat.json, OutputFormat.github)  # these two draw no curve
        _emit(report.diagnosis(curves=drawn), fmt, output, style, extra={"audit": report.to_json()}, sections=sections(report, quiet))
    raise typer.Exit(exit_code([r.status for r in report.results], fail_on))


#: Blanks at the end of a line, before any colour codes that close it.
_TRAILING = re.compile(r"(?:[ \t]|\x1b\[[0-9;]*m)+$", re.M)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _trimmed(draw, like=None, width: int = 100) -> str:
    """What `draw(console)` prints, without the blanks rich pads table cells and Markdown with.

    `like` is the console whose width and colours to keep (stdout's); without it, plain text
    `width` columns wide (for a file).
    """
    import io

    from rich.console import Console

    if like is None:
        console = Console(file=io.StringIO(), width=width, no_color=True, color_system=None, highlight=False, emoji=False)
    else:
        console = Console(
            file=io.StringIO(), width=like.width, no_color=like.no_color, color_system=like.color_system,
            force_terminal=like.is_terminal, highlight=False, emoji=False,
        )
    draw(console)
    return _TRAILING.sub(lambda m: "".join(_ANSI.findall(m.group())), console.file.getvalue())


class Align(str, Enum):
    step = "step"
    epoch = "epoch"
    tokens = "tokens"
    samples = "samples"


class CompareFailOn(str, Enum):
    regression = "regression"
    never = "never"


@app.command()
def compare(
    run: Path = typer.Argument(..., metavar="RUN", help="The run to judge: a run folder or a log file holding one run."),
    baselines: list[Path] = typer.Argument(..., metavar="BASELINE", help="Its baselines: run folders or log files; a folder of several runs (seeds) gives several."),
    align: Align = typer.Option(Align.step, "--align", help="Align on the runs' steps, or on the epoch / tokens / samples seen that both log."),
    fmt: Optional[OutputFormat] = typer.Option(None, "--format", "-f", help=_FORMAT_HELP),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help=_OUTPUT_HELP),
    config_file: Optional[Path] = typer.Option(None, "--config", help="A logdoctor.toml or pyproject.toml."),
    fail_on: CompareFailOn = typer.Option(CompareFailOn.never, "--fail-on", help="regression: exit 1 when the primary loss or the task metric is behind beyond the noise."),
    no_plots: bool = flag("--no-plots", help="Markdown/HTML without plots."),
) -> None:
    """Compare a run with its baselines: did my change make training worse? Per shared metric: behind, level or
    ahead beyond the noise, from which step, by how much at the end and at its best; settings and findings that differ."""
    from .compare import AlignError, CompareError
    from .compare import compare as run_compare
    from .report.compare_render import render_comparison

    fmt = report_format(fmt, output)
    config = _load_config(config_file, run, None, None)
    _require_output_folder(output)
    try:
        comparison = run_compare(run, baselines, _rules_only(config), align.value)
    except (CompareError, AlignError) as exc:
        raise fail(str(exc)) from None
    _print_skipped(comparison.skipped)
    if fmt == OutputFormat.terminal:
        from .report.compare_terminal import render_compare_terminal

        text = _trimmed(lambda console: render_compare_terminal(comparison, console), like=None if output else _console())
    else:
        try:
            text = render_comparison(comparison, fmt.value, config_source=config.source, output=output, plots=not no_plots)
        except OSError as exc:
            raise fail(f"{output}: cannot write plots ({exc.strerror})") from None
    _write(text, output)
    if output is not None:
        print(f"wrote {output}: {'regression' if comparison.regression else 'no regression'}", file=sys.stderr)
    raise typer.Exit(1 if fail_on == CompareFailOn.regression and comparison.regression else 0)


@app.command()
def mcp() -> None:
    """Serve the tools to coding agents over MCP: analyze, inspect, explain and compare on stdio, each answering
    with the JSON contract (needs the mcp extra: pip install 'logdoctor[mcp]')."""
    try:
        from .mcp_server import serve
        import mcp as _sdk  # noqa: F401 - the SDK is an optional extra: say so before serving
    except ImportError:
        raise fail("logdoctor mcp needs the MCP Python SDK: pip install 'logdoctor[mcp]'") from None
    serve()


@app.command()
def inspect(
    path: Path = typer.Argument(..., help="A run folder, a log file, a folder of many runs, or - for a console log on stdin."),
    config_file: Optional[Path] = typer.Option(None, "--config", help="A logdoctor.toml or pyproject.toml."),
    fmt: ListFormat = typer.Option(ListFormat.terminal, "--format", "-f", help="terminal or json."),
) -> None:
    """List the runs found, their format, metrics, step ranges and roles."""
    from .ingest import ReadError, load_runs
    from .report.inspect_report import inspect_dict, render_inspect

    config = _load_config(config_file, path, None, None)
    try:
        runs, errors = load_runs(path)
    except ReadError as exc:
        raise fail(str(exc)) from None
    name_runs(runs, path)
    if fmt == ListFormat.json:
        _write(json.dumps(inspect_dict(runs, errors, config), indent=2), None)
    else:
        sys.stdout.write(_trimmed(lambda console: render_inspect(runs, errors, config, console), like=_console()))


@app.command()
def rules(fmt: ListFormat = typer.Option(ListFormat.terminal, "--format", "-f", help="terminal or json.")) -> None:
    """List every rule (code, severity, one-line summary), then the replay probes' codes."""
    from .replay import PROBE_CODES
    from .rules import all_rules

    catalogue = all_rules()
    if fmt == ListFormat.json:
        from . import __version__

        doc = {
            "schema": "logdoctor.rules/v1",
            "tool": {"name": "logdoctor", "version": __version__},
            "rules": [
                {"code": code, "severity": cls.severity, "summary": cls.summary(), "thresholds": dict(cls.defaults), "docs": f"docs/rules/{code}.md"}
                for code, cls in catalogue.items()
            ],
            "probes": list(PROBE_CODES),
        }
        _write(json.dumps(doc, indent=2), None)
        return

    def draw(console) -> None:
        from rich.table import Table

        table = Table("code", "severity", "what it detects", box=None, pad_edge=False)
        for code, cls in catalogue.items():
            table.add_row(code, cls.severity, cls.summary())
        console.print(table)
        # the probes' own summaries live in modules that import PyTorch: their codes are enough here
        console.print(f"\nreplay probes (logdoctor replay): {', '.join(PROBE_CODES)}", highlight=False, emoji=False)
        console.print("Details: logdoctor explain CODE, or docs/rules/CODE.md", highlight=False, emoji=False)

    sys.stdout.write(_trimmed(draw, like=_console()))


@app.command()
def explain(code: str = typer.Argument(..., help="A rule code, e.g. crawl.")) -> None:
    """Print a rule's documentation: symptom, causes, fix, probe, thresholds."""
    from .ruledocs import code_page

    found = code_page(code)  # every page is packaged: no rule module (numpy, polars) nor PyTorch is imported
    if found is None:  # the codes to suggest from only now
        from .config import did_you_mean
        from .replay import PROBE_CODES
        from .rules import all_rules

        raise fail(f"unknown rule or replay probe code '{code}'{did_you_mean(code, [*all_rules(), *PROBE_CODES])} (see `logdoctor rules`)")
    from rich.markdown import Markdown

    sys.stdout.write(_trimmed(lambda console: console.print(Markdown(found[1])), like=_console()))


def main() -> None:
    from .allocators import return_freed_memory
    from .blas_threads import one_blas_thread

    return_freed_memory()
    one_blas_thread()
    # a terminal or pipe that cannot encode the status marks and sparklines (PYTHONIOENCODING=ascii,
    # a legacy code page) gets '?' for them, never a UnicodeEncodeError traceback
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
    app()


if __name__ == "__main__":
    main()
