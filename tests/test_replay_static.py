"""Static probes: each fires on a checkpoint with its fault and stays quiet on a healthy one."""
from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")

from _replay_models import mlp, single_thread, train  # noqa: E402,F401

from logdoctor.replay.catalogue import all_probes  # noqa: E402
from logdoctor.replay.checkpoint import Checkpoint  # noqa: E402
from logdoctor.replay.probe import ReplayContext  # noqa: E402

#: Several tests step schedulers on purpose without (or more often than) the optimizer.
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before:UserWarning")


def run(code: str, ckpt: Checkpoint, **thresholds):
    return all_probes()[code](thresholds or None).run(ReplayContext(ckpt))


def checkpoint(model, opt=None, sched=None, scaler=None, step=20, planned=None) -> Checkpoint:
    """What load_checkpoint returns for a training dict (deep-copied: tests mutate it)."""
    return Checkpoint(
        "mem.pt",
        "training_dict",
        model=copy.deepcopy(model.state_dict()),
        optimizers=[copy.deepcopy(opt.state_dict())] if opt else [],
        schedulers=[copy.deepcopy(sched.state_dict())] if sched else [],
        scaler=scaler,
        step=step,
        planned_steps=planned,
    )


def adamw(lr=1e-3, wd=0.0, groups=None, steps=20, model=None):
    model = model or mlp()
    opt = torch.optim.AdamW(groups(model) if groups else model.parameters(), lr=lr, weight_decay=wd)
    train(model, opt, steps)
    return model, opt


def nanogpt_groups(model):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]


@pytest.fixture(scope="module")
def healthy():
    model, opt = adamw(lr=1e-4, groups=nanogpt_groups)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
    for _ in range(20):
        sched.step()
    return checkpoint(model, opt, sched, scaler={"scale": 32768.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000, "_growth_tracker": 812}, planned=100)


PROBE_CODES = [
    "nan_weights", "optimizer_groups", "scheduler_exhausted", "scaler_collapse", "not_in_optimizer",
    "decay_on_norm_bias", "adam_eps_underflow", "update_ratio_low", "update_ratio_high",
    "bn_stats_degenerate", "weight_norm_outlier",
]


@pytest.mark.parametrize("code", PROBE_CODES)
def test_healthy_checkpoint_is_clear(healthy, code):
    outcome = run(code, healthy)
    assert outcome.status == "clear", [f.title for f in outcome.findings]


def test_nan_weights_names_weights_and_moments(healthy):
    ckpt = copy.deepcopy(healthy)
    ckpt.model["2.weight"][0, 0] = float("nan")
    ckpt.optimizers[0]["state"][0]["exp_avg_sq"][3, 0] = float("inf")
    outcome = run("nan_weights", ckpt)
    assert outcome.status == "fired"
    ev = outcome.findings[0].evidence
    assert "2.weight" in ev["tensors"] and "0.weight[exp_avg_sq]" in ev["tensors"]
    assert ev["nan_values"] == 1 and ev["inf_values"] == 1
    assert outcome.findings[0].severity == "critical"


def test_optimizer_groups_reports_actual_lr_per_group():
    model = mlp()
    opt = torch.optim.SGD([{"params": model[0].parameters(), "lr": 0.0}, {"params": model[2:].parameters()}], lr=0.05, momentum=0.9)
    train(model, opt, 3)
    outcome = run("optimizer_groups", checkpoint(model, opt))
    assert outcome.status == "fired" and "group0" in outcome.findings[0].title
    groups = outcome.findings[0].evidence["groups"]
    assert [g["lr"] for g in groups] == [0.0, 0.05] and groups[1]["optimizer"] == "SGD"


def test_decay_on_norm_bias_is_a_note_naming_biases_and_norm_weights():
    """A best-practice note: info (it does not make a run fail), but with its fix."""
    model, opt = adamw(wd=0.1)
    outcome = run("decay_on_norm_bias", checkpoint(model, opt))
    assert outcome.status == "clear" and outcome.findings[0].severity == "info" and outcome.findings[0].fixes
    names = outcome.findings[0].evidence["examples"]
    assert {"0.bias", "3.weight", "3.bias", "5.bias"} <= set(names) and "0.weight" not in names
    assert outcome.findings[0].evidence["names_certain"] is True


def test_decay_mapping_follows_groups_not_model_order():
    """Decay group first, then the rest: counts are exact, names among same-shaped tensors are flagged uncertain."""
    model = mlp()

    def groups(m):
        decay = [p for n, p in m.named_parameters() if p.dim() >= 2 or n == "3.weight"]
        rest = [p for n, p in m.named_parameters() if p.dim() < 2 and n != "3.weight"]
        return [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]

    model, opt = adamw(wd=0.1, groups=groups, model=model)
    ev = run("decay_on_norm_bias", checkpoint(model, opt)).findings[0].evidence
    assert ev["decayed_1d_tensors"] == 1 and ev["decayed_tensors"] == 4
    assert ev["names_certain"] is False


def test_adam_eps_underflow_in_fp16_state(healthy):
    ckpt = copy.deepcopy(healthy)
    for st in ckpt.optimizers[0]["state"].values():
        st["exp_avg_sq"] = st["exp_avg_sq"].half()
    outcome = run("adam_eps_underflow", ckpt)
    assert outcome.status == "fired"
    ev = outcome.findings[0].evidence
    assert ev["state_dtype"] == "float16" and ev["eps_in_dtype"] == 0.0
    for g in ckpt.optimizers[0]["param_groups"]:
        g["eps"] = 1e-6
    assert run("adam_eps_underflow", ckpt).status == "clear"


def test_adam_eps_in_bf16_that_does_not_underflow_is_a_note(healthy):
    """bf16 keeps fp32's exponent range: the default eps 1e-8 is representable, so it is info, not a warning."""
    ckpt = copy.deepcopy(healthy)
    for st in ckpt.optimizers[0]["state"].values():
        st["exp_avg_sq"] = st["exp_avg_sq"].bfloat16()
    outcome = run("adam_eps_underflow", ckpt)
    assert outcome.status == "clear" and outcome.findings[0].severity == "info"
    assert outcome.findings[0].evidence["eps_in_dtype"] > 0


def test_not_in_optimizer_names_the_missing_head():
    model = mlp()
    opt = torch.optim.AdamW(model[:5].parameters(), lr=1e-3)
    train(model, opt, 3)
    outcome = run("not_in_optimizer", checkpoint(model, opt))
    assert outcome.status == "fired"
    assert outcome.findings[0].evidence["not_in_any_group"] == ["5.weight", "5.bias"]


def test_never_updated_names_params_without_state():
    """In a group but skipped at every step (gradient None): no optimizer state while the others have some."""
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for p in model[0].parameters():
        p.requires_grad_(False)
    train(model, opt, 3)
    ckpt = checkpoint(model, opt)
    outcome = run("never_updated", ckpt)
    assert outcome.status == "fired" and outcome.findings[0].evidence["no_state"] == ["0.weight", "0.bias"]
    assert run("not_in_optimizer", ckpt).status == "clear"


def test_never_updated_names_params_whose_moments_are_zero():
    """Dead ReLUs: the first layer's gradient is exactly 0 at every step, so its Adam moments stay 0. That is the
    finding; the update-ratio probes must not read it as an LR too low."""
    model = mlp()
    with torch.no_grad():
        model[0].bias.fill_(-100.0)
    model, opt = adamw(lr=1e-3, model=model)
    ckpt = checkpoint(model, opt)
    outcome = run("never_updated", ckpt)
    assert outcome.status == "fired" and {"0.weight", "0.bias", "2.weight"} <= set(outcome.findings[0].evidence["zero_moments"])
    assert run("update_ratio_low", ckpt).status == "skipped" and run("update_ratio_high", ckpt).status == "skipped"


def test_frozen_backbone_left_out_of_the_optimizer_is_a_note():
    """The input-side layers frozen and left out, the rest optimised: the correct fine-tuning setup."""
    model = mlp()
    opt = torch.optim.AdamW(model[2:].parameters(), lr=1e-3)
    train(model, opt, 3)
    outcome = run("not_in_optimizer", checkpoint(model, opt))
    assert outcome.status == "clear" and outcome.findings[0].severity == "info"
    assert "frozen backbone" in outcome.findings[0].title


def test_float_buffers_outside_the_optimizer_are_not_blamed_without_model():
    """detectron2-style registered buffers (pixel_mean / pixel_std, shape (3, 1, 1)) are in no param group by
    design: without --model they are an info note, not a warning."""
    model, opt = adamw(steps=3)
    ckpt = checkpoint(model, opt)
    ckpt.model = {"pixel_mean": torch.zeros(3, 1, 1), "pixel_std": torch.ones(3, 1, 1), **ckpt.model}
    outcome = run("not_in_optimizer", ckpt)
    assert outcome.status == "clear" and outcome.findings[0].severity == "info"
    assert outcome.findings[0].evidence["not_in_any_group"] == ["pixel_mean", "pixel_std"]


def test_a_matrix_outside_the_optimizer_is_still_blamed_without_model():
    """Near miss: a learned position embedding (1, 8, 64) left out of the optimizer looks like a parameter."""
    model, opt = adamw(steps=3)
    ckpt = checkpoint(model, opt)
    ckpt.model = {"pos_embed": torch.randn(1, 8, 64), **ckpt.model}
    outcome = run("not_in_optimizer", ckpt)
    assert outcome.status == "fired" and outcome.findings[0].evidence["not_in_any_group"] == ["pos_embed"]


def test_scheduler_stepped_past_its_total():
    model, opt = adamw(steps=1)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    for _ in range(40):
        sched.step()
    outcome = run("scheduler_exhausted", checkpoint(model, opt, sched, step=40))
    assert outcome.status == "fired"
    assert outcome.findings[0].evidence["last_epoch"] == 40 and outcome.findings[0].evidence["planned_total"] == 10


def test_scheduler_at_floor_with_most_of_the_run_left():
    """HF-style: a LambdaLR (no total in its state) decayed to ~0 at step 50 of a 1,000-step run."""
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / 50))
    train(model, opt, 50, sched)
    fired = run("scheduler_exhausted", checkpoint(model, opt, sched, step=50, planned=1000))
    assert fired.status == "fired" and fired.findings[0].evidence["planned_steps"] == 1000
    at_end = run("scheduler_exhausted", checkpoint(model, opt, sched, step=50, planned=52))
    assert at_end.status == "clear"
    sgd = torch.optim.SGD(model.parameters(), lr=0.1)  # no per-parameter step count to compare with
    plain = torch.optim.lr_scheduler.LambdaLR(sgd, lambda s: 0.01)
    train(model, sgd, 5, plain)
    assert run("scheduler_exhausted", checkpoint(model, sgd, plain, step=5, planned=None)).status == "skipped"


@pytest.mark.parametrize(
    "scale,tracker,status,severity",
    [(0.5, 0, "fired", "critical"), (128.0, 0, "fired", "warning"), (128.0, 1500, "clear", None), (2048.0, 0, "clear", None)],
)
def test_scaler_collapse(healthy, scale, tracker, status, severity):
    ckpt = copy.deepcopy(healthy)
    ckpt.scaler = {**ckpt.scaler, "scale": torch.tensor(scale), "_growth_tracker": tracker}
    outcome = run("scaler_collapse", ckpt)
    assert outcome.status == status
    if severity:
        assert outcome.findings[0].severity == severity


def test_update_ratio_low_and_high_from_adam_moments():
    low = checkpoint(*adamw(lr=1e-7))
    high = checkpoint(*adamw(lr=0.05, steps=5))  # early in a too-hot run, before the weights have grown
    assert run("update_ratio_low", low).status == "fired"
    assert run("update_ratio_high", low).status == "clear"
    assert run("update_ratio_high", high).status == "fired"
    assert run("update_ratio_low", high).status == "clear"
    ev = run("update_ratio_low", low).findings[0].evidence
    assert ev["method"] == "estimated from optimizer moments" and ev["median_ratio"] < 1e-4


def test_update_ratio_needs_optimizer_state():
    assert run("update_ratio_low", checkpoint(mlp())).status == "skipped"


def test_batchnorm_never_updated_and_collapsed_channels(healthy):
    untouched = copy.deepcopy(healthy)
    untouched.model["3.running_mean"].zero_()
    untouched.model["3.running_var"].fill_(1.0)
    untouched.model["3.num_batches_tracked"].zero_()
    outcome = run("bn_stats_degenerate", untouched)
    assert outcome.status == "fired" and "never updated" in outcome.findings[0].title
    collapsed = copy.deepcopy(healthy)
    collapsed.model["3.running_var"][:32] = 1e-9
    outcome = run("bn_stats_degenerate", collapsed)
    assert outcome.status == "fired" and "50%" in outcome.findings[0].title


def test_weight_norm_outlier(healthy):
    ckpt = copy.deepcopy(healthy)
    ckpt.model["2.weight"] *= 1000
    outcome = run("weight_norm_outlier", ckpt)
    assert outcome.status == "fired" and outcome.findings[0].metric == "2.weight"
    zero = copy.deepcopy(healthy)
    zero.model["5.weight"].zero_()
    assert run("weight_norm_outlier", zero).findings[0].metric == "5.weight"


def test_thresholds_are_configurable(healthy):
    assert run("update_ratio_low", healthy, limit=1.0).status == "fired"


def test_probe_documentation_is_complete():
    for code, cls in all_probes().items():
        doc = cls.doc()
        assert doc.get("Summary") and doc.get("Symptom") and doc.get("Fix"), code
        assert len([line for line in doc.get("Root causes", "").splitlines() if line.strip().startswith("- ")]) >= 2, code


def test_lr_annealed_to_zero_at_the_planned_end_is_not_a_fault():
    """A cosine schedule finished exactly at T_max: LR 0 is expected; update ratios judge the configured LR."""
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=20)
    train(model, opt, 20, sched)
    ckpt = checkpoint(model, opt, sched, step=20)
    assert ckpt.optimizers[0]["param_groups"][0]["lr"] == 0.0
    for code in ("optimizer_groups", "scheduler_exhausted", "update_ratio_low"):
        assert run(code, ckpt).status == "clear", code
    ckpt.step, ckpt.planned_steps = 20, 200  # the same LR 0 with 90 % of the run to go is a fault
    assert run("scheduler_exhausted", ckpt).status == "fired"
    ckpt.schedulers = []  # also read from the groups' initial_lr when no scheduler state was saved (timm)
    assert run("scheduler_exhausted", ckpt).status == "fired"
    assert run("optimizer_groups", ckpt).status == "clear"  # the scheduler's doing, reported once


def test_lr_zero_without_a_scheduler_is_a_fault():
    model, opt = adamw(lr=1e-3, steps=3)
    ckpt = checkpoint(model, opt)
    ckpt.optimizers[0]["param_groups"][0]["lr"] = 0.0
    assert run("optimizer_groups", ckpt).status == "fired"


def test_name_keyed_optimizer_state_maps_directly():
    """FSDP-style optimizer state dicts key parameters by name instead of index."""
    model, opt = adamw(wd=0.1)
    sd = opt.state_dict()
    names = [n for n, _ in model.named_parameters()]
    sd = {"state": {names[i]: st for i, st in sd["state"].items()}, "param_groups": [{**g, "params": [names[i] for i in g["params"]]} for g in sd["param_groups"]]}
    ckpt = checkpoint(model)
    ckpt.optimizers = [sd]
    ev = run("decay_on_norm_bias", ckpt).findings[0].evidence
    assert ev["names_certain"] is True and "3.weight" in ev["examples"]


def test_scaler_collapse_from_a_real_gradscaler():
    """A real GradScaler whose scaled loss overflows every step halves itself down toward 1."""
    import torch.nn.functional as F

    from _replay_models import batch

    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cpu")
    x, y = batch()
    for _ in range(20):
        opt.zero_grad()
        scaler.scale(F.cross_entropy(model(x), y) * 1e38).backward()
        scaler.step(opt)
        scaler.update()
    outcome = run("scaler_collapse", checkpoint(model, opt, scaler=scaler.state_dict()))
    assert outcome.status == "fired" and outcome.findings[0].evidence["scale"] <= 8


def test_scheduler_stepped_per_micro_batch():
    """Gradient accumulation over 4 micro-batches with scheduler.step() on every micro-batch."""
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    for _ in range(10):
        train(model, opt, 1)
        for _ in range(4):
            sched.step()
    outcome = run("scheduler_exhausted", checkpoint(model, opt, sched, step=10))
    assert outcome.status == "fired"
    assert outcome.findings[0].evidence["optimizer_steps"] == 10 and outcome.findings[0].evidence["scheduler_steps_per_optimizer_step"] == 4.0
    in_step = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    for _ in range(10):
        train(model, opt, 1)
        in_step.step()
    assert run("scheduler_exhausted", checkpoint(model, opt, in_step, step=20)).status == "clear"


def test_scaler_skipped_steps_from_the_optimizer_step_count(healthy):
    """The trainer counted 30 steps; Adam applied 20: a third were skipped, and scale 2048 fits 10 halvings."""
    ckpt = copy.deepcopy(healthy)
    ckpt.step, ckpt.scaler = 30, {**ckpt.scaler, "scale": 2048.0, "_growth_tracker": 0}
    outcome = run("scaler_collapse", ckpt)
    assert outcome.status == "fired" and outcome.findings[0].evidence["skipped_fraction"] == pytest.approx(1 / 3, abs=1e-3)
    ckpt.step = 21
    assert run("scaler_collapse", ckpt).status == "clear"


def test_step_counting_micro_batches_is_not_skipped_steps(healthy):
    """Near miss: gradient accumulation over 5 micro-batches, `step` counts them; 80 skips would have left
    the scale near 0, not at 32768."""
    ckpt = copy.deepcopy(healthy)
    ckpt.step = 100
    outcome = run("scaler_collapse", ckpt)
    assert outcome.status == "clear" and outcome.findings == []


def test_lightning_global_step_counts_every_optimizer(healthy):
    """Near miss: a Lightning GAN, generator and discriminator 20 steps each, global_step 40."""
    ckpt = copy.deepcopy(healthy)
    ckpt.layout, ckpt.step = "lightning", 40
    ckpt.optimizers = ckpt.optimizers * 2
    ckpt.scaler = {**ckpt.scaler, "scale": 1024.0, "_growth_tracker": 0}
    assert run("scaler_collapse", ckpt).status == "clear"
    ckpt.step = 52  # 12 of 52 steps really skipped (and scale 1024 fits 12 halvings): fires
    assert run("scaler_collapse", ckpt).status == "fired"


def stepped_past_total_iters(build):
    """20 AdamW steps under the scheduler `build(opt)` makes (total_iters=5), saved as a checkpoint."""
    model = mlp()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = build(opt)
    train(model, opt, 20, sched)
    return checkpoint(model, opt, sched, step=20)


@pytest.mark.parametrize(
    "build",
    [
        lambda opt: torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=5),
        lambda opt: torch.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=5),
    ],
    ids=["linear_warmup", "constant_warmup"],
)
def test_a_finished_warmup_is_not_an_exhausted_schedule(build):
    """Near miss: a LinearLR / ConstantLR warmup's total_iters is the warmup's length; past it the LR is at base."""
    ckpt = stepped_past_total_iters(build)
    assert run("scheduler_exhausted", ckpt).status in ("clear", "skipped")
    assert not ReplayContext(ckpt).finished()


@pytest.mark.parametrize(
    "build",
    [
        lambda opt: torch.optim.lr_scheduler.LinearLR(opt, start_factor=1.0, end_factor=0.0, total_iters=5),
        lambda opt: torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=5),
    ],
    ids=["linear_decay", "polynomial"],
)
def test_a_decaying_schedule_stepped_past_its_total_fires(build):
    outcome = run("scheduler_exhausted", stepped_past_total_iters(build))
    assert outcome.status == "fired" and outcome.findings[0].evidence["planned_total"] == 5


def test_scheduler_lengths_saved_as_tensors_count_and_flags_do_not():
    from logdoctor.replay.probe import planned_total, state_number

    assert planned_total({"T_max": torch.tensor(100), "last_epoch": 5}) == (100.0, "CosineAnnealingLR")
    assert planned_total({"total_iters": 10, "start_factor": 0.1, "end_factor": 1.0}) is None  # a warmup
    assert state_number(torch.tensor([3.0])) == 3.0 and state_number(True) is None and state_number(torch.ones(2)) is None
