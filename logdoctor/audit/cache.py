"""Per-task result cache, so re-auditing a sweep re-reads only what changed.

One small JSON file per task under the cache folder, named by a hash of the
task's identity (format + resolved path, or URL). It stores the task's
fingerprint (file paths, sizes, mtimes) salted with everything else that
decides the result: the logdoctor version, a fingerprint of logdoctor's own
source files (so editing a rule invalidates old results) and the effective
configuration. A hit needs every part to match; anything unreadable is a miss.
Writes go to a temporary file and are renamed into place, so an interrupted
audit never leaves a half-written entry.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from functools import cache
from pathlib import Path

from .. import __version__
from .result import RunResult
from .tasks import Task
from .worker import TaskOutput

#: The shape of a stored result; bumped when `RunResult` changes (2: thinned loss curves), so older
#: entries read as misses and are re-read rather than loaded without their new fields.
CACHE_FORMAT = 2


def config_hash(config) -> str:
    """Hash of the configuration fields that change a diagnosis (not where it was read from)."""
    data = asdict(config)
    data.pop("source", None)
    return hashlib.sha1(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


#: Parts of logdoctor that never change a run's result (rendering, replay, the CLI).
_NOT_IN_RESULTS = ("report", "replay", "cli.py", "ruledocs.py", "__main__.py", "audit/render.py", "audit/page.py")


@cache
def code_fingerprint() -> str:
    """Sizes and mtimes of the .py files that compute results: a changed rule or reader means stale results."""
    package = Path(__file__).resolve().parents[1]
    entries = sorted(
        (rel, p.stat().st_size, p.stat().st_mtime_ns)
        for p in package.rglob("*.py")
        if not (rel := p.relative_to(package).as_posix()).startswith(_NOT_IN_RESULTS)
    )
    return hashlib.sha1(json.dumps(entries).encode()).hexdigest()[:16]


class ResultCache:
    def __init__(self, folder: Path, config):
        self.folder = Path(folder)
        self.salt = f"{CACHE_FORMAT}:{__version__}:{code_fingerprint()}:{config_hash(config)}"

    def _file(self, task: Task) -> Path:
        name = hashlib.sha1(task.ident.encode()).hexdigest()
        return self.folder / name[:2] / f"{name[2:]}.json"

    def _key(self, task: Task) -> str:
        return hashlib.sha1(f"{self.salt}:{task.fingerprint}".encode()).hexdigest()

    def get(self, task: Task) -> TaskOutput | None:
        try:
            data = json.loads(self._file(task).read_text(encoding="utf-8"))
            if data.get("key") != self._key(task) or data.get("ident") != task.ident:
                return None
            return TaskOutput(results=[RunResult.from_dict(r) for r in data["results"]], errors=list(data["errors"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, task: Task, output: TaskOutput) -> None:
        """Store a task's output; a cache that cannot be written is skipped silently (it is only a cache)."""
        if not output.cacheable:
            return
        path = self._file(task)
        doc = {
            "ident": task.ident,
            "key": self._key(task),
            "salt": self.salt,  # what the key was made of besides the files (to tell why an entry went stale)
            "fingerprint": task.fingerprint,
            "results": [r.to_dict() for r in output.results],
            "errors": output.errors,
        }
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(doc), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass
