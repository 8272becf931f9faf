"""Freed memory goes back to the system while a command runs, not seconds later.

A long log is read and diagnosed in phases whose working sets differ (the blocks of text, the
wide table, the tidy table, a rule's arrays). polars' allocator (jemalloc) keeps the pages a
phase freed for 10 s by default, so the peak memory of a command is about the sum of its phases
rather than the largest of them. Returning them after 300 ms costs no time that shows (315 MB
console log: peak 600-630 -> 550 MB); returning them at once saves more (480 MB) but costs about
3 s of system time in page faults, so it is left to the user's own `_RJEM_MALLOC_CONF`, which
wins over this default. Set once by the command line before polars is loaded; a program that
imports logdoctor keeps its own allocator settings.
"""
from __future__ import annotations

import os
import sys

#: polars' jemalloc reads its options from this variable when it starts (its own prefix: no other
#: library is touched).
_JEMALLOC_OPTIONS = ("_RJEM_MALLOC_CONF", "dirty_decay_ms:300,muzzy_decay_ms:0")


def return_freed_memory() -> None:
    """Ask polars' allocator to hand freed pages back promptly (before polars is loaded only)."""
    if "polars" not in sys.modules:
        os.environ.setdefault(*_JEMALLOC_OPTIONS)
