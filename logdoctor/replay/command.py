"""What the CLI calls: run replay for `logdoctor replay`, or merge it into `analyze`.

Kept free of torch at import time; a missing PyTorch becomes one clear line.
"""
from __future__ import annotations

import sys
from pathlib import Path

from . import ReplayError


def run(checkpoint: Path, **options):
    """A runner.ReplayResult for `checkpoint`; options are runner.ReplayOptions fields.

    Warning and progress lines (a trusted full unpickling, long probes) go to stderr as they
    happen unless `say` sends them elsewhere.
    """
    try:
        from .runner import ReplayOptions, run_replay
    except ImportError as exc:
        raise ReplayError(f"replay needs PyTorch ({exc.name} is not installed): pip install 'logdoctor[replay]'") from None
    options.setdefault("say", _to_stderr)
    return run_replay(checkpoint, ReplayOptions(**options))


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def merge_into(diagnosis, checkpoint: Path, **options):
    """Run replay on `checkpoint` and merge it into the run it belongs to; returns the ReplayResult."""
    from .merge import merge_replay, pick_run

    rd = pick_run(diagnosis, checkpoint)  # before the slow part: a wrong PATH fails fast
    result = run(checkpoint, **options)
    merge_replay(rd, result)
    return result
