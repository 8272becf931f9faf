"""How a console log ends: on an error that stopped the run, or not.

What people paste most is the end of a run that died: a traceback ending in
`torch.OutOfMemoryError: CUDA out of memory`, an NCCL watchdog timeout,
DeepSpeed's `Current loss scale already at minimum`, the shell's `Killed`. The
curve before it may look fine; the run still did not finish. This module reads
the last lines of a log and returns the line that says why it stopped, by
class of ending, most specific first:

* out of memory (CUDA, HIP, MPS, TensorFlow's `ResourceExhaustedError`, a
  cuBLAS allocation failure);
* a collective that timed out or a worker group that failed (NCCL, Gloo,
  torchrun's `ChildFailedError`);
* mixed precision out of room (`loss scale already at minimum`, fairseq's
  `Minimum loss scale reached`);
* the process killed from outside (`Killed`, a segmentation fault, a core
  dump, SIGKILL / exit code -9);
* any other traceback: its last exception line (`RuntimeError: ...`,
  `KeyboardInterrupt`).

An ending counts only where no loss value is printed after it: a warning
traceback in the middle of a run that goes on is no ending.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

#: Non-blank lines at the end of a log searched for its ending.
TAIL_LINES = 60
#: Bytes read from the end of a file to find its last lines.
TAIL_BYTES = 16 * 1024

#: Endings by class, most specific first: (class, pattern of the line that says it).
_ENDINGS = (
    ("out of memory", re.compile(
        r"out of memory|OutOfMemoryError|ResourceExhaustedError|\bOOM when allocating|CUBLAS_STATUS_ALLOC_FAILED", re.IGNORECASE)),
    ("distributed timeout", re.compile(
        r"(?:NCCL|Gloo|collective operation|watchdog)\b.*\b(?:time[ds]? ?out|timeout)|ChildFailedError|"
        r"NCCL error|ProcessGroupNCCL.*(?:abort|terminat)", re.IGNORECASE)),
    ("loss scale at its minimum", re.compile(r"loss scale already at minimum|minimum loss scale reached", re.IGNORECASE)),
    ("killed", re.compile(r"(?:^|[\s:])Killed(?:\s|$)|Segmentation fault|core dumped|\bSIGKILL\b|\bSIGSEGV\b|exitcode\s*:\s*-9\b")),
)
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)")
#: The last line of a traceback: `RuntimeError: ...`, `torch.OutOfMemoryError: ...`, `KeyboardInterrupt`.
_EXCEPTION = re.compile(r"^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Failure)\b(?::.*)?$")


def ending(lines: Iterable[str], gives_loss) -> tuple[str, str] | None:
    """(class, the line quoted) for the error the lines end on, or None. `gives_loss(line)` says
    whether a line prints a loss value: an error followed by one did not end the run."""
    tail = [line.strip() for line in lines if line.strip()][-TAIL_LINES:]
    found: tuple[int, str, str] | None = None
    for kind, pattern in _ENDINGS:
        at = next((i for i in range(len(tail) - 1, -1, -1) if pattern.search(tail[i])), None)
        if at is not None:
            found = (at, kind, tail[at])
            break
    if found is None:
        start = next((i for i in range(len(tail) - 1, -1, -1) if _TRACEBACK.search(tail[i])), None)
        if start is not None:
            last = next((i for i in range(len(tail) - 1, start, -1) if _EXCEPTION.match(tail[i])), None)
            if last is not None:
                found = (last, "error", tail[last])
    if found is None:
        return None
    at, kind, line = found
    if any(gives_loss(later) for later in tail[at + 1 :]):
        return None
    return kind, line[:200]
