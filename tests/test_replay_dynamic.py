"""Dynamic probes on tiny CPU models: each fires on a model/checkpoint with its fault, not on a healthy one."""
from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import _replay_models as models  # noqa: E402
from _replay_models import single_thread  # noqa: E402,F401

from logdoctor.replay import ReplayError  # noqa: E402
from logdoctor.replay.catalogue import all_probes  # noqa: E402
from logdoctor.replay.checkpoint import load_checkpoint  # noqa: E402
from logdoctor.replay.probe import ReplayContext  # noqa: E402
from logdoctor.replay.runner import ReplayOptions, run_replay  # noqa: E402
from logdoctor.replay.target import build_target  # noqa: E402

MODELS = Path(models.__file__)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("replay_dynamic")
    torch.save(models.batch(), folder / "batch.pt")
    return folder


def context(workdir: Path, factory: str, lr: float = 1e-3, steps: int = 20, loss=None, batch=None, set_lr=None) -> ReplayContext:
    """Train `factory`'s model a little, save a training-dict checkpoint, load it back with the model and a batch."""
    model = getattr(models, factory)()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    if steps:
        models.train(model, opt, steps)
    if set_lr is not None:
        for g in opt.param_groups:
            g["lr"] = set_lr
    path = workdir / f"{factory}-{lr}-{steps}-{set_lr}.pt"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": steps}, path)
    ckpt = load_checkpoint(path)
    target = build_target(ckpt, f"{MODELS}:{factory}", batch or str(workdir / "batch.pt"), None, loss, "cpu")
    return ReplayContext(ckpt, target)


def probe(code: str, ctx: ReplayContext, **thresholds):
    return all_probes()[code](thresholds or None).run(ctx)


#: A shorter LR sweep than the product default, to keep the suite fast.
SWEEP = dict(points=12, steps=3)


@pytest.fixture(scope="module")
def healthy(workdir):
    return context(workdir, "mlp")


@pytest.fixture(scope="module")
def mlp_ckpt(healthy) -> Path:
    """The healthy MLP's checkpoint file."""
    return Path(healthy.ckpt.path)


HEALTHY_CLEAR = ["overfit_batch_failed", "init_loss_off", "no_grad", "grad_vanish", "grad_explode", "dead_relu", "nan_source", "update_ratio_low", "update_ratio_high"]


@pytest.mark.parametrize("code", HEALTHY_CLEAR)
def test_healthy_model_is_clear(healthy, code):
    outcome = probe(code, healthy)
    assert outcome.status == "clear", [f.title for f in outcome.findings] or outcome.reason


def test_overfit_one_batch_fails_with_double_softmax(workdir):
    """Softmax before CrossEntropyLoss caps how low the loss can go: no LR tried reaches the goal."""
    outcome = probe("overfit_batch_failed", context(workdir, "double_softmax", steps=0), steps=60)
    assert outcome.status == "fired"
    ev = outcome.findings[0].evidence
    assert ev["best_loss"] > ev["goal"] and ev["examples"] == models.EXAMPLES
    assert len(ev["loss_by_lr"]) >= 3 and ev["reference_is"] == "ln 10"


def test_overfit_one_batch_tries_the_runs_own_lr(workdir):
    """Near miss: lr 1e-4 alone cannot memorise the batch in 200 steps, but the run's configured 1e-2 can."""
    assert probe("overfit_batch_failed", context(workdir, "mlp", set_lr=1e-4), lrs=[1e-4]).status == "fired"
    assert probe("overfit_batch_failed", context(workdir, "mlp", set_lr=1e-2), lrs=[1e-4]).status == "clear"


def test_overfit_one_batch_judges_a_trained_checkpoint_against_ln_k(workdir):
    """Near miss: a checkpoint already at loss 0.29 need not fall to a tenth of that, only below 10 % of ln K."""
    outcome = probe("overfit_batch_failed", context(workdir, "mlp", steps=60, set_lr=1e-4), lrs=[1e-4])
    assert outcome.status == "clear", [f.evidence for f in outcome.findings]


def test_init_loss_far_from_log_k(workdir):
    outcome = probe("init_loss_off", context(workdir, "big_init", steps=0))
    assert outcome.status == "fired"
    ev = outcome.findings[0].evidence
    assert ev["classes"] == models.CLASSES and ev["init_loss"] > 2 * ev["log_k"]


def test_init_loss_catches_nll_fed_raw_logits(workdir):
    outcome = probe("init_loss_off", context(workdir, "mlp", steps=0, loss="nll"))
    assert outcome.status == "fired" and outcome.findings[0].evidence["init_loss"] < 1.0


def test_no_grad_names_detached_parameters(workdir):
    outcome = probe("no_grad", context(workdir, "Detached", steps=0))
    assert outcome.status == "fired"
    assert outcome.findings[0].evidence["grad_none"] == ["body.0.weight", "body.0.bias"]


def test_no_grad_when_everything_is_frozen(workdir):
    ctx = context(workdir, "mlp", steps=0)
    for p in ctx.target.model.parameters():
        p.requires_grad_(False)
    outcome = probe("no_grad", ctx)
    assert outcome.status == "fired" and outcome.findings[0].severity == "critical"


def test_grad_vanish_through_deep_sigmoids(workdir):
    outcome = probe("grad_vanish", context(workdir, "deep_sigmoid", steps=0))
    assert outcome.status == "fired" and outcome.findings[0].evidence["ratio"] < 1e-3


def test_grad_explode_with_oversized_init(workdir):
    outcome = probe("grad_explode", context(workdir, "exploding", steps=0))
    assert outcome.status == "fired" and outcome.findings[0].evidence["max_grad_norm"] > 1e3


def test_dead_relu_layer(workdir):
    outcome = probe("dead_relu", context(workdir, "dead", steps=0))
    assert outcome.status == "fired"
    assert outcome.findings[0].metric == "1" and outcome.findings[0].evidence["fraction_by_layer"]["1"] == 1.0


def test_dead_relu_needs_enough_examples(workdir):
    x, y = models.batch()
    torch.save((x[:4], y[:4]), workdir / "tiny.pt")
    assert probe("dead_relu", context(workdir, "dead", steps=0, batch=str(workdir / "tiny.pt"))).status == "skipped"


def test_nan_source_is_the_first_module_emitting_nan(workdir):
    outcome = probe("nan_source", context(workdir, "nan_maker", steps=0))
    assert outcome.status == "fired"
    assert outcome.findings[0].evidence["module"] == "3" and outcome.findings[0].evidence["type"] == "Log"


def test_nan_source_blames_the_input_batch(workdir):
    x, y = models.batch()
    x[0, 0] = float("nan")
    torch.save((x, y), workdir / "nan_batch.pt")
    outcome = probe("nan_source", context(workdir, "mlp", steps=0, batch=str(workdir / "nan_batch.pt")))
    assert outcome.findings[0].metric == "input batch"


def test_measured_update_ratio_low(workdir):
    outcome = probe("update_ratio_low", context(workdir, "mlp", lr=1e-7))
    assert outcome.status == "fired"
    assert outcome.findings[0].evidence["method"] == "measured after one step"


def test_lr_range_verdicts(workdir, healthy):
    assert probe("lr_range", healthy, **SWEEP).findings[0].evidence["verdict"] == "in_band"
    low = probe("lr_range", context(workdir, "mlp", lr=1e-7), **SWEEP)
    assert low.status == "fired" and low.findings[0].evidence["verdict"] == "too_low"
    high = probe("lr_range", context(workdir, "mlp", set_lr=5.0), **SWEEP)
    assert high.status == "fired" and high.findings[0].evidence["verdict"] == "too_high"
    assert high.findings[0].evidence["blowup_lr"] <= 5.0


def test_data_function_gives_several_batches(workdir, mlp_ckpt):
    ckpt = load_checkpoint(mlp_ckpt)
    target = build_target(ckpt, f"{MODELS}:mlp", None, f"{MODELS}:batches", None, "cpu")
    assert len(target.batches) == 4 and target.loaded


def test_lightning_prefix_matches_the_bare_model(workdir):
    model = models.mlp()
    torch.save({"state_dict": {f"model.{k}": v for k, v in model.state_dict().items()}, "pytorch-lightning_version": "2.4.0", "global_step": 0}, workdir / "l.ckpt")
    target = build_target(load_checkpoint(workdir / "l.ckpt"), f"{MODELS}:mlp", str(workdir / "batch.pt"), None, None, "cpu")
    assert target.loaded and any("model." in n for n in target.notes)


def test_torch_export_program_as_model(workdir):
    model = models.dead()
    program = torch.export.export(model, (models.batch()[0],))
    torch.export.save(program, str(workdir / "dead.pt2"))
    torch.save({"model": model.state_dict()}, workdir / "dead_weights.pt")
    ckpt = load_checkpoint(workdir / "dead_weights.pt")
    ctx = ReplayContext(ckpt, build_target(ckpt, str(workdir / "dead.pt2"), str(workdir / "batch.pt"), None, None, "cpu"))
    assert ctx.target.loaded
    assert probe("no_grad", ctx).status == "fired"  # the dead ReLU leaves the first layer with an exactly zero gradient
    assert probe("init_loss_off", ctx).status in ("clear", "fired")


@pytest.mark.parametrize(
    "kwargs,message",
    [
        (dict(model_spec="nosuchmodule_xyz:f"), "cannot import nosuchmodule_xyz"),
        (dict(model_spec=f"{MODELS}:nope"), "has no attribute 'nope'"),
        (dict(model_spec=f"{MODELS}:batch"), "not a torch.nn.Module"),
        (dict(loss="hinge"), "--loss hinge"),
        (dict(batch=None), "needs --batch"),
    ],
)
def test_bad_dynamic_inputs_are_one_line_errors(workdir, kwargs, message, mlp_ckpt):
    ckpt = load_checkpoint(mlp_ckpt)
    args = dict(model_spec=f"{MODELS}:mlp", batch=str(workdir / "batch.pt"), data=None, loss=None, device="cpu") | kwargs
    with pytest.raises(ReplayError, match=message):
        build_target(ckpt, **args)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error when no GPU is present")
def test_device_cuda_without_gpu_is_a_clear_error(workdir, mlp_ckpt):
    with pytest.raises(ReplayError, match="no CUDA device"):
        run_replay(mlp_ckpt, ReplayOptions(model=f"{MODELS}:mlp", batch=str(workdir / "batch.pt"), device="cuda"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_probes_run_on_cuda(workdir, mlp_ckpt):
    result = run_replay(
        mlp_ckpt,
        ReplayOptions(model=f"{MODELS}:mlp", batch=str(workdir / "batch.pt"), device="auto"),
    )
    assert result.device.startswith("cuda")
    statuses = {o.probe.code: o.status for o in result.outcomes}
    assert statuses["overfit_batch_failed"] == "clear" and statuses["no_grad"] == "clear"
    assert not result.warnings


def adamw_checkpoint(workdir: Path, factory: str):
    """Three AdamW steps (weight decay on) of `factory`'s model, saved and loaded back."""
    model = getattr(models, factory)()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    models.train(model, opt, 3)
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 3}, workdir / f"{factory}_adamw.pt")
    return load_checkpoint(workdir / f"{factory}_adamw.pt")


def with_model(workdir: Path, ckpt, factory: str) -> ReplayContext:
    """The checkpoint with `--model tests/_replay_models.py:<factory>` and the shared batch."""
    return ReplayContext(ckpt, build_target(ckpt, f"{MODELS}:{factory}", str(workdir / "batch.pt"), None, None, "cpu"))


def test_frozen_parameters_still_in_the_optimizer(workdir):
    """O17: the first layer frozen after the optimizer was built keeps its Adam state and weight decay."""
    ckpt = adamw_checkpoint(workdir, "mlp")
    assert probe("frozen_in_optimizer", with_model(workdir, ckpt, "mlp")).status == "clear"
    frozen = with_model(workdir, ckpt, "mlp_frozen_first")
    outcome = probe("frozen_in_optimizer", frozen)
    assert outcome.status == "fired" and outcome.findings[0].evidence["frozen_in_optimizer"] == ["0.weight", "0.bias"]
    assert probe("frozen_in_optimizer", ReplayContext(ckpt)).status == "skipped"


def test_soft_targets_with_cross_entropy(workdir):
    x, y = models.batch()
    torch.save({"x": x, "y": torch.nn.functional.one_hot(y, models.CLASSES).float()}, workdir / "soft.pt")
    ctx = context(workdir, "mlp", steps=0, loss="cross_entropy", batch=str(workdir / "soft.pt"))
    assert probe("init_loss_off", ctx).status == "clear"
    assert probe("overfit_batch_failed", ctx).status == "clear"


def test_dotted_model_spec_resolves_from_the_working_directory(workdir, monkeypatch, tmp_path, mlp_ckpt):
    (tmp_path / "userpkg_replay").mkdir()
    (tmp_path / "userpkg_replay" / "__init__.py").write_text("")
    (tmp_path / "userpkg_replay" / "nets.py").write_text(Path(models.__file__).read_text())
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.path", [p for p in __import__("sys").path if p not in ("", str(tmp_path))])
    ckpt = load_checkpoint(mlp_ckpt)
    target = build_target(ckpt, "userpkg_replay.nets:mlp", str(workdir / "batch.pt"), None, None, "cpu")
    assert target.loaded


def test_frozen_parameters_never_stepped_are_a_note_reported_once(workdir):
    """Frozen before the optimizer was built from model.parameters(): the frozen layer sits in a group with no
    state, so it never moved (bit-identical to init). A note from frozen_in_optimizer, not "still updated";
    never_updated and not_in_optimizer must not repeat it."""
    ctx = with_model(workdir, adamw_checkpoint(workdir, "mlp_frozen_first"), "mlp_frozen_first")
    outcome = probe("frozen_in_optimizer", ctx)
    assert outcome.status == "clear" and outcome.findings[0].severity == "info"
    assert outcome.findings[0].evidence["frozen_without_state"] == ["0.weight", "0.bias"]
    assert probe("not_in_optimizer", ctx).status == "clear" and probe("never_updated", ctx).status == "clear"


def test_wrapper_prefix_on_the_model_side(workdir, mlp_ckpt):
    """A bare checkpoint (`0.weight`) and a --model that wraps the network (`model.0.weight`) still match."""
    ckpt = load_checkpoint(mlp_ckpt)
    target = build_target(ckpt, f"{MODELS}:Wrapper", str(workdir / "batch.pt"), None, None, "cpu")
    assert target.loaded and any("prefix 'model.'" in n for n in target.notes)
    assert torch.equal(target.model.model[0].weight.cpu(), ckpt.model["0.weight"])
    assert not any("left at init" in n for n in target.notes)
