"""How settings move a sweep's outcome: rank tests per setting, the importance ranking, the key setting,
the terminal table that keeps it, and Ctrl-C during an audit."""
from __future__ import annotations

import multiprocessing
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from scipy.stats import kruskal, spearmanr
from typer.testing import CliRunner

from logdoctor.audit import audit, importance as importance_module
from logdoctor.audit.effects import FAILURES, _Test, _asymptotic_p, _ranks, _scores, find_effects
from logdoctor.audit.importance import FALLBACK, FOREST, drop_confounded, rank_settings
from logdoctor.audit.page import sweep_data
from logdoctor.audit.render import links_section, runs_table
from logdoctor.audit.result import RunResult
from logdoctor.audit.summary import AuditReport, swept_settings

LR_SWEEP = Path(__file__).parent / "data" / "lr_sweep"


@pytest.fixture(autouse=True)
def user_cache(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def result(name: str, params: dict, val: float | None, codes: tuple[str, ...] = ()) -> RunResult:
    findings = [{"code": c, "severity": "critical", "confidence": 0.9, "title": c, "metric": "loss", "steps": [0, 1],
                 "evidence": {}, "causes": [], "fixes": []} for c in codes]
    stats = {"train_loss_final": val, "train_loss_best": val, "val_loss_final": val, "val_loss_best": val, "steps": 100}
    return RunResult(run=name, path=name, format="csv", roles={"train_loss": "loss", "val_loss": "val_loss"},
                     status="critical" if codes else "healthy", findings=findings, params=params, stats=stats)


def planted(cause: str, n: int = 60, seed: int = 0) -> list[RunResult]:
    """A sweep over four settings and a seed whose final val loss depends on `cause` alone (plus noise)."""
    rng = np.random.default_rng(seed)
    runs = []
    for i in range(n):
        params = {"lr": float(rng.choice([1e-4, 3e-4, 1e-3, 3e-3])), "batch_size": int(rng.choice([32, 64, 128])),
                  "optimizer": str(rng.choice(["adam", "sgd", "lion"])), "weight_decay": float(rng.choice([0.0, 0.01, 0.1])),
                  "seed": i}
        effect = {"lr": np.log10(params["lr"]) + 4, "weight_decay": 10 * params["weight_decay"],
                  "optimizer": {"adam": 0.0, "sgd": 1.0, "lion": 0.4}[params["optimizer"]]}[cause]
        runs.append(result(f"r{i}", params, 0.5 + effect + rng.normal(0, 0.15)))
    return runs


@pytest.mark.parametrize("cause", ["weight_decay", "optimizer", "lr"])
def test_a_planted_dependence_is_found_first_and_becomes_the_key_setting(cause):
    runs = planted(cause)
    swept = swept_settings(runs)
    effects = find_effects(runs, swept)
    assert effects and effects[0].param == cause
    assert {e.param for e in effects} == {cause}  # nothing else is named
    importance = rank_settings(runs, swept, effects)
    assert importance.method == FOREST and importance.top == cause and importance.shares[cause] > 0.5
    report = AuditReport(root="x", results=runs, errors=[], links=[], effects=effects, importance=importance)
    assert report.key_setting == cause and report.swept[0] == cause
    assert sweep_data(report, {})["setting"] == cause  # the page's default x-axis


def test_the_wording_names_setting_direction_size_and_where_the_failures_sit():
    runs = []
    for i, lr in enumerate([0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0] * 3):
        diverged = lr >= 10
        runs.append(result(f"r{i}", {"lr": lr, "seed": i % 3}, None if diverged else 0.1 * lr + 0.01 * (i % 3),
                           ("diverge",) if diverged else ()))
    runs[-1].stats["val_loss_final"] = float("nan")  # a loss that ended NaN ranks worst, as no value does
    effects = find_effects(runs, swept_settings(runs))
    loss = next(e for e in effects if e.outcome == "final val loss")
    assert (loss.param, loss.test) == ("lr", "spearman") and loss.statistic > 0.9
    assert loss.text.startswith(f"final val loss rises with lr (Spearman ρ {loss.statistic:.2f}, p ")
    assert "every diverge at lr ≥ 10" in loss.text and "lowest at lr = 0.01" in loss.text
    failures = next(e for e in effects if e.outcome == FAILURES)
    assert failures.text.startswith("runs fail more often at higher lr") and "every diverge" not in failures.text  # said once
    assert not any(e.param == "seed" for e in effects)
    assert set(loss.to_json()) == {"param", "outcome", "test", "statistic", "p", "p_adjusted", "runs", "text"}


def test_statistics_match_scipy():
    rng = np.random.default_rng(5)
    x, y = rng.choice([1, 2, 3, 5], 30).astype(float), rng.normal(size=30)
    y[3] = np.inf
    ranks = _ranks(y)
    rho_test = _Test("x", "spearman", np.ones(30, bool), _ranks(x) - _ranks(x).mean(), list(x), True)
    rho = float(_scores(rho_test, ranks[:, None])[0])
    expected = spearmanr(x, np.where(np.isinf(y), 1e9, y))
    assert rho == pytest.approx(expected.statistic) and _asymptotic_p(rho_test, rho) == pytest.approx(expected.pvalue)
    levels = sorted(set(x))
    kw_test = _Test("x", "kruskal", np.ones(30, bool), np.array([[v == lv for v in x] for lv in levels], float), list(x), True)
    eps = float(_scores(kw_test, ranks[:, None])[0])
    h = kruskal(*[np.where(np.isinf(y), 1e9, y)[x == lv] for lv in levels])
    assert eps * 29 == pytest.approx(h.statistic) and _asymptotic_p(kw_test, eps) == pytest.approx(h.pvalue)


def test_outcomes_that_depend_on_nothing_rarely_name_a_setting():
    named = 0
    for seed in range(20):
        rng = np.random.default_rng(300 + seed)
        runs = [result(f"r{i}", {"lr": float(rng.choice([1e-4, 1e-3, 1e-2])), "opt": str(rng.choice(["adam", "sgd"])),
                                 "wd": float(rng.uniform(0, 0.1))}, float(rng.normal(1, 0.2))) for i in range(30)]
        named += bool(find_effects(runs, swept_settings(runs)))
    assert named <= 1  # alpha = 0.01 across settings and outcomes: about 0.2 expected in 20 sweeps


def test_without_scikit_learn_the_ranking_falls_back_to_the_rank_tests_and_says_so(monkeypatch):
    def missing(*_):
        raise ImportError("No module named 'sklearn'")

    monkeypatch.setattr(importance_module, "_forest_shares", missing)
    runs = planted("weight_decay")
    effects = find_effects(runs, swept_settings(runs))
    importance = rank_settings(runs, swept_settings(runs), effects)
    assert importance.method == FALLBACK and importance.top == "weight_decay"
    assert "pip install 'logdoctor[audit]'" in importance.text


def test_few_runs_get_no_ranking_and_no_effect():
    runs = planted("lr", n=5)
    assert find_effects(runs, swept_settings(runs)) == [] and rank_settings(runs, swept_settings(runs)) is None


def test_the_real_lr_sweep_names_lr_never_seed_or_batch_size():
    """24 real Lightning runs (benchmarks/gen_lr_sweep.py): SGD on digits, lr 0.01-30, three seeds, batch 32/64/128."""
    report = audit(LR_SWEEP, jobs=1)
    named = {e.param for e in report.effects} | {c.param for link in report.links for c in link.conditions}
    assert named == {"lr"}
    assert report.importance.top == "lr" and report.key_setting == "lr"
    assert sweep_data(report, {})["setting"] == "lr"
    assert all(r.status != "healthy" for r in report.results if r.params["lr"] >= 3)
    section = links_section(report)
    assert section.splitlines()[0].startswith("- final val loss ") and "every diverge at lr ≥ " in section


def test_the_json_report_carries_effects_and_importance_under_the_schema():
    import json

    import jsonschema

    from logdoctor.cli import app

    out = CliRunner().invoke(app, ["audit", str(LR_SWEEP), "-f", "json", "-j", "1"])
    doc = json.loads(out.stdout)
    schema = json.loads((Path(__file__).parents[1] / "logdoctor" / "schemas" / "report.schema.json").read_text())
    jsonschema.validate(doc, schema)
    assert doc["audit"]["effects"][0]["param"] == "lr" and doc["audit"]["swept"][0] == "lr"
    assert next(iter(doc["audit"]["importance"]["shares"])) == "lr"


def test_the_terminal_table_keeps_the_key_settings_column_at_any_width():
    report = audit(LR_SWEEP, jobs=1)
    for width in (40, 60, 80):
        console = Console(width=width, record=True)
        console.print(runs_table(report, width=width))
        lines = console.export_text().splitlines()
        head = lines[0].split()
        assert "lr" in head and "batch_size" not in head or width >= 80
        column = lines[0].index(" lr") + 1
        values = {line[column - 3 : column + 2].strip() for line in lines[1:25]}
        assert "…" not in "".join(values) and {"10", "0.01"} <= values  # whole values, not cut


def test_ctrl_c_stops_with_one_line_and_the_rerun_resumes(tmp_path, monkeypatch):
    from test_audit import write_run

    from logdoctor.audit import sweep
    from logdoctor.cli import app

    root = tmp_path / "sweep"
    for i in range(6):
        write_run(root / f"run{i}", lr=1e-3, seed=i, steps=200)
    real = sweep.execute

    def interrupted(tasks, config, on_done, **kw):  # the walk ends, three tasks finish, then the user presses Ctrl-C
        real(list(tasks)[:3], config, on_done, **kw)
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep, "execute", interrupted)
    first = CliRunner().invoke(app, ["audit", str(root), "-j", "1"])
    assert first.exit_code == 130
    assert first.output.strip().splitlines() == [
        "logdoctor: interrupted: 3 of 6 runs done and cached; run the same command again to resume from the cache"]
    monkeypatch.setattr(sweep, "execute", real)
    again = CliRunner().invoke(app, ["audit", str(root), "-j", "1"])
    assert again.exit_code == 0 and "resumed from the cache (3 runs), 3 read" in again.output


def test_an_interrupted_process_pool_kills_its_workers(tmp_path):
    from test_audit import write_run

    from logdoctor.audit.executor import run_processes
    from logdoctor.audit.tasks import plan
    from logdoctor.config import Config

    for i in range(6):
        write_run(tmp_path / f"run{i}", lr=1e-3, seed=i, steps=200)
    done = []

    def on_done(task, output):
        done.append(task)
        raise KeyboardInterrupt

    before = set(multiprocessing.active_children())  # processes other tests left behind are not this pool's
    with pytest.raises(KeyboardInterrupt):
        run_processes(plan(tmp_path), Config(), 2, on_done)
    assert len(done) == 1
    workers = [c for c in multiprocessing.active_children() if c not in before]
    assert workers
    for child in workers:  # killed (SIGKILL), not left to finish the queue
        child.join(10)
        # a SIGCHLD handler of another library (dask's, after its tests) may reap the child first: then the
        # Process object never learns its exit code, but its pid is gone
        assert child.exitcode == -9 or (child.exitcode is None and not Path(f"/proc/{child.pid}").exists())


def test_a_setting_written_as_text_numbers_is_bounded_by_value_not_spelling():
    # "10" sorts before "3" as text; as numbers every diverge is at lr >= 3
    bad = ("3", "10", "30")
    runs = [result(f"r{i}", {"lr": lr}, None if lr in bad else 0.1 * float(lr), ("diverge",) if lr in bad else ())
            for i, lr in enumerate(["0.03", "0.1", "0.3", "1", "3", "10", "30"] * 4)]
    effects = find_effects(runs, swept_settings(runs))
    assert effects and "every diverge at lr ≥ 3" in effects[0].text


def test_a_setting_confounded_with_the_cause_in_the_runs_that_log_it_is_not_named():
    """A third of the runs (one writer) also log `train_batch_size`; there it follows lr, the only cause: its rank
    test passes, but the forest has no use for it once it knows lr, so it is not named."""
    rng = np.random.default_rng(0)
    lrs = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
    runs = []
    for i in range(420):
        lr = lrs[i % 7]
        params = {"lr": lr, "batch_size": [32, 64, 128][(i // 7) % 3], "seed": i}
        if i % 3 == 2:
            params["train_batch_size"] = params["batch_size"]  # in these runs a function of lr (i mod 21)
        bad = lr >= 3e-2
        runs.append(result(f"r{i}", params, None if bad else 0.2 + rng.normal(0, 0.05) - 0.01 * np.log10(lr), ("diverge",) if bad else ()))
    swept = swept_settings(runs)
    effects = find_effects(runs, swept)
    assert "train_batch_size" in {e.param for e in effects}  # the rank test alone cannot tell
    importance = rank_settings(runs, swept, effects)
    assert {e.param for e in drop_confounded(effects, importance)} == {"lr"}
