"""Filesystem questions a claim asks, answered without raising.

A run folder another user owns (mode 700 in a shared sweep folder) or a symlink loop makes
`Path.is_file()` raise instead of answering; asked while a format claims a folder, that one
entry would cost the whole walk. Here such an entry is simply not a file (not a folder): the
walk itself then reports the folder it cannot list, once, and reads everything beside it.
A FIFO, socket or device among the files (`train.log -> /dev/zero`) is no log: opening one can
block forever or never reach its end, so the walk never hands one to a reader, and one given as
PATH is refused by its kind. A file this user may not open (mode 600, another user's) is named
in a line of its own, never passed over in silence (`permission_denied`). The walk
itself keeps a stack instead of recursing: Python 3.11's `os.walk` recurses once per level,
and a folder nested 1,000 deep raised RecursionError and lost every run beside it.
"""
from __future__ import annotations

import errno
import functools
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path


def is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:
        return False


def is_dir(path: Path | os.DirEntry) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


#: Special entries by kind, in the words a line about one uses.
_SPECIAL_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def special_kind(path: str | os.PathLike) -> str | None:
    """What an entry that is neither a regular file nor a folder is, in words, links followed (`a
    named pipe (FIFO)`, `a character device`); None for a file, a folder, or an entry that cannot be
    looked at (its reader reports that)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((words for test, words in _SPECIAL_KINDS if test(mode)), "a special file")


def is_special(path: str | os.PathLike) -> bool:
    return special_kind(path) is not None


@functools.cache
def _identity() -> tuple[int, frozenset[int]]:
    """This process's user and groups, which decide which of a file's read bits apply to it."""
    return os.geteuid(), frozenset([os.getegid(), *os.getgroups()])


def permission_denied(path: str | os.PathLike) -> bool:
    """True for a file this user may not open for reading (a sniffing claim would only see no log).
    A file whose mode lets this user read it (most of them) is not opened: the walk asks this of
    every file no format took (a folder of 20,000 images: 0.7 s of opens)."""
    try:
        st = os.stat(path)
        uid, groups = _identity()
        bit = stat.S_IRUSR if st.st_uid == uid else stat.S_IRGRP if st.st_gid in groups else stat.S_IROTH
        if st.st_mode & bit:
            return False
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))  # root, or an ACL, may read it all the same
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def walk(root: str | os.PathLike, onerror: Callable[[OSError], None] = lambda exc: None) -> Iterator[tuple[str, list[str], list[str]]]:
    """`os.walk(root, onerror=onerror)` top-down (prune by editing the yielded folder list; links
    to folders are listed, not entered) at any depth."""
    stack = [os.fspath(root)]
    while stack:
        top = stack.pop()
        try:
            with os.scandir(top) as listing:
                entries = list(listing)
        except OSError as exc:
            onerror(exc)
            continue
        dirs = [e.name for e in entries if is_dir(e)]
        listed = set(dirs)
        yield top, dirs, [e.name for e in entries if e.name not in listed]
        for name in reversed(dirs):
            path = os.path.join(top, name)
            if not os.path.islink(path):
                stack.append(path)


def files_under(folder: Path) -> list[Path]:
    """The regular files anywhere under `folder`, sorted (unlistable folders and special entries passed over)."""
    return sorted(Path(top) / name for top, _, names in walk(folder) for name in names if not is_special(Path(top) / name))


def polars_source(path: Path) -> str | bytes:
    """What to hand polars for `path`: the path itself, or, when the name is not UTF-8 (a Latin-1
    `résultats/` copied from another machine, carried as lone surrogates), the file's bytes:
    polars takes a path only as UTF-8 text (TypeError, and the run was lost)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return Path(path).read_bytes()
    return str(path)


def read_regular(path: Path, limit: int = -1) -> bytes:
    """The bytes of a regular file, at most `limit`; OSError for anything else (a side file such as
    an MLflow tag or a YAML config, named rather than walked to, can be a pipe or a device too)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a pipe opens at once instead of waiting for a writer
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(limit)
    finally:
        os.close(fd)
