"""Orchestration of one audit: plan, cache, execute, summarise."""
from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ..config import Config
from ..ingest import ReadError, check_root
from ..model import printable
from .cache import ResultCache
from .executor import execute
from .effects import find_effects
from .importance import WARM_RUNS, drop_confounded, rank_settings, warm_up
from .links import find_links
from .summary import AuditReport, swept_settings
from .tasks import Task, is_url, plan, plan_local
from .worker import TaskOutput

class Interrupted(KeyboardInterrupt):
    """Ctrl-C during an audit; str() is the one line for the user: how far it got and how to go on."""

    def __init__(self, done: int, total: int, cached: bool):
        super().__init__(done, total, cached)
        self.done, self.total, self.cached = done, total, cached

    def __str__(self) -> str:
        if self.cached:
            return (f"interrupted: {self.done} of {self.total} runs done and cached; "
                    "run the same command again to resume from the cache")
        return f"interrupted: {self.done} of {self.total} runs done (--no-cache: nothing kept, a rerun starts over)"


def user_cache_home() -> Path:
    """The user's cache folder (XDG: `$XDG_CACHE_HOME`, else `~/.cache`)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def default_cache_dir(path: str | os.PathLike) -> Path:
    """`<user cache>/logdoctor/audit/<key>/`, one folder per audited path (its absolute form, or the URL).

    Never inside the audited folder: a cache written there shows in `git status`,
    travels with copies of the sweep and fails on read-only shares.
    """
    where = str(path) if is_url(path) else str(Path(path).resolve())
    key = hashlib.sha1(where.encode()).hexdigest()[:16]
    return user_cache_home() / "logdoctor" / "audit" / key


def _plan(path: str | os.PathLike, absolute: bool, errors: list[str]) -> Iterable[Task]:
    """The audit's tasks: a URL's listed at once, a local tree's as its walk finds them."""
    if is_url(path):
        try:
            return plan(str(path))
        except ImportError as exc:  # fsspec itself, or the backend for this protocol (s3fs, gcsfs...)
            hint = " (pip install 'logdoctor[dask]')" if exc.name == "fsspec" else ""
            raise ReadError(f"{path}: cannot read this URL ({exc}){hint}") from None
        except (OSError, ValueError) as exc:
            raise ReadError(f"{path}: cannot list this URL ({type(exc).__name__}: {exc})") from None
    p = Path(path)
    check_root(p)  # missing, behind a folder that cannot be entered, a pipe or a device: one line
    return plan_local(p.absolute() if absolute else p, errors)


def audit(
    path: str | os.PathLike,
    config: Config | None = None,
    *,
    jobs: int | None = None,
    scheduler: str | None = None,
    cache_dir: str | os.PathLike | None = None,
    use_cache: bool = True,
    rank_by: str = "final",
    progress: Callable[[int, int], None] | None = None,
) -> AuditReport:
    """Diagnose every run under `path` (a folder, file or fsspec URL) and summarise the sweep.

    `jobs` local worker processes (default: one per core) or, with
    `scheduler`, the workers of a running Dask cluster. Unchanged runs are
    answered from the cache unless `use_cache` is False.
    """
    config = config or Config()
    jobs = jobs or os.cpu_count() or 1
    started = time.perf_counter()
    # Dask workers may run elsewhere: hand them absolute paths.
    walked: list[str] = []  # the walk's own lines: folders it cannot enter, files it may not open
    planned = _plan(path, absolute=bool(scheduler), errors=walked)
    cache = ResultCache(Path(cache_dir) if cache_dir else default_cache_dir(path), config) if use_cache else None
    outputs: dict[int, TaskOutput] = {}
    tasks: list[Task] = []
    read = 0

    def done(task: Task, output: TaskOutput) -> None:
        outputs[id(task)] = output
        if cache:
            cache.put(task, output)
        if progress:
            progress(len(outputs), len(tasks))

    def todo() -> Iterator[Task]:
        """The planned tasks the cache cannot answer, as the plan finds them (reading 10,000 cache
        entries takes seconds too, and the workers need not wait for the walk to end)."""
        nonlocal read
        for task in planned:
            tasks.append(task)
            hit = cache.get(task) if cache else None
            if hit is not None:
                outputs[id(task)] = hit
            else:
                read += 1
                if read == WARM_RUNS:
                    warm_up()
                yield task
        if progress:
            progress(len(outputs), len(tasks))

    try:  # Ctrl-C from here on: one line saying how far it got (what is done is cached)
        how = execute(todo(), config, done, jobs=jobs, scheduler=scheduler)
        results = [r for task in tasks for r in outputs[id(task)].results]
        errors = [printable(e) for e in walked] + [e for task in tasks for e in outputs[id(task)].errors]
        analysed = time.perf_counter()
        links = find_links(results)
        swept = swept_settings(results)
        effects = find_effects(results, swept, rank_by)
        importance = rank_settings(results, swept, effects, rank_by)
        effects = drop_confounded(effects, importance)
        analysed = time.perf_counter() - analysed
    except KeyboardInterrupt:
        raise Interrupted(len(outputs), len(tasks), cache is not None) from None
    stats = {
        "tasks": len(tasks),
        "cached": len(tasks) - read,
        "read": read,
        "jobs": None if scheduler else jobs,
        "scheduler": scheduler,
        "executor": how,
        "seconds": round(time.perf_counter() - started, 3),
        #: of which the statistics: links, effects and the importance ranking
        "analysis_seconds": round(analysed, 3),
    }
    return AuditReport(root=str(path), results=results, errors=errors, links=links, rank_by=rank_by, stats=stats,
                       effects=effects, importance=importance)
