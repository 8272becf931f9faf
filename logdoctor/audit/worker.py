"""What one worker (a local process or a Dask worker) does with one task.

`run_task` reads the task's runs where they are, diagnoses each and returns a
`TaskOutput` of compact `RunResult`s: never the scalar tables, never an
exception. A reader error, a rule bug or a crash inside the task becomes an
error line naming the file, so one bad run never stops the audit.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from .tasks import Task


@dataclass
class TaskOutput:
    results: list = field(default_factory=list)  # list[RunResult]
    errors: list[str] = field(default_factory=list)
    #: False when the task failed for a reason that may not repeat (worker crash): not cached.
    cacheable: bool = True


def limit_threads() -> None:
    """Process-pool initializer: one compute thread per worker process, and Ctrl-C left to the parent.

    With --jobs N the audit already keeps N cores busy; polars' and BLAS's own
    thread pools would only oversubscribe them. Runs before polars is imported
    in the worker (this package's __init__ imports nothing heavy). A Ctrl-C in
    the terminal reaches every process of the group: workers ignore it (each
    would print a traceback and carry on with its next task) and the parent
    stops them.
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for var in ("POLARS_MAX_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")


#: Rules built once per worker process and configuration.
_RULES: dict[str, list] = {}


def _rules(config):
    from ..diagnose import build_rules
    from .cache import config_hash

    key = config_hash(config)
    if key not in _RULES:
        _RULES[key] = build_rules(config)
    return _RULES[key]


def _diagnose(runs, config) -> list:
    from ..diagnose import diagnose_run
    from ..view import RunView
    from .result import RunResult

    rules = _rules(config)
    results = []
    for run in runs:  # one view per run: the diagnosis and the result's loss curves read the same index
        view = RunView(run, config.roles)
        results.append(RunResult.from_diagnosis(diagnose_run(run, config, rules, view), view))
    return results


def _run_local(task: Task, config) -> TaskOutput:
    from pathlib import Path

    from ..ingest import read_source

    runs, errors = read_source(task.source, Path(task.root))
    return TaskOutput(results=_diagnose(runs, config), errors=errors)


def _run_remote(task: Task, config) -> TaskOutput:
    """Fetch the unit's files into a scratch folder laid out like the remote tree, then read as usual."""
    import tempfile
    from pathlib import Path

    import fsspec

    from ..ingest import discover, read_source

    fs, root = fsspec.core.url_to_fs(task.root)
    _, unit = fsspec.core.url_to_fs(task.unit)
    root, unit = root.rstrip("/"), unit.rstrip("/")
    rel = lambda name: name[len(root):].lstrip("/")  # noqa: E731
    is_file = fs.isfile(unit)
    with tempfile.TemporaryDirectory(prefix="logdoctor-audit-") as tmp:
        scratch = Path(tmp) / "root"
        if unit == root and is_file:  # the audited URL is a single log file
            files, start, base = [(unit, Path(unit).name)], scratch / Path(unit).name, scratch / Path(unit).name
        else:
            names = [unit] if is_file else fs.find(unit, maxdepth=1) if task.flat else fs.find(unit)
            files = [(n, rel(n)) for n in names if not any(p.startswith(".") for p in rel(n).split("/"))]
            start, base = scratch / rel(unit), scratch
        for name, target in files:
            (scratch / target).parent.mkdir(parents=True, exist_ok=True)
            fs.get_file(name, str(scratch / target))
        runs, errors = [], []
        for source in discover(start):
            got, errs = read_source(source, base)
            runs.extend(got)
            errors.extend(errs)
        # name things by their URL, not the scratch copy
        local, remote = (str(start), task.root) if base == start else (str(scratch), task.root.rstrip("/"))
        for run in runs:
            run.path = run.path.replace(local, remote, 1)
            run.warnings = [w.replace(local, remote) for w in run.warnings]
        errors = [e.replace(local, remote) for e in errors]
        return TaskOutput(results=_diagnose(runs, config), errors=errors)


def run_task(task: Task, config) -> TaskOutput:
    try:
        if task.source is not None:
            return _run_local(task, config)
        return _run_remote(task, config)
    except MemoryError:
        return TaskOutput(errors=[f"{task.label}: ran out of memory auditing this run"], cacheable=False)
    except Exception as exc:  # noqa: BLE001 - one task's failure must not stop the audit
        return TaskOutput(errors=[f"{task.label}: audit failed ({type(exc).__name__}: {exc})"], cacheable=False)


def run_tasks(tasks: list[Task], config) -> list[TaskOutput]:
    """`run_task` for each task of a batch (one round trip to a worker process), in order."""
    return [run_task(task, config) for task in tasks]
