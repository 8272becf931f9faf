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
        names = metric.unique(maintain_order=True).drop_nulls().to_list()
        want = metric.cast(pl.Enum(names)).to_physical().fill_null(len(names)).to_numpy()
        assert view_module._codes(metric, names).tolist() == want.tolist()
