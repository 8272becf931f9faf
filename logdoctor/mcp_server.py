"""`logdoctor mcp`: the doctor as tools a coding agent calls, over stdio (the Model Context Protocol).

Four tools, each answering with the JSON contract the CLI prints, so an agent reads
what a CI job reads:

* `analyze(path)`: the `logdoctor.report/v1` document of every run under a path;
* `inspect(path)`: what was found there and how each metric was understood;
* `explain(code)`: a rule's or replay probe's documentation (Markdown) with its severity;
* `compare(run, baselines, align)`: the `logdoctor.compare/v1` document.

Bad input (a missing path, an unknown code, nothing to compare) is a tool error carrying
the CLI's one line, never a traceback. The server uses the official MCP Python SDK
(`pip install 'logdoctor[mcp]'`), imported only here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from . import __version__

INSTRUCTIONS = (
    "logdoctor diagnoses ML training runs from the logs they wrote (TensorBoard, W&B, CSV, Hugging Face, "
    "MLflow, console logs). analyze: what is wrong with each run under a path; compare: is a run behind its "
    "baselines (did a change make training worse); inspect: what was read and how metrics were understood; "
    "explain: a finding code's documentation."
)


def build_server():
    """The MCP server with its four tools (the SDK's `MCPServer`)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    # stdout carries the protocol; the SDK's own INFO lines (a tool error logged as it is answered) stay off stderr too
    server = MCPServer("logdoctor", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    def config_for(path: str):
        from .config import ConfigError, load_config

        try:
            return load_config(None, start=Path(path) if Path(path).exists() else None)
        except ConfigError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(description="Diagnose every training run under a path (a run folder, a log file or a folder of runs): the logdoctor.report/v1 JSON document, runs worst first, each with its findings, evidence, causes and fixes.")
    def analyze(path: str) -> dict[str, Any]:
        from .cli import name_runs
        from .diagnose import analyze as run_analysis
        from .ingest import ReadError
        from .report.json_report import report_dict

        config = config_for(path)
        try:
            diagnosis = run_analysis(path, config)
        except ReadError as exc:
            raise ToolError(str(exc)) from None
        if not diagnosis.runs:
            raise ToolError(f"{path}: {'no usable training log' if diagnosis.errors else 'no training log found'}")
        name_runs([rd.run for rd in diagnosis.runs], diagnosis.root)
        return report_dict(diagnosis, config_source=config.source)

    @server.tool(description="List the runs found under a path: format, metrics, step ranges and the role each metric was given (train_loss, val_loss, lr, ...), and what could not be read.")
    def inspect(path: str) -> dict[str, Any]:
        from .cli import name_runs
        from .ingest import ReadError, load_runs
        from .report.inspect_report import inspect_dict

        config = config_for(path)
        try:
            runs, errors = load_runs(Path(path))
        except ReadError as exc:
            raise ToolError(str(exc)) from None
        name_runs(runs, path)
        return inspect_dict(runs, errors, config)

    @server.tool(description="The documentation of a finding code (a rule such as overfit or a replay probe such as nan_source): symptom, causes, fix, thresholds, as Markdown.")
    def explain(code: str) -> dict[str, Any]:
        from .config import did_you_mean
        from .replay import PROBE_CODES
        from .rules import all_rules
        from .ruledocs import code_page

        found = code_page(code)  # probes too without PyTorch (their pages are packaged)
        if found is None:
            raise ToolError(f"unknown rule or replay probe code '{code}'{did_you_mean(code, [*all_rules(), *PROBE_CODES])}")
        return {"code": code, "severity": found[0], "markdown": found[1]}

    @server.tool(description="Did a change make training worse? Compare a run with its baselines (run folders or log files; several baselines, e.g. seeds, make the noise band): per shared metric behind / level / ahead beyond the noise, the step it departs, by how much at the end and at its best; the settings and findings that differ. The logdoctor.compare/v1 JSON document; regression is true when the primary loss or task metric is behind.")
    def compare(run: str, baselines: list[str], align: str = "step") -> dict[str, Any]:
        from .compare import AlignError, CompareError
        from .compare import compare as run_compare
        from .report.compare_json import compare_dict

        config = config_for(run)
        try:
            comparison = run_compare(Path(run), [Path(b) for b in baselines], config, align)
        except (CompareError, AlignError) as exc:
            raise ToolError(str(exc)) from None
        return compare_dict(comparison, config.source)

    return server


def serve() -> None:
    """Serve the tools over stdin/stdout until the client closes them."""
    build_server().run("stdio")
