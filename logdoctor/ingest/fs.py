"""Filesystem questions a claim asks, answered without raising.

A run folder another user owns (mode 700 in a shared sweep folder) or a symlink loop makes
`Path.is_file()` raise instead of answering; asked while a format claims a folder, that one
entry would cost the whole walk. Here such an entry is simply not a file (not a folder): the
walk itself then reports the folder it cannot list, once, and reads everything beside it.
"""
from __future__ import annotations

import os
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
