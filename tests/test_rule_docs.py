"""Every rule documents itself (the docstring is the docs, the causes and the fixes), and docs/rules/ is current."""
from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from logdoctor.model import SEVERITIES
from logdoctor.ruledocs import write_docs
from logdoctor.rules import all_rules
from logdoctor.rules.base import SECTIONS, bullets

DOCS = Path(__file__).resolve().parents[1] / "docs" / "rules"
RULES = sorted(all_rules().items())


def test_catalogue_is_not_empty():
    assert len(RULES) >= 6


@pytest.mark.parametrize("code,cls", RULES, ids=[c for c, _ in RULES])
def test_rule_has_every_documentation_section(code, cls):
    doc = cls.doc()
    assert doc.get("Summary"), f"{code}: no one-line summary"
    for section in SECTIONS:
        assert doc.get(section, "").strip(), f"{code}: missing or empty '{section}:' section"
    assert len(bullets(doc["Root causes"])) >= 2, f"{code}: rank at least two root causes as '- ' bullets"
    assert bullets(doc["Fix"]), f"{code}: Fix needs at least one '- ' bullet"


@pytest.mark.parametrize("code,cls", RULES, ids=[c for c, _ in RULES])
def test_rule_shape(code, cls):
    assert cls.severity in SEVERITIES
    assert code == cls.__module__.rsplit(".", 1)[-1], "one rule per module, named after its code"
    for key, value in cls.defaults.items():
        assert isinstance(value, (int, float)) and not isinstance(value, bool), f"{code}.{key} must be numeric"
    cls()  # defaults construct
    with pytest.raises(ValueError):
        cls({"no_such_threshold": 1})


def test_docs_folder_is_generated_from_the_docstrings(tmp_path):
    """docs/rules/ must equal what `python -m logdoctor.ruledocs` writes now."""
    fresh = write_docs(tmp_path / "rules")
    names = sorted(p.name for p in fresh)
    assert DOCS.is_dir(), "docs/rules/ missing: run python -m logdoctor.ruledocs"
    assert sorted(p.name for p in DOCS.glob("*.md")) == names, "stale docs/rules/: run python -m logdoctor.ruledocs"
    match, mismatch, errors = filecmp.cmpfiles(tmp_path / "rules", DOCS, names, shallow=False)
    assert not mismatch and not errors, f"stale docs/rules/ ({mismatch + errors}): run python -m logdoctor.ruledocs"


def test_rules_command_lists_every_rule_and_every_probe_code():
    from typer.testing import CliRunner

    from logdoctor.cli import app
    from logdoctor.replay import PROBE_CODES

    out = CliRunner().invoke(app, ["rules"], env={"COLUMNS": "200"}).output
    for code in (*all_rules(), *PROBE_CODES):
        assert code in out, f"`logdoctor rules` does not list {code}"
