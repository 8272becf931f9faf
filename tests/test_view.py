"""RunView reads a metric the same whichever way the tidy table lays its rows out."""
from __future__ import annotations

import numpy as np
import polars as pl

from logdoctor import view as view_module
from logdoctor.model import Run, tidy
from logdoctor.view import RunView, step_report


def _table(interleaved: bool) -> pl.DataFrame:
    """loss and lr over 3,000 steps (the loss logs step 5 again after step 2,999, then step 2,999
    again), rows metric by metric or taking turns."""
    steps = np.arange(3000)
    loss = pl.DataFrame({"metric": "loss", "step": np.r_[steps, 5, 2999], "value": np.r_[np.linspace(2, 1, 3000), 9.0, 0.5]})
    lr = pl.DataFrame({"metric": "lr", "step": steps, "value": np.full(3000, 1e-3)})
    if interleaved:  # each metric's rows keep their order, the metrics take turns
        frame = pl.concat([f.with_row_index("_nth") for f in (loss, lr)]).sort("_nth", maintain_order=True).drop("_nth")
    else:
        frame = pl.concat([loss, lr])
    return tidy(frame)


def test_a_metric_in_one_stretch_is_a_view_of_the_table_and_reads_as_when_interleaved(monkeypatch):
    monkeypatch.setattr(view_module, "_MAX_STRETCHES", 16)  # the step-by-step table is read by metric codes
    together, mixed = RunView(Run("a", "a", "csv", _table(False))), RunView(Run("b", "b", "csv", _table(True)))
    assert together.counts == mixed.counts == {"loss": 3002, "lr": 3000}
    for name in ("loss", "lr"):
        a, b = together.metric(name), mixed.metric(name)
        assert np.array_equal(a.steps, b.steps) and np.array_equal(a.values, b.values) and a.duplicates == b.duplicates
    assert together.metric("loss").duplicates == 2 and together.metric("loss").values[5] == 9.0
    assert not together.logged("lr")[1].flags.owndata  # no copy of the table's values
    assert step_report(together) == step_report(mixed)
    assert step_report(together)["loss"]["backwards"] == 1


def test_row_codes_of_a_categorical_table_are_its_names_first_appearance_order():
    rng = np.random.default_rng(2)
    pl.Series(["unrelated", "names"], dtype=pl.String).cast(pl.Categorical)  # other codes already in the process
    for size in (0, 1, 7, 500):
        rows = rng.choice(np.array(["loss", "lr", "val/loss", None], dtype=object), size)
        metric = pl.Series("metric", rows, dtype=pl.String).cast(pl.Categorical)
        order = metric.unique(maintain_order=True).drop_nulls()
        want = metric.cast(pl.Enum(order.to_list())).to_physical().fill_null(len(order)).to_numpy()
        assert view_module._codes(metric.to_physical(), order.to_physical().to_numpy()).tolist() == want.tolist()


def test_any_table_reads_as_a_filter_by_name_does_in_either_layout_chunked_or_not(monkeypatch):
    """Random tables (runs of one metric of any length, null names and values, one chunk or several):
    every metric's rows, read by stretches or by codes, are exactly what filtering the table by its
    name returns, in the order logged."""
    rng = np.random.default_rng(5)
    for trial in range(60):
        monkeypatch.setattr(view_module, "_MAX_STRETCHES", int(rng.choice([2, 64])))
        lengths = rng.integers(1, 40, size=rng.integers(1, 12))
        names = rng.choice(np.array(["loss", "lr", "val/loss", None], dtype=object), len(lengths))
        metric = np.repeat(names, lengths)
        n = len(metric)
        values = rng.normal(size=n)
        frame = pl.DataFrame({"metric": pl.Series(metric.tolist(), dtype=pl.String), "step": rng.integers(0, 50, n),
                              "value": pl.Series(values).scatter(rng.integers(0, n, 2), None) if trial % 3 == 0 else values})
        table = tidy(frame)
        if trial % 2:
            cut = int(rng.integers(1, n)) if n > 1 else 1
            table = pl.concat([table.slice(0, cut), table.slice(cut)], rechunk=False)
        view = RunView(Run("r", "r", "csv", table))
        logged_names = [m for m in dict.fromkeys(metric.tolist()) if m is not None]
        assert list(view.counts) == logged_names
        for name in logged_names:
            want = table.filter(pl.col("metric") == name)
            steps, vals = view.logged(name)
            assert view.counts[name] == want.height
            assert steps.tolist() == want["step"].to_list()
            assert np.array_equal(vals, want["value"].to_numpy(), equal_nan=True)
