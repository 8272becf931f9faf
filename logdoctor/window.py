"""What a pasted console log's window can show, and what it cannot.

A console log is often a paste: the lines someone copied into an issue thread,
part of a run that started long before and went on after. Such a window shows
some faults in a few lines (a NaN, an exact repeat, a blow-up by orders of
magnitude, an LR of 0, a run of overflow halvings, a spike that recovers) but
not the shape of the whole run:

* a log that **starts mid-run** (its epoch or step counter is already well
  along at its first point: `learning`'s test) shows no start, so a fall "far
  too slow to matter" (`crawl`) cannot be judged from it;
* a log with **no counter at all** (bare `loss=` prints, read by row number)
  of fewer than `MIN_OPENING_POINTS` losses may be just the opening of a
  longer run (35 batches of an MNIST loop, 2.295 -> 1.88): how slow the fall
  is for the whole run (`crawl`) is not on the page either;
* a log of **few points** (fewer than `MIN_POINTS` finite losses, or than
  `MIN_MID_RUN_POINTS` in a window that starts mid-run) cannot show a plateau
  or a bounce beyond its noise either (`flat`, `crawl`,
  `oscillate`), unless the loss repeats itself exactly (a `flat` whose
  evidence says `constant`) or sits at the chance level the run's K gives.

Those findings are withdrawn, and one `not_checked` remark says what was left
unjudged and why ("too short to judge: flat, crawl"), so the run is never
called healthy for what nobody could see. Only console logs are treated so:
a logger's files (TensorBoard, CSV, W&B...) hold the run from its start.
"""
from __future__ import annotations

from .ingest.csv_steps import ROW_STEP_NOTE
from .learning import _starts_mid_run
from .model import Finding
from .rules import all_rules
from .rules._loss import loss_series
from .view import RunView

#: Formats whose logs may be a window of a run (a paste).
WINDOW_FORMATS = ("text_log",)
#: Fewer finite loss points than this: a plateau or a bounce cannot be told from noise; fewer than
#: the second in a window that starts mid-run (with no start to measure a fall from).
MIN_POINTS, MIN_MID_RUN_POINTS = 8, 10
#: Fewer finite loss points than this in a log with no counter: perhaps only a run's opening.
MIN_OPENING_POINTS = 50
#: Codes a window starting mid-run (or showing only an opening) cannot show; and a window of few points.
MID_RUN_CODES = ("crawl",)
FEW_POINTS_CODES = ("flat", "crawl", "oscillate")


def within_window(findings: list[Finding], view: RunView) -> list[Finding]:
    """The findings a console log's window can show, plus a `not_checked` remark naming the codes
    it cannot (see the module doc); other formats and full runs come back as they are."""
    if view.run.format not in WINDOW_FORMATS or any(f.code == "not_checked" for f in findings):
        return findings  # a logger's files hold the whole run; a loss already unjudged says so
    losses = loss_series(view)
    if not losses:
        return findings
    loss = losses[0]
    points = int(loss.finite.sum())
    if points < all_rules()["not_checked"].defaults["min_points"]:
        return findings  # `not_checked` already says the loss has too few points to judge
    mid_run = _starts_mid_run(view, loss)
    few = points < (MIN_MID_RUN_POINTS if mid_run else MIN_POINTS)
    opening = not mid_run and points < MIN_OPENING_POINTS and any(ROW_STEP_NOTE in note for note in view.run.notes)
    if not (few or mid_run or opening):
        return findings
    unjudged = FEW_POINTS_CODES if few else MID_RUN_CODES
    kept = [f for f in findings if f.code not in unjudged or _seen_in_any_window(f)]
    if few:
        why = f"{points} loss points"
    elif mid_run:
        why = "the log starts mid-run: its first point is no start"
    else:
        why = f"{points} loss points with no step counter: perhaps only the opening of a longer run"
    rule = all_rules()["not_checked"]()
    remark = rule.finding(
        loss,
        title=f"too short to judge: {', '.join(unjudged)} ({why})",
        steps=(int(loss.steps[0]), int(loss.steps[-1])),
        confidence=1.0,
        evidence={"checked": "what a window shows: NaN / inf, blow-ups, exact repeats, spikes, LR and loss-scale faults", "points": points},
    )
    return [*kept, remark]


def _seen_in_any_window(f: Finding) -> bool:
    """A finding any window shows: a loss repeated exactly, or one sitting at its chance level."""
    return bool(f.evidence.get("constant")) or "ln_k" in f.evidence or "chance_level" in f.evidence
