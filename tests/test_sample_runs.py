"""sample_runs/: the labels file is complete and consistent, and logdoctor finds every labelled run.

The benchmark maps a discovered run to its label by the first path component
under sample_runs/, so each label needs exactly one folder and every folder a
label; each run must be discovered with a train-loss role or no rule can see it.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from logdoctor.ingest import load_runs
from logdoctor.view import RunView

SAMPLES = Path(__file__).resolve().parents[1] / "sample_runs"
CODES = {"flat", "crawl", "oscillate", "diverge", "overfit", "lr_schedule_mismatch",
         "scaler_collapse", "spike", "epoch_jumps", "clip_saturation"}
LABEL_KEYS = {"codes", "healthy", "format", "fault", "notes"}


@pytest.fixture(scope="module")
def labels() -> dict:
    return json.loads((SAMPLES / "labels.json").read_text())


@pytest.fixture(scope="module")
def discovered() -> dict[str, list]:
    runs, errors = load_runs(SAMPLES)
    assert not errors, errors
    by_top: dict[str, list] = {}
    for run in runs:
        by_top.setdefault(run.name.split("/")[0], []).append(run)
    return by_top


def test_labels_are_complete_and_consistent(labels):
    folders = {p.name for p in SAMPLES.iterdir() if p.is_dir()}
    assert folders == set(labels), "every run folder needs a label and every label a folder"
    assert len(labels) >= 44
    for run_id, lab in labels.items():
        assert set(lab) == LABEL_KEYS, run_id
        assert lab["healthy"] == (not lab["codes"]), run_id
        assert set(lab["codes"]) <= CODES, run_id
        assert len(set(lab["codes"])) == len(lab["codes"]), run_id
        assert lab["fault"] and lab["notes"], run_id


def test_corpus_covers_every_code_in_two_formats(labels):
    formats: dict[str, set[str]] = {}
    for lab in labels.values():
        for code in lab["codes"]:
            formats.setdefault(code, set()).add(lab["format"])
    assert set(formats) == CODES
    assert all(len(f) >= 2 for f in formats.values()), formats
    assert sum(lab["healthy"] for lab in labels.values()) >= 12


def test_every_labelled_run_is_discovered_once_with_a_train_loss(labels, discovered):
    for run_id in labels:
        runs = discovered.get(run_id)
        assert runs, f"{run_id}: not discovered"
        assert len(runs) == 1, f"{run_id}: discovered as {len(runs)} runs"
        assert "train_loss" in RunView(runs[0]).roles, f"{run_id}: no train_loss role"


def test_faulty_runs_carry_the_series_their_code_needs(labels, discovered):
    """A code can only be diagnosed if its evidence was logged (and recognised)."""
    needs = {"overfit": "val_loss", "scaler_collapse": "loss_scale", "clip_saturation": "grad_norm",
             "lr_schedule_mismatch": "lr"}
    for run_id, lab in labels.items():
        roles = RunView(discovered[run_id][0]).roles
        for code in lab["codes"]:
            if code in needs:
                assert needs[code] in roles, f"{run_id}: {code} without a {needs[code]} series"
