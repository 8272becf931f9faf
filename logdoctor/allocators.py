"""Freed memory goes back to the system while a command runs, not when it exits.

A long log is read and diagnosed in phases whose working sets differ (the blocks of text, the
wide table, the tidy table, a rule's arrays). Both allocators in the process keep what a phase
freed for a while: polars' jemalloc for 10 s by default, and glibc's malloc keeps numpy arrays
under its sliding mmap threshold (up to 32 MB: every array of a 3.5 M-point series) in a heap it
rarely shrinks. The peak memory of a command is then the sum of its phases rather than the
largest of them (315 MB console log: 560-640 MB peak, 490 MB with freed pages returned at once,
for the same CPU time). Set once by the command line before polars is loaded; a program that
imports logdoctor keeps its own allocator settings.
"""
from __future__ import annotations

import ctypes
import os
import sys

#: polars' jemalloc reads its options from this variable when it starts (its own prefix, so no
#: other library is touched): return freed pages at once instead of after 10 s.
_JEMALLOC_OPTIONS = ("_RJEM_MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0")
#: glibc: blocks from this size on are mapped on their own and unmapped when freed (a fixed
#: threshold also stops glibc raising it to the size of the last array freed).
_M_MMAP_THRESHOLD, _MMAP_FROM = -3, 4 << 20


def return_freed_memory() -> None:
    """Ask both allocators to hand freed memory back promptly (a no-op where they differ)."""
    if "polars" not in sys.modules:
        os.environ.setdefault(*_JEMALLOC_OPTIONS)
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6")
            libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_FROM)
        except (OSError, AttributeError):  # no glibc (musl): its malloc has no such threshold
            pass
