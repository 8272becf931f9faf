"""What each everyday command imports: nothing it does not use.

`logdoctor` is called once per run (in CI, over a sweep, by an agent, on every save), so every
command pays its imports each time. scipy is for the audit's statistics, matplotlib for PNG plots,
scikit-learn for the audit's importance, torch for replay, mcp for `logdoctor mcp`: none of them
may load on `--version`, `explain` or `analyze`. Each command runs in a fresh interpreter, which
reports the top-level modules it ended with. Speed itself is measured in benchmarks/bench_startup.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "sample_runs"

#: Loaded only by the commands that need them.
NEVER_ON_EVERYDAY_COMMANDS = {"scipy", "matplotlib", "torch", "sklearn", "optuna", "mcp", "pandas", "tbparse"}

_REPORT = (
    "import json, sys\n"
    "from logdoctor.cli import main\n"
    "sys.argv = ['logdoctor', *json.loads(sys.argv[1])]\n"
    "try:\n"
    "    main()\n"
    "except SystemExit:\n"
    "    pass\n"
    "sys.stderr.write('\\nMODULES ' + json.dumps(sorted({m.split('.')[0] for m in sys.modules})) + '\\n')\n"
)


def loaded_by(*args: str) -> set[str]:
    """Top-level modules imported by one `logdoctor ARGS` in a fresh interpreter."""
    env = dict(os.environ, NO_COLOR="1", COLUMNS="100")
    proc = subprocess.run([sys.executable, "-c", _REPORT, json.dumps(list(args))], capture_output=True, text=True, cwd=REPO, env=env)
    last = [line for line in proc.stderr.splitlines() if line.startswith("MODULES ")]
    assert last, proc.stderr
    return set(json.loads(last[-1][len("MODULES "):]))


def test_version_loads_no_dataframe_library():
    loaded = loaded_by("--version")
    assert not loaded & (NEVER_ON_EVERYDAY_COMMANDS | {"polars", "numpy", "rich"})


def test_explain_loads_no_heavy_module():
    assert not loaded_by("explain", "flat") & NEVER_ON_EVERYDAY_COMMANDS


@pytest.mark.parametrize("run", ["csv_healthy_amp_charlm", "hf_healthy_linear_warmup", "mlf_healthy_short_10_epochs", "tb_healthy_adam_constant", "wb_healthy_amp_digits"])
def test_analyze_of_one_run_loads_no_heavy_module(run):
    assert not loaded_by("analyze", str(SAMPLES / run)) & NEVER_ON_EVERYDAY_COMMANDS


def test_analyze_of_a_csv_run_loads_no_other_formats_decoder_nor_markdown():
    """The event-file reader (crc32c), the .wandb protobuf schema, the YAML parser and the Markdown
    renderer load where a run needs them, not because discovery looked at every format."""
    loaded = loaded_by("analyze", str(SAMPLES / "csv_healthy_amp_charlm"))
    assert not loaded & {"crc32c", "google", "yaml", "markdown_it", "pygments"}


def test_quiet_json_analyze_loads_no_terminal_library():
    """`analyze -f json -q` (CI, agents) draws nothing on a terminal: rich is not loaded at all."""
    assert "rich" not in loaded_by("analyze", str(SAMPLES / "csv_healthy_amp_charlm"), "-f", "json", "-q")
