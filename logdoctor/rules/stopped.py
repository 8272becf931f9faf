"""stopped: the console log ends on the error that stopped the run, whatever its curve showed."""
from __future__ import annotations

from ..model import Finding
from ..view import RunView
from ._loss import loss_series
from .base import Rule

#: What each class of ending tells the reader, for the title.
_SAID = {
    "out of memory": "ran out of memory",
    "distributed timeout": "a collective across workers timed out or a worker failed",
    "loss scale at its minimum": "the AMP loss scale hit its minimum (every step overflowing)",
    "killed": "the process was killed",
    "error": "an error stopped it",
}


class Stopped(Rule):
    """The run stopped on an error: the log ends on it, not on a finished training.

    Symptom:
        The last lines of a console log are an error and no loss is printed
        after it: a traceback ending in `torch.OutOfMemoryError: CUDA out of
        memory`, an NCCL watchdog timeout, DeepSpeed's `Current loss scale
        already at minimum`, the shell's `Killed`, or any other exception.
        The curve before it is judged by the other rules as far as it goes;
        this finding says the run did not finish, quotes the error line and
        gives the last step logged. An info finding, like `not_checked`: it
        names no curve fault, but the reports say `STOPPED`, never
        `HEALTHY`.
    Root causes:
        - out of memory: the batch, sequence length or model grew past the device (or memory fragments until an allocation fails)
        - a distributed collective timed out: one rank hung, died or fell behind (data loading, a rank-dependent branch, a bad node)
        - the loss scale reached its minimum: the fp16 run overflows on every step (diverged activations, LR too high)
        - the process was killed from outside: host memory (the OOM killer), a scheduler's time or memory limit
        - a bug or bad input reached at this step (the traceback names the line)
    Fix:
        - out of memory: lower the micro-batch and keep the global batch with gradient accumulation, enable activation checkpointing or bf16, cap the sequence length
        - timeout: find the rank that stopped (run with NCCL_DEBUG=INFO and TORCH_DISTRIBUTED_DEBUG=DETAIL); raise the timeout only for a known slow step
        - loss scale at minimum: switch to bf16, lower the LR, clip gradients, and look for the step the loss turned NaN
        - killed: check dmesg / the scheduler log for the memory or time limit; fewer DataLoader workers or smaller prefetch for host memory
        - other errors: read the traceback's last frame; resume from the last checkpoint once fixed
    Probe:
        none from logs alone; rerun the failing step from the last checkpoint (for memory, print the CUDA memory summary of torch.cuda just before it)
    Example:
        A paste ends with `torch.OutOfMemoryError: CUDA out of memory. Tried
        to allocate 2.00 GiB` after step 1,200: `stopped` quotes the line,
        step 1,200 is the last logged, and the curve up to it is judged as
        usual.
    """

    code = "stopped"
    severity = "info"

    def check(self, view: RunView) -> list[Finding]:
        ending = view.run.ending
        if ending is None:
            return []
        kind, line = ending
        losses = loss_series(view)
        main = losses[0] if losses else None
        evidence = {"ending": kind, "error_line": line}
        steps = None
        if main is not None and len(main):
            last = int(main.steps[-1])
            steps = (last, last)
            evidence.update(last_step=last, last_loss=float(main.values[-1]))
        at = f" after step {steps[1]:,}" if steps else ""
        return [self.finding(main, title=f"run stopped{at}: {_SAID[kind]} ({_first_sentence(line)})", steps=steps, confidence=1.0, evidence=evidence)]


def _first_sentence(line: str, limit: int = 90) -> str:
    """The error line up to its first full stop (`...: CUDA out of memory.`), at most `limit` characters."""
    cut = line.find(". ")
    line = line[: cut + 1] if 0 < cut else line
    return line if len(line) <= limit else line[: limit - 1] + "…"
