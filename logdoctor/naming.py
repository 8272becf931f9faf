"""One name per run, the same in every format and command.

Readers name a run by its path relative to the analysed root
(`pl_flat_frozen_head_swap/lightning_logs/version_0`, or `.` when the root is
the run). That path identifies the run, but half of it is what the logger
writes on its own, the same in every run. `display_names` is the one function
that turns those paths into the names people read: terminal, Markdown, HTML,
JSON, `inspect` and `audit` all show its result (the JSON `path` keeps where
the run is on disk).
"""
from __future__ import annotations

import re
from pathlib import Path, PurePath

#: Path parts a logger writes on its own, never chosen by the person who ran it: they are the
#: same in every run, so they tell runs apart by nothing (Lightning, W&B, MLflow ids, YOLO's
#: runs/<task>/train, a run's own log file).
_BOILERPLATE = re.compile(
    r"""lightning_logs|version_\d+|wandb|(offline-)?run-\d{8}_\d{6}-\w+|latest-run|mlruns|\d+|[0-9a-f]{32}
    |runs|detect|segment|classify|pose|obb|train\d*|checkpoints?|checkpoint-\d+
    |.+\.(csv|tsv|gz|json|jsonl|wandb|log|txt|out)|events\.out\.tfevents\..*""",
    re.VERBOSE,
)
#: File stems writers give every run's log or checkpoint: a run given as such a file is named after
#: its folder.
_GENERIC_STEMS = re.compile(
    r"metrics|log|logs|results|trainer_state|output|nohup|train(ing)?|history|progress|events\.out\.tfevents\..*|run-.*"
    r"|wandb-history|ckpt|checkpoint|model|last|best|pytorch_model|optimizer|(epoch|step)=.*",
    re.I,
)


def root_label(root: str) -> str:
    """The name of a run that *is* the analysed PATH: the nearest folder at or above it that a
    person named (`…/pl_run/lightning_logs/version_0` is `pl_run`), or for a log file with a
    name of its own (`lr0.1.log`), its stem."""
    text = str(root)
    path = PurePath(text.rstrip("/")) if "://" in text else Path(text).resolve()
    if path.suffix and not path.name.startswith("."):
        stem = path.stem.removesuffix(".csv")
        if not _GENERIC_STEMS.fullmatch(stem):
            return stem
        path = path.parent
    while _BOILERPLATE.fullmatch(path.name) and path.parent.name:
        path = path.parent
    return path.name or text


def display_names(names: list[str], root: str) -> list[str]:
    """Each run's name without the parts that tell runs apart by nothing; all distinct.

    Drops writer boilerplate (`lightning_logs/version_0`, `wandb/offline-run-…`,
    `mlruns/<exp>/<id>`, `runs/detect/train`, a trailing `log.csv`) and the
    leading folders every run shares. A run left with no part of its own is
    named after the analysed PATH (`root_label`), never `.`; names that would
    collide keep their full relative path.
    """
    anchor = root_label(root)
    full = [[anchor] if name in ("", ".") else name.split("/") for name in names]
    kept = [_distinct([p for p in parts if not _BOILERPLATE.fullmatch(p)]) or parts for parts in full]
    if len(full) == 1:
        return ["/".join(_distinct([p for p in full[0] if not _BOILERPLATE.fullmatch(p)])) or anchor]
    short = _unshared(kept)
    fallback = _unshared(full)
    seen: dict[str, int] = {}
    for s in short:
        seen[s] = seen.get(s, 0) + 1
    return [s if seen[s] == 1 else f for s, f in zip(short, fallback)]


def _distinct(parts: list[str]) -> list[str]:
    """Parts without a repeat of the one before (MLflow names a run folder like its experiment)."""
    return [p for i, p in enumerate(parts) if i == 0 or p != parts[i - 1]]


def _unshared(parts: list[list[str]]) -> list[str]:
    """Each path without the leading folders all of them share (always keeping its last part)."""
    shared = 0
    while len(parts) > 1 and all(len(p) > shared + 1 and p[shared] == parts[0][shared] for p in parts):
        shared += 1
    return ["/".join(p[shared:]) for p in parts]


_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple:
    """Sort key that orders names as people read them: `version_2` before `version_10`,
    `lr1e-4` beside `lr1e-3`. Digit runs compare as numbers, the rest case-insensitively
    (ties broken by the exact text, so the order is total)."""
    parts = _DIGITS.split(str(name))  # text, digits, text, digits, ..., text: kinds never meet at one place
    return tuple(int(p) if i % 2 else p.casefold() for i, p in enumerate(parts)), str(name)


def fit_names(names: list[str], limit: int) -> list[str]:
    """Names cut to `limit` characters for a narrow column, still all distinct.

    A cut keeps both ends (the head names the experiment, the tail the seed or trial): a
    third of the room for the head by default; where two cut names would read the same,
    the cut moves so the characters that tell them apart stay in view.
    """
    cut = [middle_ellipsis(n, limit) for n in names]
    for i, name in enumerate(names):
        if name == cut[i] or cut.count(cut[i]) == 1:
            continue
        others = {c for j, c in enumerate(cut) if j != i}
        for head in range(limit - 1, -1, -1):
            candidate = _cut(name, head, limit - 1 - head)
            if candidate not in others:
                cut[i] = candidate
                break
    return cut


def middle_ellipsis(name: str, limit: int) -> str:
    """A long run name cut in the middle, a third of the room for its head, the rest for its tail."""
    if len(name) <= limit:
        return name
    head = (limit - 1) // 3
    return _cut(name, head, limit - 1 - head)


def _cut(name: str, head: int, tail: int) -> str:
    return f"{name[:head]}…{name[len(name) - tail:] if tail else ''}"
