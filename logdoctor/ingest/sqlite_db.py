"""Read-only access to a tracker's SQLite database (MLflow's `mlflow.db`, trackio's `<project>.db`).

The database is the user's, and a training process may be writing to it while it is read: it is
never written, never locked against that writer for longer than one SELECT, and never left with
files beside it that were not there before. The standard library's `sqlite3` reads it; no
tracker needs to be installed.

* Rollback-journal mode (MLflow's): opened `mode=ro` in autocommit, so each SELECT holds a shared
  lock only while it steps; a writer's commit waits that long (writers retry while busy; readers
  keep their statements short), and a writer holding its lock makes the read wait
  `BUSY_TIMEOUT_S`, then say so in one line.
* WAL mode (trackio's) with a `-wal` file beside it: a writer has it open (or died with it open).
  `mode=ro` reads the last committed state through the existing `-wal` and `-shm` files and never
  blocks the writer.
* WAL mode without a `-wal` file: no writer, every page in the main file. `mode=ro` would create
  empty `-wal` and `-shm` files beside it and, being read-only, leave them there, so it is opened
  `mode=ro&immutable=1` (no lock, no file). The trade-off: rows a writer that starts during the read
  commits are not seen (they go to a new `-wal` first), and the main file changes under the read
  only if that writer checkpoints, by default after 1,000 pages of WAL; should that happen, the
  read may fail as a damaged database (one line), and the next read sees it whole.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from ..model import Run
from . import Claim, ReadError, Source
from .fs import is_file, read_regular

#: File name endings a tracker gives its database (`sqlite:///runs.sqlite` works too).
DB_SUFFIXES = (".db", ".sqlite", ".sqlite3")
#: The files SQLite keeps beside a database while it is written.
SIDECARS = ("-wal", "-shm", "-journal")
#: How long a read waits for a writer's lock before saying the database is locked.
BUSY_TIMEOUT_S = 2.0

_MAGIC = b"SQLite format 3\x00"


def _header(path: Path) -> bytes:
    try:
        return read_regular(path, 100)
    except OSError:
        return b""


def is_sqlite(path: Path) -> bool:
    return _header(path).startswith(_MAGIC)


def sidecars(path: Path) -> list[Path]:
    """SQLite's working files beside `path` that exist now (their changes are the database's)."""
    return [p for p in (path.with_name(path.name + s) for s in SIDECARS) if is_file(p)]


def claim_databases(
    folder: Path,
    filenames: list[str],
    fmt: str,
    takes: Callable[[str, dict[str, set[str]] | None, sqlite3.Error | None], bool],
    owned: Callable[[Path], set[str]] = lambda path: set(),
) -> Claim | None:
    """The databases of `folder` a tracker's reader `fmt` takes (`takes(name, tables, problem)`), each
    a source with its working files beside it; `owned` names other files of the tracker's there."""
    got = Claim()
    for name in filenames:
        if not name.lower().endswith(DB_SUFFIXES):
            continue
        path = folder / name
        tables, problem = peek(path)
        if takes(name, tables, problem):
            got.sources.append(Source(fmt, path, [path, *sidecars(path)]))
            got.files.update({name, *(name + s for s in SIDECARS), *owned(path)})
    return got if got.sources else None


def open_readonly(path: Path) -> sqlite3.Connection:
    """A connection that cannot write `path` or leave files beside it (see the module doc)."""
    header = _header(path)
    wal = len(header) > 19 and header[18] == 2
    still = "&immutable=1" if wal and not is_file(path.with_name(path.name + "-wal")) else ""
    return sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro{still}", uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)


def schema(conn: sqlite3.Connection) -> dict[str, set[str]]:
    """Table name -> its column names."""
    names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {name: {row[1] for row in conn.execute(f'PRAGMA table_info("{name}")')} for name in names}


def has_tables(tables: dict[str, set[str]], signature: dict[str, set[str]]) -> bool:
    """Whether a schema holds every table of `signature`, each with at least its columns."""
    return all(columns <= tables.get(table, set()) for table, columns in signature.items())


def peek(path: Path) -> tuple[dict[str, set[str]] | None, sqlite3.Error | None]:
    """(the tables of the SQLite database at `path`, None) for a claim to tell whose it is;
    (None, the error) for an SQLite file that cannot be read now (locked, damaged), for a claim to
    take all the same so its reader says why; (None, None) for any other file. The tables of a file
    as it is now are kept (each format's claim asks about the same file in turn); an error is not,
    so a database once locked is looked at again."""
    if not is_sqlite(path):
        return None, None
    try:
        stat = path.stat()
        return _tables(path, stat.st_mtime_ns, stat.st_size), None
    except OSError:
        return None, None
    except sqlite3.Error as exc:
        return None, exc


@lru_cache(maxsize=64)
def _tables(path: Path, mtime_ns: int, size: int) -> dict[str, set[str]]:
    conn = open_readonly(path)
    try:
        return schema(conn)
    finally:
        conn.close()


def read_runs(path: Path, what: str, signature: dict[str, set[str]], runs: Callable[[sqlite3.Connection, dict[str, set[str]]], list[Run]]) -> list[Run]:
    """`runs(connection, tables)` of the database at `path` once its tables show it is `what`'s
    (`signature`); anything SQLite cannot do is one line (`ReadError`)."""
    try:
        conn = open_readonly(path)
        try:
            tables = schema(conn)
            if not has_tables(tables, signature):
                raise ReadError(f"{path}: not a database {what} wrote (no {', '.join(signature)} tables)")
            return runs(conn, tables)
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise read_error(path, exc) from None


def read_error(path: Path, exc: sqlite3.Error) -> ReadError:
    """One line saying why the SQLite database at `path` could not be read."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        why = f"locked by another process (a write in progress) for over {BUSY_TIMEOUT_S:g} s; not read, try again"
    elif "not a database" in text or "malformed" in text or "corrupt" in text:
        why = f"damaged ({text})"
    elif "readonly" in text or "read-only" in text:
        why = f"an interrupted write must be rolled back first, which a read-only reader may not do ({text})"
    else:
        why = f"cannot be read ({type(exc).__name__}: {text})"
    return ReadError(f"{path}: SQLite database {why}")
