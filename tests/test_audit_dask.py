"""The audit on a Dask cluster: same report as local processes; workers read the runs where they are.

The test starts its own in-process `LocalCluster` (one worker, threads), so it
needs no network beyond localhost and takes a few seconds.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from logdoctor.audit import audit

distributed = pytest.importorskip("distributed")
fsspec = pytest.importorskip("fsspec")

from test_audit import same, write_run  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as c:
        yield c


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    root = tmp_path / "sweep"
    for lr in (1e-3, 3e-2):
        for seed in range(4):
            write_run(root / f"lr{lr:g}_s{seed}" / "version_0", lr, seed)
    return root


def test_local_paths_on_a_cluster(sweep: Path, cluster):
    local = audit(sweep, jobs=1, use_cache=False)
    remote = audit(sweep, scheduler=cluster.scheduler_address, use_cache=False)
    assert remote.stats["scheduler"] == cluster.scheduler_address
    # workers get absolute paths; names (relative to the audited folder) and findings are identical
    strip = lambda rs: json.dumps([{**r.to_dict(), "path": Path(r.path).name} for r in rs], sort_keys=True)  # noqa: E731
    assert strip(remote.results) == strip(local.results)
    assert [l.to_json() for l in remote.links] == [l.to_json() for l in local.links]


def test_fsspec_url_read_by_workers(sweep: Path, cluster, tmp_path: Path):
    fs = fsspec.filesystem("memory")
    for f in sweep.rglob("*"):
        if f.is_file():
            fs.pipe(f"/bucket/sweep/{f.relative_to(sweep).as_posix()}", f.read_bytes())
    local = audit(sweep, jobs=1, use_cache=False)
    report = audit("memory://bucket/sweep", scheduler=cluster.scheduler_address, cache_dir=tmp_path / "c")
    assert [r.run for r in report.results] == [r.run for r in local.results]
    assert all(r.path.startswith("memory://bucket/sweep/") for r in report.results)
    assert [r.findings for r in report.results] == [r.findings for r in local.results]
    assert report.stats["read"] == 8
    # cached by the remote files' sizes and timestamps: a second audit reads nothing
    again = audit("memory://bucket/sweep", scheduler=cluster.scheduler_address, cache_dir=tmp_path / "c")
    assert again.stats["cached"] == 8 and same(again.results, report.results)


def test_unreachable_scheduler_is_one_clear_error(sweep: Path, monkeypatch):
    from logdoctor.audit import executor
    from logdoctor.audit.executor import SchedulerError

    monkeypatch.setattr(executor, "CONNECT_TIMEOUT", "1s")
    with pytest.raises(SchedulerError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        audit(sweep, scheduler="tcp://127.0.0.1:9", use_cache=False)
