"""One BLAS thread for the command line: numpy's OpenBLAS costs a call more than it gives it.

numpy loads OpenBLAS at import, and OpenBLAS starts one thread per core there, threads that spin
while they wait for work. logdoctor's maths is on curves of thousands of points, never a matrix
product a second thread would speed up, yet every call paid for the threads: `import numpy` took
0.11-0.17 s of CPU on the 2-core development machine, 0.07-0.08 s with one thread
(benchmarks/bench_startup.py measures the whole command). Set by the command line before numpy
loads, as a default the user's own `OPENBLAS_NUM_THREADS` overrides; a program that imports
logdoctor keeps its own settings. PyTorch (replay) keeps its own thread pool, which this leaves alone.
"""
from __future__ import annotations

import os
import sys


def one_blas_thread() -> None:
    """Ask OpenBLAS for a single thread, unless numpy is already loaded or the user chose."""
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
