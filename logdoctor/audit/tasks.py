"""Units of audit work and their fingerprints.

A task is what one worker reads and diagnoses: a local run source found by
`logdoctor.ingest.discover`, or, for an fsspec URL (s3://, gs://, memory://,
file://...), one top-level folder of the audited tree that the worker fetches
and discovers itself (runs are read where they are, not shipped by the
client). A task's fingerprint covers the path, size and modification time of
every file it reads, so the cache can tell an unchanged run without reading it.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..ingest import Source, discover
from ..ingest.fs import walk


@dataclass
class Task:
    #: The audited root: run names are relative to it (a local path or a URL).
    root: str
    #: A local run source, or None for a remote unit.
    source: Source | None = None
    #: URL of a remote unit (a folder or file under `root`), or None.
    unit: str | None = None
    #: Only the files directly in `unit`, not its subfolders (loose files at the top of a URL).
    flat: bool = False
    #: Hash of the files' paths, sizes and modification times.
    fingerprint: str = ""
    #: Bytes to read (lets the executor skip a process pool for small audits).
    size: int = 0

    @property
    def ident(self) -> str:
        """Stable identity of the task across audits (what the cache is indexed by)."""
        if self.source is not None:
            return f"{self.source.format}:{Path(self.source.path).resolve()}"
        return f"url:{self.unit}{' (top-level files)' if self.flat else ''}"

    @property
    def label(self) -> str:
        return str(self.source.path) if self.source is not None else str(self.unit)


def is_url(path: str | os.PathLike) -> bool:
    return "://" in str(path)


def _digest(entries: list[Any]) -> str:
    return hashlib.sha1(json.dumps(entries, sort_keys=True, default=str).encode()).hexdigest()


def _local_files(source: Source) -> list[Path]:
    paths = list(source.files) or [Path(source.path)]
    out: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            for folder, _, names in walk(p):
                out.extend(Path(folder) / n for n in names)
        else:
            out.append(p)
    return sorted(set(out))


def local_task(root: Path, source: Source) -> Task:
    """A task for a local source, fingerprinted from a stat() of each of its files."""
    entries, size = [], 0
    for f in _local_files(source):
        try:
            st = f.stat()
            entries.append((str(f), st.st_size, st.st_mtime_ns))
            size += st.st_size
        except OSError:
            entries.append((str(f), None, None))
    fingerprint = _digest([source.format, str(source.path), entries])
    return Task(root=str(root), source=source, fingerprint=fingerprint, size=size)


def plan_local(root: Path, errors: list[str] | None = None) -> Iterator[Task]:
    """One task per run source discovered under a local path, as the walk finds them (an audit
    hands them to its workers while the walk goes on); the walk's lines (a folder it cannot
    enter, files it may not open) go to `errors`."""
    return (local_task(root, s) for s in discover(root, errors))


#: fsspec info keys that change when a file's content does, by backend.
_VERSION_KEYS = ("mtime", "LastModified", "updated", "last_modified", "ETag", "etag", "md5Hash", "created")


def _remote_version(info: dict[str, Any]) -> tuple:
    stamp = next((info[k] for k in _VERSION_KEYS if info.get(k) is not None), None)
    return (info.get("size"), str(stamp))


#: Files that make the folder holding them one run (together with its subfolders:
#: checkpoint-*/ trainer states, train/ + validation/ event files, W&B's files/).
_RUN_ANCHORS = re.compile(
    r"(events\.out\.tfevents\..*|trainer_state\.json|metrics\.csv|hparams\.yaml|args\.yaml|.*\.wandb"
    r"|wandb-summary\.json|wandb-history\.jsonl|config\.yaml|meta\.yaml)"
)


def plan_remote(url: str) -> list[Task]:
    """Tasks for an fsspec URL, from one listing of the tree.

    The root is one task when a file at its top marks it as a run (an event
    file, a trainer_state.json...). Otherwise each top-level folder is a task
    (a run or a group of runs, read and discovered by its worker) and any
    loose top-level files (per-run CSVs) are one more task.
    """
    import fsspec

    fs, root = fsspec.core.url_to_fs(url)
    protocol = url.split("://", 1)[0]
    root = root.rstrip("/")
    if not fs.exists(root):
        raise FileNotFoundError("no such file or folder")
    if fs.isfile(root):
        info = fs.info(root)
        return [Task(root=url, unit=url, fingerprint=_digest([root, _remote_version(info)]), size=info.get("size") or 0)]
    groups: dict[str, list] = {}
    for name, info in sorted(fs.find(root, detail=True).items()):
        rel = name[len(root):].lstrip("/") if name.startswith(root) else name
        parts = rel.split("/")
        if any(p.startswith(".") for p in parts):
            continue
        head = "" if len(parts) == 1 else parts[0]
        groups.setdefault(head, []).append((rel, _remote_version(info)))
    size = lambda entries: sum(e[1][0] or 0 for e in entries)  # noqa: E731
    if any(_RUN_ANCHORS.fullmatch(rel) for rel, _ in groups.get("", [])):
        everything = sorted(e for entries in groups.values() for e in entries)
        return [Task(root=url, unit=url, fingerprint=_digest(everything), size=size(everything))]
    return [
        Task(root=url, unit=url if not head else f"{protocol}://{root}/{head}", flat=not head,
             fingerprint=_digest(entries), size=size(entries))
        for head, entries in sorted(groups.items())
    ]


def plan(path: str | os.PathLike, errors: list[str] | None = None) -> list[Task]:
    """Every task under `path` (a local folder or file, or an fsspec URL), planned whole."""
    return plan_remote(str(path)) if is_url(path) else list(plan_local(Path(path), errors))
