"""Words and numbers shared by every human-readable renderer.

Terminal, Markdown and HTML all say the same things about a finding; this
module is where they are phrased once: number formatting (`fmt_num`), the
evidence dict as readable phrases (`evidence_items`), the step range, the
status ordering, and Markdown escaping for strings that came from a log.

Evidence is rendered generically from its keys, so a new rule needs no
renderer change: `slope_per_step` reads "slope -7e-7/step", `p` reads
"p = 0.41", `frac_above_clip` reads "above clip 97%", a `loss_start` /
`loss_end` pair reads "loss 2.301 → 2.298", step keys get thousands
separators.
"""
from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from ..model import SEVERITY_RANK, Finding, RunDiagnosis, Series
from ..naming import middle_ellipsis, natural_key  # noqa: F401 - the audit's table cuts names with middle_ellipsis
from ..numbers import fmt_num, percent
from ..view import RunView
from .evidence import PAIRS, term

#: (suffix in a key, unit appended to the value)
_UNIT_SUFFIXES = (
    ("_per_1k_steps", "/1k steps"),
    ("_per_step", "/step"),
    ("_per_epoch", "/epoch"),
    ("_steps", " steps"),
    ("_pct", "%"),
    ("_percent", "%"),
)
#: Pairs of key parts that read as "before → after".
_PAIRS = (("start", "end"), ("first", "last"), ("initial", "final"), ("before", "after"), ("from", "to"))
_FRACTION_TOKENS = {"frac", "fraction", "share"}
_STEP_TOKENS = {"step", "steps", "epoch", "epochs", "iteration", "iter", "count", "n", "points", "halvings"}
#: Evidence items in view per finding: rules list their most telling numbers first, and a wall of
#: `key value` pairs hides them. The terminal counts the rest, HTML folds them, JSON and Markdown
#: keep every item.
TOP_EVIDENCE = 6


def _label(key: str) -> str:
    return " ".join(t for t in re.split(r"[_\s]+", key) if t)


def _one(key: str, value: Any) -> tuple[str, str]:
    """One evidence entry as (label, value with unit)."""
    toks = [t for t in key.lower().split("_") if t]
    unit = ""
    label = key
    if key.lower() in ("p_value", "pvalue"):
        label = "p"
    scalar = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    for suffix, u in _UNIT_SUFFIXES if scalar else ():
        if key.lower().endswith(suffix) and len(key) > len(suffix):
            label, unit = key[: -len(suffix)], u
            break
    if isinstance(value, (float, np.floating)) and _FRACTION_TOKENS & set(toks) and 0 <= float(value) <= 1:
        rest = [t for t in label.split("_") if t.lower() not in _FRACTION_TOKENS]
        return _label("_".join(rest)) or "fraction", percent(float(value))
    if isinstance(value, (float, np.floating)) and set(toks) & _STEP_TOKENS and math.isfinite(float(value)):
        if float(value).is_integer():
            value = int(value)
    return _label(label), fmt_num(value) + unit


def evidence_items(evidence: dict[str, Any], code: str | None = None) -> list[tuple[str, str]]:
    """The evidence dict as (label, value with unit) pairs in words a person knows.

    Keys the rules document (`report.evidence.TERMS`) get their name and number style
    (`val_relative_change` 0.84 reads "validation change from its best +84%"), known pairs
    read "a → b"; any other key (a replay probe's) is phrased from its name. Keys of kind
    "title" (the did-it-learn judgement) are what the headline says, so they are left out.
    """
    used: set[str] = set()
    out: list[tuple[str, str]] = []
    for key, value in evidence.items():
        if key in used:
            continue
        used.add(key)
        partner, label = PAIRS.get(key, (None, ""))
        if partner in evidence and _scalar(value) and _scalar(evidence[partner]):
            kind = term(key, code)[1]
            used.add(partner)
            out.append((label, f"{styled(value, kind)} → {styled(evidence[partner], kind)}"))
            continue
        known = term(key, code)
        if known is not None:
            if known[1] != "title":
                out.append((known[0], styled(value, known[1])))
            continue
        pair = _pair_of(key, evidence)
        if pair:
            stem, other = pair
            used.add(other)
            out.append((_label(stem) or "value", f"{fmt_num(value)} → {fmt_num(evidence[other])}"))
            continue
        out.append(_one(key, value))
    return out


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating, str)) and not isinstance(value, bool)


#: Number kinds that are the number with a unit around it.
_UNIT_OF_KIND = {"times": "{}×", "sigmas": "{}× the noise", "per1k": "{} per 1k steps", "p": "p = {}"}


def styled(value: Any, kind: str) -> str:
    """A value in its kind's number style (see `report.evidence`): one style for every report."""
    number = _number(value)
    if number is None:
        return fmt_num(value) if kind != "steps" else "steps " + fmt_num([int(v) for v in value] if isinstance(value, list) else value)
    if not math.isfinite(number):
        return fmt_num(number)
    if kind in ("step", "count") and number.is_integer():
        return ("step " if kind == "step" else "") + fmt_num(int(number))
    if kind == "share":
        return percent(number)
    if kind == "change":
        return ("+" if number > 0 else "") + percent(number)
    if kind in _UNIT_OF_KIND:
        return _UNIT_OF_KIND[kind].format(fmt_num(number))
    if kind == "r":
        return f"{number:.2f}"
    if kind == "decades":
        return f"{number:.1f} decades"
    return fmt_num(value)


def _number(value: Any) -> float | None:
    """A numeric value as float (NaN/inf strings from a JSON round trip included), else None."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    if isinstance(value, str) and value.lower() in ("nan", "inf", "-inf"):
        return float(value)
    return None


def _pair_of(key: str, evidence: dict[str, Any]) -> tuple[str, str] | None:
    """If `key` is the first half of a before/after pair present in `evidence`: (stem, partner key)."""
    for a, b in _PAIRS:
        for pattern, partner, stem in (
            (rf"^(.*)_{a}$", lambda s: f"{s}_{b}", lambda s: s),
            (rf"^{a}_(.*)$", lambda s: f"{b}_{s}", lambda s: s),
            (rf"^{a}$", lambda s: b, lambda s: ""),
        ):
            m = re.match(pattern, key)
            if m is None:
                continue
            s = m.group(1) if m.groups() else ""
            other = partner(s)
            if other in evidence and not isinstance(evidence[key], (list, dict)):
                return stem(s), other
    return None


def evidence_text(evidence: dict[str, Any], code: str | None = None) -> str:
    """Evidence as one line: 'loss level 2.301 → 2.298, slope -7e-7/step, trend p = 0.41'."""
    return ", ".join(f"{label} = {value}" if len(label) <= 2 else f"{label} {value}" for label, value in evidence_items(evidence, code))


def step_range(finding: Finding) -> str:
    """'steps 0–4,000', 'step 1,200', or '' when the finding has no step range."""
    if not finding.steps:
        return ""
    a, b = finding.steps
    return f"step {a:,}" if a == b else f"steps {a:,}–{b:,}"


def where(finding: Finding) -> str:
    """The metric and step range a finding is about: 'train/loss, steps 0–4,000'."""
    return ", ".join(p for p in (finding.metric or "", step_range(finding)) if p)


def main_loss(rd: RunDiagnosis) -> Series | None:
    """The run's train loss (else validation loss) under the roles the diagnosis assigned, or None."""
    name = rd.roles.get("train_loss") or rd.roles.get("val_loss")
    series = RunView(rd.run).metric(name) if name else None
    return series if series is not None and len(series) else None


#: How a run reads in the human formats, worst first. "not checked" is a run whose JSON status is
#: healthy but whose loss no rule could judge: calling it healthy would claim more than was looked at;
#: "stopped" one whose log ends on the error that stopped it (a `stopped` finding): it did not finish.
VERDICTS = ("critical", "warning", "stopped", "not checked", "healthy")
VERDICT_RANK = {v: i for i, v in enumerate(VERDICTS)}


def verdict(rd: RunDiagnosis) -> str:
    """The run's status; for a run without a problem, "stopped" when its log ends on an error (a
    `stopped` finding), else "not checked" when no rule judged its loss (a `not_checked` finding:
    no loss, too few points, or an RL run checked for NaN / inf only)."""
    if rd.status != "healthy":
        return rd.status
    codes = {f.code for f in rd.findings}
    return "stopped" if "stopped" in codes else "not checked" if "not_checked" in codes else "healthy"


#: How a fix that is really a pointer to a replay probe starts (the rules' base adds it to the
#: fixes; every renderer shows `Finding.probe` on its own line instead).
_PROBE_FIX = "Confirm with replay:"


def plain_fixes(f: Finding) -> list[str]:
    """The finding's fixes without the replay pointer (shown from `Finding.probe`)."""
    return [x for x in f.fixes if not x.startswith(_PROBE_FIX)]


#: Causes the terminal shows per finding (the rest are in `logdoctor explain CODE` and the other formats).
TOP_CAUSES = 2


class Advice:
    """Which causes, fixes and probes a report has already printed, per finding code, and where.

    The same code on twenty runs has the same causes and fix: printed in full once (its first,
    worst run) and referred to after that, unless a run's are different (a replay probe that
    confirmed one cause moves it first) or `verbose` asks for every one. `full`: the report
    prints every cause and fix (Markdown), so all of them must match to refer back.
    """

    def __init__(self, verbose: bool = False, full: bool = False):
        self.verbose = verbose
        self.full = full
        self.shown: dict[str, tuple] = {}
        self.places: dict[str, Any] = {}

    def first_time(self, f: Finding, place: Any = None) -> bool:
        """Whether `f`'s advice is to be printed here (remembering `place` as where it was)."""
        said = (tuple(f.causes), tuple(plain_fixes(f)), f.probe) if self.full else (
            tuple(f.causes[:TOP_CAUSES]), tuple(plain_fixes(f)[:1]), f.probe)
        if self.verbose or self.shown.get(f.code) != said:
            self.shown[f.code], self.places[f.code] = said, place
            return True
        return False

    def place(self, code: str) -> Any:
        """Where the advice for `code` was printed (the `place` its first_time was given)."""
        return self.places.get(code)


def by_severity(runs: list[RunDiagnosis]) -> list[RunDiagnosis]:
    """Runs worst first: verdict, then their top finding's severity and confidence, then name.

    The one ordering every format uses (terminal blocks, summary tables, Markdown and
    HTML sections), so a run sits at the same place whichever report you open.
    """

    def key(rd: RunDiagnosis):
        top = rd.findings[0] if rd.findings else None
        return (
            VERDICT_RANK.get(verdict(rd), 9),
            SEVERITY_RANK.get(top.severity, 9) if top else 9,
            -(top.confidence if top else 0.0),
            natural_key(rd.run.name),
        )

    return sorted(runs, key=key)


def status_counts(runs: list[RunDiagnosis]) -> dict[str, int]:
    """Runs per verdict, worst first; "not checked" only when there is one."""
    counts = {"critical": 0, "warning": 0, "healthy": 0}
    for rd in runs:
        counts[verdict(rd)] = counts.get(verdict(rd), 0) + 1
    return {v: counts[v] for v in VERDICTS if v in counts}


def counts_line(runs: list[RunDiagnosis]) -> str:
    """'12 runs: 3 critical, 2 warning, 7 healthy' (', 1 not checked' when there is one)."""
    c = status_counts(runs)
    return f"{len(runs)} run{'s' if len(runs) != 1 else ''}: " + ", ".join(f"{n} {s}" for s, n in c.items())


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def md_escape(text: str) -> str:
    """Escape a log-supplied string for GitHub Markdown prose: no emphasis, links or raw HTML; table-safe."""
    text = str(text).replace("&", "&amp;").replace("\r", " ").replace("\n", " ")
    return _MD_SPECIAL.sub(r"\\\1", text)


def md_code(text: str) -> str:
    """A log-supplied string as an inline code span (shown verbatim; backticks inside are fenced around)."""
    text = str(text).replace("\r", " ").replace("\n", " ")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def slug(name: str, limit: int = 60) -> str:
    """A file-name-safe form of a run name (for plot files next to a Markdown report)."""
    out = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "run"
    return out[:limit]
