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


def test_packaged_rule_pages_are_generated_from_the_rule_docstrings(tmp_path):
    """logdoctor/rulepages/ must equal what `python -m logdoctor.ruledocs` writes now, one page per rule."""
    from importlib import resources

    from logdoctor.ruledocs import RULE_PAGES, packaged_page, write_rule_pages

    fresh = write_rule_pages(tmp_path / RULE_PAGES)
    packaged = {p.name for p in (resources.files("logdoctor") / RULE_PAGES).iterdir() if p.name.endswith(".md")}
    assert packaged == {p.name for p in fresh}, "run python -m logdoctor.ruledocs"
    for page in fresh:
        assert packaged_page(RULE_PAGES, page.stem) == page.read_text(encoding="utf-8"), f"stale {page.name}: run python -m logdoctor.ruledocs"


def test_explain_reads_a_packaged_page_without_importing_numpy_polars_or_torch():
    """A page of text must not cost the rules' imports (0.3-0.5 s): `explain` reads the packaged page."""
    import subprocess
    import sys

    code = ("import sys\nfrom typer.testing import CliRunner\nfrom logdoctor.cli import app\n"
            "result = CliRunner().invoke(app, ['explain', 'flat'])\n"
            "assert result.exit_code == 0 and 'Severity' in result.output, result.output\n"
            "print(sorted(m for m in ('numpy', 'polars', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_packaged_probe_pages_are_generated_from_the_probe_docstrings(tmp_path):
    """logdoctor/probedocs/ must equal what `python -m logdoctor.ruledocs` writes now."""
    pytest.importorskip("torch")
    from logdoctor.replay import PROBE_CODES
    from logdoctor.ruledocs import probe_markdown, write_probe_docs

    fresh = write_probe_docs(tmp_path / "probedocs")
    assert sorted(p.stem for p in fresh) == sorted(PROBE_CODES)
    for page in fresh:
        assert probe_markdown(page.stem) == page.read_text(encoding="utf-8"), f"stale {page.name}: run python -m logdoctor.ruledocs"


def test_explain_documents_every_probe_in_the_base_install_without_pytorch():
    """`explain nan_source` once said "unknown code 'nan_source'; did you mean 'nan_source'?" without
    PyTorch, though every replay finding points there."""
    import subprocess
    import sys

    script = (
        "import sys, json; sys.modules['torch'] = None\n"  # `import torch` now fails, as in the base install
        "from typer.testing import CliRunner\n"
        "from logdoctor.cli import app\n"
        "from logdoctor.replay import PROBE_CODES\n"
        "out = {c: CliRunner().invoke(app, ['explain', c], env={'COLUMNS': '100'}) for c in PROBE_CODES}\n"
        "print(json.dumps({c: [r.exit_code, r.stdout] for c, r in out.items()}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    import json

    from logdoctor.replay import PROBE_CODES

    pages = json.loads(done.stdout)
    assert sorted(pages) == sorted(PROBE_CODES)
    for code, (exit_code, text) in pages.items():
        assert exit_code == 0 and code in text.splitlines()[0], (code, text[:300])
        assert "Root causes" in text and "Fix" in text, code


def test_a_paragraph_after_a_list_is_glued_to_no_item():
    """overfit's fix printed "...more training data, or a smaller model When a validation accuracy..." in every format."""
    assert bullets("- a\n  wrapped\n- b\nA paragraph after the list.\n") == ["a wrapped", "b"]
    assert bullets("one paragraph,\nwrapped") == ["one paragraph, wrapped"]
    assert bullets(all_rules()["overfit"].doc()["Fix"])[-1] == "more training data, or a smaller model"
