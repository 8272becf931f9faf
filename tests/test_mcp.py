"""`logdoctor mcp`: the tools a coding agent calls, answered over stdio to the MCP SDK's own client.

The server is started as a user's agent starts it (`python -m logdoctor mcp`, a subprocess
speaking on stdin/stdout); every answer is the JSON contract the CLI prints.
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from logdoctor.cli import app
from test_compare import validate

try:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
except ImportError:  # the mcp extra is not installed: only the message saying so is tested
    Client = None
needs_sdk = pytest.mark.skipif(Client is None, reason="the mcp extra is not installed")

SAMPLES = Path(__file__).resolve().parent.parent / "sample_runs"
HEALTHY = SAMPLES / "tb_healthy_adam_constant"


def ask(calls: list[tuple[str, dict]]) -> tuple[list[str], list]:
    """The server's tool names and its answer to each call, over one stdio session."""

    async def session():
        server = StdioServerParameters(command=sys.executable, args=["-m", "logdoctor", "mcp"])
        async with Client(server) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            return names, [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(asyncio.wait_for(session(), timeout=120))


@needs_sdk
def test_the_server_answers_compare_analyze_inspect_and_explain_with_the_json_contract():
    names, (compared, missing, analyzed, inspected, explained, unknown) = ask([
        ("compare", {"run": str(HEALTHY), "baselines": [str(HEALTHY)]}),
        ("compare", {"run": str(HEALTHY), "baselines": [str(SAMPLES / "no_such_run")]}),
        ("analyze", {"path": str(SAMPLES / "tbn_diverge_sgd_lr_high")}),
        ("inspect", {"path": str(HEALTHY)}),
        ("explain", {"code": "overfit"}),
        ("explain", {"code": "overfitt"}),
    ])
    assert names == ["analyze", "inspect", "explain", "compare"]
    doc = compared.structured_content
    validate(doc)
    assert not compared.is_error and doc["regression"] is False and {m["verdict"] for m in doc["metrics"]} == {"level"}
    assert missing.is_error and "no_such_run: no such file or folder" in missing.content[0].text
    report = analyzed.structured_content
    assert report["schema"] == "logdoctor.report/v1" and report["runs"][0]["findings"][0]["code"] == "diverge"
    assert inspected.structured_content["runs"][0]["format"] == "tensorboard"
    assert explained.structured_content["markdown"].startswith("# `overfit`")
    assert unknown.is_error and "did you mean 'overfit'" in unknown.content[0].text


def test_without_the_sdk_the_command_says_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` raises ImportError, as when it is not installed
    result = CliRunner().invoke(app, ["mcp"])
    assert result.exit_code == 2 and result.stderr == "logdoctor: logdoctor mcp needs the MCP Python SDK: pip install 'logdoctor[mcp]'\n"
