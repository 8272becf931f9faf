"""logdoctor: an offline doctor for machine-learning training runs.

Reads the logs a run already wrote and says what is wrong, why, and what to do.
"""
from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "analyze"]


def analyze(path, config=None):
    """Diagnose every run under `path`; see `logdoctor.diagnose.analyze`."""
    from .diagnose import analyze as _analyze

    return _analyze(path, config)
