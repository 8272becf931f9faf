"""`logdoctor audit`: triage a whole sweep directory at once.

Pipeline: plan one task per run source (local discovery, or one task per
top-level folder of an fsspec URL) -> answer unchanged tasks from the cache ->
diagnose the rest in parallel (processes, or a Dask cluster) -> summarise:
counts, a severity-ordered table, the best healthy run and the hyperparameter
settings that separate failing from healthy runs.

Modules, one job each: `tasks` (what a unit of work is and its fingerprint),
`worker` (the function a process or Dask worker runs), `cache`, `executor`,
`links` (the statistics), `summary` (the report object), `render` (audit
sections for the terminal/Markdown/HTML reports), `sweep` (the orchestration).

This package's __init__ imports nothing heavy: worker processes import it
before they get the chance to cap their thread pools.
"""
from __future__ import annotations


def audit(path, config=None, **options):
    """Audit every run under `path`; see `logdoctor.audit.sweep.audit`."""
    from .sweep import audit as _audit

    return _audit(path, config, **options)
