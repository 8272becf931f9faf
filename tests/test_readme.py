"""The README is a landing page that stays true: short, its links resolve, and the output it
shows is what the command prints today (the screenshots run the commands it shows)."""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from typer.testing import CliRunner

from logdoctor.cli import app

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_a_landing_page():
    assert len(README) <= 15_000
    assert "pip install -e . && logdoctor analyze sample_runs/" in README  # the first command CI's fresh clone runs


def test_every_relative_link_in_the_readme_and_docs_resolves():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_the_output_the_readme_shows_is_what_the_command_prints():
    block = re.search(r"```\n\$ logdoctor (analyze \S+)\n(.*?)```", README, re.S)
    result = CliRunner().invoke(app, block.group(1).split(), env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.stdout == block.group(2)


def test_the_screenshots_show_commands_the_docs_show():
    spec = importlib.util.spec_from_file_location("make_screenshots", ROOT / "docs" / "screenshots" / "make_screenshots.py")
    shots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shots)
    docs = README + (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")
    for png, args in shots.TERMINAL.items():
        assert f"screenshots/{png}" in docs and f"logdoctor {' '.join(args)}" in docs
