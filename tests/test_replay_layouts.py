"""Replay on real checkpoints of the four layouts: every planted fault found, no clean twin warned about.

Static replay reads the checkpoint alone; dynamic replay adds the model the one flag builds (a class
built from Lightning's saved hyperparameters, `--model hf` from config.json, a factory for plain torch)
and one batch. The checkpoints come from `_replay_layouts` (see there why timm's is the dict timm writes).

Two sets: `dev` (variant 0), the checkpoints the probes were developed against, and `acceptance`
(variant 1: other seeds, other widths), kept apart: built and run only once the probes were settled,
never used to choose a threshold.
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import _replay_layouts as layouts  # noqa: E402
from _replay_models import single_thread  # noqa: E402,F401

from logdoctor.replay.runner import ReplayOptions, run_replay  # noqa: E402

#: layout -> case -> the probe codes that must report it statically (checkpoint alone); clean_* cases: none.
STATIC = {
    "plain": {
        "clean_frozen_backbone": set(), "clean_bf16": set(), "head_not_in_optimizer": {"not_in_optimizer"},
        "lr_too_low": {"update_ratio_low"}, "schedule_ran_out": {"scheduler_exhausted"},
        "dead_relu": {"never_updated"}, "detached": {"never_updated"},
    },
    "lightning": {
        "clean_frozen_backbone": set(), "head_not_in_optimizer": {"not_in_optimizer"}, "dead_relu": {"never_updated"},
        "lr_too_low": {"update_ratio_low"}, "schedule_ran_out": {"scheduler_exhausted"},
    },
    "hf": {"clean_frozen_backbone": set(), "lr_too_low": {"update_ratio_low"}, "schedule_ran_out": {"scheduler_exhausted"}},
    "timm": {"clean": set(), "head_not_in_optimizer": {"not_in_optimizer"}, "schedule_ran_out": {"scheduler_exhausted"}},
}
#: Faults the model must confirm dynamically (with --model and a batch).
DYNAMIC = {("plain", "dead_relu"): {"dead_relu"}, ("plain", "detached"): {"no_grad"}, ("lightning", "dead_relu"): {"dead_relu"}}

SETS = {"dev": 0, "acceptance": 1}
CASES = [(layout, case) for layout, cases in STATIC.items() for case in cases]


def _importable(name: str) -> bool:
    try:
        __import__(name)
    except Exception:  # noqa: BLE001 - not installed, or installed but broken beside this torch
        return False
    return True


@pytest.fixture(scope="module", params=list(SETS))
def built(request, tmp_path_factory):
    """Each layout's checkpoints of one set, built on first use: (checkpoint, --model, batch file)."""
    cache: dict = {}
    variant = SETS[request.param]
    out = tmp_path_factory.mktemp(f"layouts-{request.param}")

    def get(layout: str, case: str):
        if layout == "lightning" and not _importable("lightning"):
            pytest.skip("lightning is not installed")
        if layout == "hf" and not _importable("transformers"):
            pytest.skip("transformers is not installed")
        if (layout, case) not in cache:
            ckpt, model = getattr(layouts, layout)(out, case, variant)
            cache[layout, case] = (ckpt, model, out / f"{layout}-batch.pt")
        return cache[layout, case]

    return get


def alarms(result) -> dict[str, str]:
    """Findings at warning or above: code -> title."""
    return {f.code: f.title for f in result.findings if f.severity in ("warning", "critical")}


@pytest.mark.parametrize("layout,case", CASES)
def test_static_replay_finds_the_fault_and_spares_the_clean_twin(built, layout, case):
    ckpt, _, _ = built(layout, case)
    found = alarms(run_replay(ckpt))
    if case.startswith("clean"):
        assert not found, found
    else:
        assert STATIC[layout][case] <= set(found), found
    if case in ("dead_relu", "detached"):  # a model fault, which an Adam moment of exactly 0 (or none) proves
        assert not {"update_ratio_low", "update_ratio_high", "optimizer_groups"} & set(found), found


@pytest.mark.parametrize("layout,case", [c for c in CASES if c[0] != "timm" and (c[1].startswith("clean") or c in DYNAMIC)])
def test_dynamic_replay_with_the_one_flag_model(built, layout, case):
    """Lightning: the class from the saved hyperparameters; HF: config.json; no hand-written factory."""
    ckpt, model, batch = built(layout, case)
    result = run_replay(ckpt, ReplayOptions(model=model, batch=str(batch), device="cpu"))
    assert not any("failed (" in w for w in result.warnings), result.warnings
    found = alarms(result)
    if case.startswith("clean"):
        assert not found, found
    else:
        assert DYNAMIC[layout, case] <= set(found), found


def test_timm_checkpoint_reads_without_trust(built):
    ckpt, _, _ = built("timm", "clean")
    result = run_replay(ckpt)
    assert result.checkpoint.layout == "timm" and result.checkpoint.planned_epochs == 8 and result.checkpoint.epochs_done == 8


def test_hf_slots_are_named_in_model_order(built):
    """safetensors stores tensors sorted by name; the optimizer keeps model order. Findings name tensors."""
    ckpt, _, _ = built("hf", "lr_too_low")
    finding = next(f for f in run_replay(ckpt).findings if f.code == "update_ratio_low")
    assert finding.metric.startswith(("bert.", "classifier.")), finding.metric


def test_hf_model_of_another_shape_is_a_critical_partial_load(built, tmp_path):
    ckpt, _, batch = built("hf", "clean_frozen_backbone")
    factory = tmp_path / "two_labels.py"
    factory.write_text(  # the run's own config, with a head for another label count
        "import transformers\n"
        "def build():\n"
        f"    c = transformers.BertConfig.from_json_file({str(ckpt / 'config.json')!r})\n"
        "    c.num_labels = 2\n    return transformers.BertForSequenceClassification(c)\n"
    )
    result = run_replay(ckpt, ReplayOptions(model=f"{factory}:build", batch=str(batch), device="cpu"))
    outcomes = {o.probe.code: o for o in result.outcomes}
    assert outcomes["partial_load"].findings[0].severity == "critical"
    assert sorted(outcomes["partial_load"].findings[0].evidence["shape_mismatch"]) == ["classifier.bias", "classifier.weight"]
    assert outcomes["overfit_batch_failed"].status == "skipped"
