"""Run audit tasks: in this process, on a pool of local processes, or on a Dask cluster.

Tasks travel as paths (a run source or a URL), never as data; results come
back as compact `RunResult`s. `on_done(task, output)` is called in the main
process as each task finishes (in completion order), which drives the
progress bar and the cache. A task whose worker dies becomes an error line.
"""
from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from itertools import chain

from .tasks import Task
from .worker import TaskOutput, limit_threads, run_task, run_tasks

Done = Callable[[Task, TaskOutput], None]

#: Below this many bytes to read, starting worker processes (each imports
#: polars, scipy and the rules: about a second) costs more than it saves.
POOL_MIN_BYTES = 4 << 20
#: Most tasks handed to a worker process at once (`batches`).
MAX_BATCH = 32
#: How long to keep trying to reach a Dask scheduler before giving up.
CONNECT_TIMEOUT = "10s"


class SchedulerError(Exception):
    """The Dask scheduler cannot be used; str() is the one line shown to the user."""


def _crashed(task: Task, exc: BaseException) -> TaskOutput:
    return TaskOutput(errors=[f"{task.label}: audit worker failed ({type(exc).__name__}: {exc})"], cacheable=False)


def run_serial(tasks: Iterable[Task], config, on_done: Done) -> None:
    for task in tasks:
        on_done(task, run_task(task, config))


def run_processes(tasks: Iterable[Task], config, jobs: int, on_done: Done) -> int:
    """A spawn-context process pool (fork is unsafe once polars' thread pool exists), fed in batches
    (`batches`) as `tasks` yields them: workers start on the first runs while the plan goes on.
    Returns how many tasks it ran.

    Interrupted (Ctrl-C), the pool is stopped at once: queued tasks are dropped and the workers killed
    mid-run, since leaving the `with` block would wait for every task already handed out. What finished
    is in the cache already (`on_done` runs as each batch ends).
    """
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=limit_threads)
    try:
        futures = {pool.submit(run_tasks, batch, config): batch for batch in batches(tasks, jobs)}
        for future in as_completed(futures):
            batch = futures[future]
            try:
                outputs = future.result()
            except Exception as exc:  # noqa: BLE001 - a dead worker costs its tasks, not the audit
                outputs = [_crashed(task, exc) for task in batch]
            for task, output in zip(batch, outputs):
                on_done(task, output)
    except BaseException:
        _stop(pool)
        raise
    pool.shutdown()
    return sum(len(batch) for batch in futures.values())


def batches(tasks: Iterable[Task], jobs: int) -> Iterator[list[Task]]:
    """The tasks in consecutive batches, one per round trip to a worker: a task alone cost the main
    process a future, two pickles and a wake-up (10,000 runs, 2 jobs: 16.3 CPU-s of the main process,
    10.6 in batches; CPU taken from the workers where there are as many cores as jobs). A batch holds
    an eighth of a worker's share of the tasks seen so far, at most `MAX_BATCH`: the first runs go out
    one by one (workers start at once, and a small audit is spread evenly), later ones in batches."""
    batch: list[Task] = []
    for seen, task in enumerate(tasks, 1):
        batch.append(task)
        if len(batch) >= min(MAX_BATCH, max(1, seen // (8 * jobs))):
            yield batch
            batch = []
    if batch:
        yield batch


def _stop(pool: ProcessPoolExecutor) -> None:
    """Drop the queued tasks and kill the workers (Python 3.14's `kill_workers`; before it, its processes,
    taken before `shutdown` forgets them)."""
    kill = getattr(pool, "kill_workers", None)
    if kill is not None:
        kill()
    else:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)


def run_dask(tasks: Sequence[Task], config, scheduler: str, on_done: Done) -> None:
    """Submit every task to a running dask.distributed scheduler (`tcp://host:port`)."""
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError:
        raise SchedulerError(
            "--scheduler needs dask.distributed, which is not installed (pip install 'logdoctor[dask]')"
        ) from None
    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        raise SchedulerError(f"cannot reach the Dask scheduler at {scheduler} ({exc})") from None
    try:
        futures = client.map(run_task, list(tasks), config=config, pure=False) if tasks else []
        index = {f.key: t for f, t in zip(futures, tasks)}
        for future in dask_completed(futures):
            task = index[future.key]
            try:
                output = future.result()
            except Exception as exc:  # noqa: BLE001 - a lost worker costs its task, not the audit
                output = _crashed(task, exc)
            on_done(task, output)
    finally:
        client.close()


def execute(tasks: Iterable[Task], config, on_done: Done, jobs: int = 1, scheduler: str | None = None) -> str:
    """Run every task; returns how, in words ("2 processes", "this process", "Dask at tcp://...").

    `tasks` may be a plan still walking the tree: locally, a pool starts as soon as the tasks seen
    hold `POOL_MIN_BYTES` to read (two tasks at least) and takes them as they come; below that, at
    the plan's end, they run in this process."""
    if scheduler:  # connect even with nothing to do: a wrong address is reported either way
        run_dask(list(tasks), config, scheduler, on_done)
        return f"Dask at {scheduler}"
    held: list[Task] = []
    rest = iter(tasks)
    if jobs > 1:
        size = 0
        for task in rest:
            held.append(task)
            size += task.size
            if size >= POOL_MIN_BYTES and len(held) > 1:
                ran = run_processes(chain(held, rest), config, jobs, on_done)
                return f"{min(jobs, ran)} processes"
    run_serial(chain(held, rest), config, on_done)
    return "this process"

