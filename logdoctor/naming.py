"""One name per run, the same in every format and command.

Readers name a run by its path relative to the analysed root
(`pl_flat_frozen_head_swap/lightning_logs/version_0`, or `.` when the root is
the run). That path says where the run is, but it changes with the PATH the
user typed, and half of it is what the logger writes on its own. The name
people read is the run's *own* name, found from where the run is on disk, never
from how it was pointed at: `analyze sweep/`, `analyze sweep/lightning_logs/version_17`
and `audit sweep/` all call that run `version_17`.

The own name is the nearest part of the run's location, from the run outwards,
that a person chose (`display_names`):

* a log file with a name of its own is named by its stem (`lr0.1_seed2.log` is
  `lr0.1_seed2`); one every run's writer uses (`metrics.csv`, `train.log`) is not;
* folders a logger makes for every run (`lightning_logs`, `wandb`, `mlruns`,
  `runs/detect`, `output`) never name a run;
* a numbered folder a logger makes (`version_17`, `run-20261122_031656-k6izagjo`,
  YOLO's `train3`) names the run only where it tells it from a sibling on disk
  (a sweep's `version_0 … version_40`); the lone `version_0` of a run folder a
  person named does not, and the name is that folder's.

Only when two runs of one report share an own name does each take its parent's
name in front (`lr0.1/seed0`, `lr0.2/seed0`), and so on up until they differ.
Terminal, Markdown, HTML, JSON, `inspect`, `replay` and `audit` all show this
name; the JSON `path` keeps where the run is on disk.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path, PurePosixPath

#: Folders a logger makes for every run, named the same in every run (or a checkpoint's): they never
#: name one.
_CONTAINERS = re.compile(
    r"lightning_logs|wandb|latest-run|mlruns|runs|detect|segment|classify|pose|obb|checkpoint(s|-\d+)?"
    r"|outputs?|logs?|tb_logs|tensorboard|files",
    re.I,
)
#: Folders a logger numbers inside its own folder, one per run: each family names a run only beside
#: a sibling of its own family (a sweep's `version_0 … version_40`), never alone.
_ID_FAMILIES = tuple(
    re.compile(p)
    for p in (
        r"version_\d+", r"(offline-)?run-\d{8}_\d{6}-\w+", r"[0-9a-f]{32}", r"\d+", r"train\d*", r"exp\d*",
        r"[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_.+",  # PyTorch SummaryWriter's runs/Mar24_22-23-40_HOST
    )
)
#: Folders a logger numbers that hold runs without being one: MLflow's experiment ids (mlruns/1/<run id>).
_EXPERIMENT_OF = {"mlruns"}
#: A log or checkpoint file: its stem, extensions off.
_FILE = re.compile(
    r"(?P<stem>.+?)\.(csv|tsv|jsonl?|wandb|log|txt|out|ckpt|pth?|bin|safetensors|h5|keras|db|sqlite3?)(\.gz)?"
    r"|(?P<tfevents>events\.out\.tfevents\..*)",
    re.I,
)
#: File stems writers give every run's log or checkpoint: such a file is no name of its own.
_GENERIC_STEMS = re.compile(
    r"metrics|log|logs|loss_log|training_log|results|trainer_state|trainer_log|output|nohup|train(ing)?|history|progress"
    r"|run-.*|wandb-history|ckpt|checkpoint|model|last|best|pytorch_model|optimizer|(epoch|step)=.*|mlflow",
    re.I,
)


def display_names(names: list[str], root: str) -> list[str]:
    """Each run's own name (see the module docstring), all distinct.

    `names` are the readers' names, relative to the analysed `root` (`.` for the run that is
    the root). Runs that share an own name take their parents' names in front until they
    differ; runs that still cannot be told apart keep their relative path.
    """
    if str(root) == "-":  # a console log read from stdin has no place on disk
        return list(names)
    listings: dict[str, tuple[str, ...]] = {}
    labels = [_labels(_location(name, str(root)), listings) for name in names]
    depth = [1] * len(names)
    while True:
        shown = ["/".join(reversed(ls[:d])) for ls, d in zip(labels, depth)]
        seen = Counter(shown)
        grown = [i for i, s in enumerate(shown) if seen[s] > 1 and depth[i] < len(labels[i])]
        if not grown:
            break
        for i in grown:
            depth[i] += 1
    return [s if seen[s] == 1 or name in ("", ".") else name for s, name in zip(shown, names)]


def root_label(root: str) -> str:
    """The own name of the run that *is* the analysed PATH (a run folder, log file or checkpoint):
    `…/run7/lightning_logs/version_0/checkpoints/epoch=3.ckpt` is `run7`."""
    return display_names(["."], root)[0]


def _location(name: str, root: str) -> list[str]:
    """Where the run is, part by part from the file-system root (a reader's own run name, such as
    MLflow's runName, is the last part)."""
    if "://" in root:
        base = list(PurePosixPath(root.rstrip("/")).parts)
    else:
        base = list(Path(root).resolve().parts)
    if name in ("", "."):
        return base
    if os.path.isabs(name):
        return list(Path(name).parts)
    return base + name.split("/")


def _labels(parts: list[str], listings: dict[str, tuple[str, ...]]) -> list[str]:
    """The parts of a location that can name its run, innermost first: the own name, then its
    parents' (for telling runs that share it apart). Never empty."""
    families = _id_families(parts)
    labels = []
    for i in range(len(parts) - 1, 0, -1):  # parts[0] is the anchor: `/`, `C:\\` or a URL's `s3:`
        part = parts[i]
        file = _FILE.fullmatch(part)
        if file:
            if file["stem"] and not _GENERIC_STEMS.fullmatch(file["stem"]):
                labels.append(file["stem"])
            continue
        if _CONTAINERS.fullmatch(part) or parts[i - 1].lower() in _EXPERIMENT_OF:
            continue
        if families[i] is None or _has_sibling(parts[:i], part, families[i], listings):
            labels.append(part)
    return labels or [parts[-1]]


def _id_families(parts: list[str]) -> list[re.Pattern | None]:
    """Per part, the numbered family it belongs to where a logger made it (inside a logger's
    folder: `lightning_logs/version_3`, `mlruns/0/<id>`, `runs/train/exp2`), else None: a person's
    `exp3` or `1` is a name."""
    families: list[re.Pattern | None] = []
    for i, part in enumerate(parts):
        made_by_logger = i > 0 and (_CONTAINERS.fullmatch(parts[i - 1]) or families[i - 1] is not None)
        families.append(next((f for f in _ID_FAMILIES if f.fullmatch(part)), None) if made_by_logger else None)
    return families


def _has_sibling(folder: list[str], part: str, family: re.Pattern, listings: dict[str, tuple[str, ...]]) -> bool:
    """Whether `folder` on disk holds another entry of `part`'s numbered family."""
    where = os.path.join(*folder) if folder else ""
    if where not in listings:
        try:
            listings[where] = tuple(os.listdir(where)) if where else ()
        except OSError:
            listings[where] = ()
    return any(entry != part and family.fullmatch(entry) for entry in listings[where])


_NUMBER = re.compile(r"(\d+(?:\.\d+)?(?:e[-+]?\d+)?)", re.I)


def natural_key(name: str) -> tuple:
    """Sort key that orders names as people read them: `version_2` before `version_10`,
    `lr0.001` before `lr0.01`, `lr1e-4` before `lr1e-3`. Numbers (decimals and exponents too)
    compare by value, the rest case-insensitively (ties broken by the exact text, so the order
    is total)."""
    parts = _NUMBER.split(str(name))  # text, number, text, number, ..., text: kinds never meet at one place
    return tuple(float(p) if i % 2 else p.casefold() for i, p in enumerate(parts)), str(name)


def fit_names(names: list[str], limit: int) -> list[str]:
    """Names cut to `limit` characters for a narrow column on a terminal, still all distinct.

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
