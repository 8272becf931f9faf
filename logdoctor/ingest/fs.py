"""Filesystem questions a claim asks, answered without raising.

A run folder another user owns (mode 700 in a shared sweep folder) or a symlink loop makes
`Path.is_file()` raise instead of answering; asked while a format claims a folder, that one
entry would cost the whole walk. Here such an entry is simply not a file (not a folder): the
walk itself then reports the folder it cannot list, once, and reads everything beside it.
A FIFO, socket or device among the files (`train.log -> /dev/zero`) is no log: opening one can
block forever or never reach its end, so the walk never hands one to a reader.
"""
from __future__ import annotations

import os
import stat
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


def is_special(path: Path | os.DirEntry) -> bool:
    """True for an entry that is neither a regular file nor a folder, links followed (a FIFO, a
    socket, a device); False for one that cannot be looked at (its reader reports that)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))
