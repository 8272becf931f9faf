"""Metric names -> roles (train loss, validation loss, LR, grad norm, ...).

Names in the wild vary endlessly (`loss`, `train/loss`, `Loss/train`,
`train_loss_step`, `validation/epoch_loss`, `eval_loss`, `lr-AdamW`,
`lr/group_0`, `scaler/scale`...). Rather than a list of exact strings we split
each name into lower-case tokens and decide from the tokens: which quantity it
is (loss, lr, grad norm, scale, accuracy, reward) and which split it belongs to
(train, validation, test). Config can pin any role to names or /regexes/.

Conventions the rules rely on:

* accuracy-like metrics (accuracy, F1, mAP, BLEU...) and rewards are
  higher-is-better (`higher_is_better`); losses, LR, norms are not;
* metrics that are only ever computed on held-out data (mAP, precision,
  recall, F1, BLEU, top-k accuracy...) count as validation when the name
  names no split (YOLO's `metrics/mAP50(B)`, `metrics/accuracy_top1`), while
  a bare `accuracy` is the training accuracy (Keras);
* `add_hparams` summary metrics (`hparam/...`) are one number per session,
  never a role;
* every LR series is kept (one per param group: `lr/pg0`, `lr-AdamW/pg1`);
  the primary is the first group; momentum / betas / weight decay logged
  next to the LR are not LRs;
* a setting word makes a name a hyperparameter, not the curve
  (`lr_decay_steps`, `loss_scale_window`, `max_grad_norm`; for a loss only
  as its last word: `loss_weight` is a setting, `weight_loss` a loss);
  perplexity is exp(loss), a view of the loss, never the loss itself;
* a bare `scale` (`train/scale`) is ambiguous: GradScaler's scale, but also
  CLIP's logit scale or an augmentation setting. It is the loss scale only
  when its values are all powers of two (`amp_scale_candidates`), the
  signature of every dynamic AMP scaler.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from functools import lru_cache

import numpy as np

ROLES = (
    "train_loss",
    "val_loss",
    "lr",
    "grad_norm",
    "loss_scale",
    "train_acc",
    "val_acc",
    "val_err",
    "reward",
    "epoch",
)

_VAL = {"val", "valid", "validation", "eval", "evaluation", "dev", "holdout", "heldout", "vl", "validate"}
#: Split words written as two tokens (`hold_out_loss`).
_VAL_PAIRS = {("hold", "out"), ("held", "out")}
#: `add_hparams` summary metrics (`hparam/loss`, `<time>/hparam/accuracy`): one final value per
#: session, not a curve; they must never stand in for the run's loss or accuracy.
_HPARAM = {"hparam", "hparams"}
_TEST = {"test", "testing"}
_TRAIN = {"train", "training", "tr", "trn"}
#: Accuracy-like quantities, best summary first (the primary is taken from the lowest tier).
#: `top1`, `acc1`, `acc@1` are normalised to "top1", any other k to "topk" (see `_vocabulary`).
_ACC_TIERS = (
    {"acc", "accuracy", "top1", "correct", "sparsecategoricalaccuracy", "categoricalaccuracy", "binaryaccuracy"},
    {"map", "map50", "map5095", "ap", "ap50", "ap5095", "ap75"},
    {"f1", "auc", "auroc", "bleu", "rouge", "rouge1", "rouge2", "rougel", "iou", "miou", "dice", "r2", "exact", "em", "matthews", "mcc"},
    {"precision", "recall", "topk"},
)
_ACC = set().union(*_ACC_TIERS)
#: Scores nobody computes on the training batches: validation when the name says no split.
_EVAL_ONLY = (_ACC - _ACC_TIERS[0]) | {"top1"}
_REWARD = {"reward", "rewards", "return", "returns", "rew", "episodereward", "episodereturn"}
#: Generator-side and discriminator-side words of adversarial (GAN) losses: `loss_G`, `D_A`, `errD`.
GENERATOR = frozenset({"g", "gen", "generator", "netg", "errg"})
DISCRIMINATOR = frozenset({"d", "disc", "discriminator", "netd", "errd"})
#: CycleGAN's other printed parts (`cycle_A`, `idt_B`): loss terms with no `loss` in their names.
_GAN_TERMS = {"cycle", "idt"}
#: Name words of a loss logged as the total of its parts (a VAE's negative ELBO is reconstruction + KL).
TOTAL_WORDS = frozenset({"total", "overall", "elbo"})
#: Preference-optimisation words (TRL's DPO logs `rewards/chosen`, `rewards/rejected`, `rewards/margins`).
_PREFERENCE = {"chosen", "rejected", "margin", "margins"}
#: Error rates (lower is better): word / character / translation error rate, `top1_err`, `error`.
_ERR = {"wer", "cer", "ter", "mer", "err", "error", "errors", "errorrate"}
#: Error rates nobody computes on training batches: validation when the name says no split.
_EVAL_ONLY_ERR = {"wer", "cer", "ter", "mer", "top1", "topk"}
#: Optimizer settings logged beside the LR (`lr-AdamW-momentum`, `beta1`): not learning rates.
_NOT_LR = {"momentum", "beta", "beta1", "beta2", "betas", "wd", "decay", "weight", "eps"}
#: Words that make a name a setting of the quantity rather than its value (`lr_decay_steps`,
#: `loss_weight`, `loss_scale_window`, `vf_coef`): hyperparameters that sweep tables and CSVs carry.
_SETTING = {
    "steps", "iters", "epochs", "interval", "window", "patience", "factor", "gamma", "milestones",
    "scheduler", "warmup", "type", "coef", "coeff", "weight", "weights", "lambda", "threshold", "tolerance", "decay",
}
#: exp(loss): monotone in the loss but on another scale (log K, divergence thresholds would misread it).
_DERIVED = {"ppl", "perplexity"}
#: Namespace words an epoch counter is filed under (`trainer/epoch`, composer's `time/epoch`).
_EPOCH_NAMESPACE = {"trainer", "time", "progress", "current", "curr"}
HIGHER_IS_BETTER = frozenset({"train_acc", "val_acc", "reward"})
#: Spread statistics of a quantity (`Eval_StdReturn`, `loss_std`) are not the quantity's curve.
_SPREAD = {"std", "stddev", "var", "variance"}
#: The smallest peak an AMP scale can have and still be told from a small constant setting (2 ** 4).
_MIN_AMP_SCALE_PEAK = 16.0
_QUANTITY = _ACC | _REWARD | {"lr", "learning", "rate", "grad", "grads", "gradient", "norm", "scale", "scaler", "amp"}
_EXTRA_LOSS_PARTS = {"step", "epoch", "epochs", "mean", "avg", "average", "total", "overall", "batch", "running"}


def tokens(name: str) -> list[str]:
    """Lower-case tokens of a metric name: splits on separators and camelCase."""
    return list(_tokens(name))


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SEPARATORS = re.compile(r"[^A-Za-z0-9]+")


@lru_cache(maxsize=4096)
def _tokens(name: str) -> tuple[str, ...]:
    """`tokens`, remembered: roles and rules ask for the same few names' tokens ~100 times a run."""
    return tuple(t for t in _SEPARATORS.split(_CAMEL.sub(" ", name).lower()) if t)


def _vocabulary(name: str, toks: list[str]) -> set[str]:
    """Words to look quantities up by: the tokens, the separator-only pieces (so acronyms that
    camelCase splitting breaks, `mIoU`, still read as one word) and top-k accuracy (`acc1`,
    `top5`, `acc@1`) normalised to "top1" / "topk"."""
    words = set(toks) | {t for t in re.split(r"[^a-z0-9]+", name.lower()) if t}
    for i, t in enumerate(toks):
        k = re.fullmatch(r"(?:acc|top)(\d+)", t)
        if k is None and t in ("acc", "top") and i + 1 < len(toks) and toks[i + 1].isdigit():
            k = re.fullmatch(r"(\d+)", toks[i + 1])
        if k is not None:
            words.add("top1" if k.group(1) == "1" else "topk")
    return words


def _is_accuracy(words: set[str]) -> bool:
    return bool(words & _ACC) or any(w.endswith(("accuracy", "accuracies")) for w in words)


def split_of(token: str) -> str | None:
    """The data split one name token names ('train', 'val', 'test'), or None."""
    return _split([token])


def _split(toks: list[str]) -> str | None:
    """Which data split a name refers to: 'train', 'val', 'test' or None (unsaid)."""
    for t in toks:
        if t in _VAL or t.startswith("val") and t not in ("value", "values"):
            return "val"
    if _VAL_PAIRS & set(zip(toks, toks[1:])):
        return "val"
    if any(t in _TEST for t in toks):
        return "test"
    if any(t in _TRAIN for t in toks):
        return "train"
    return None


def _is_lr(toks: list[str], name: str) -> bool:
    if (_NOT_LR | _SETTING) & set(toks):
        return False
    joined = "".join(toks)
    return "lr" in toks or "learningrate" in joined or name.lower().startswith("lr-") or "lr" in [
        t.rstrip("0123456789") for t in toks
    ]


def _is_grad_norm(toks: list[str]) -> bool:
    if _SETTING & set(toks) or toks[0] == "max":  # `max_grad_norm` is the clip threshold setting
        return False
    joined = "_".join(toks)
    return ("grad" in toks or "gradient" in toks or "gradients" in toks or "grads" in toks) and (
        "norm" in toks or "l2" in toks
    ) or "gradnorm" in joined.replace("_", "") or joined in ("total_norm",) or "gnorm" in toks  # fairseq


def _is_scale(toks: list[str]) -> bool:
    if _SETTING & set(toks):
        return False
    return "scale" in toks and ("loss" in toks or "scaler" in toks or "amp" in toks or "grad" in toks) or (
        "lossscale" in "".join(toks)
    )


def _is_lossy(toks: list[str]) -> bool:
    """A loss by name: a `loss` word, cross-entropy (`cross_entropy`, composer's
    `LanguageCrossEntropy`, Keras' `categorical_crossentropy`), or a plural `losses` with nothing
    but split words beside it (`losses/train`). cleanrl files `entropy` and `approx_kl` under
    `losses/`: with another word, a plural `losses` is a namespace unless last."""
    if any("loss" in t and t != "losses" for t in toks) or toks[-1] == "losses":
        return True
    if any(t.endswith("crossentropy") for t in toks) or ("cross", "entropy") in set(zip(toks, toks[1:])):
        return True
    return "losses" in toks and all(t in _VAL | _TEST | _TRAIN | _EXTRA_LOSS_PARTS or t == "losses" for t in toks)


def is_adversarial_part(name: str) -> bool:
    """A generator's or discriminator's loss by name (`G_A`, `loss_D`, `errG`, `disc_loss`)."""
    return _is_gan_part(tokens(name)) and bool(set(tokens(name)) & (GENERATOR | DISCRIMINATOR))


def _is_gan_part(toks: list[str]) -> bool:
    """A GAN loss term printed without a `loss` word: a side word (`G`, `D`, `errD`) or a CycleGAN
    term (`cycle`, `idt`), alone or with one domain letter or `loss` (`D_A`, `loss_G`, `cycle_B`)."""
    if not toks or len(toks) > 2 or not set(toks) & (GENERATOR | DISCRIMINATOR | _GAN_TERMS):
        return False
    rest = [t for t in toks if t not in GENERATOR | DISCRIMINATOR | _GAN_TERMS]
    return all(len(t) == 1 or t in ("loss", "err") for t in rest) and (toks[0] not in _GAN_TERMS or len(toks) == 2)


def classify(name: str) -> str | None:
    """The role a single metric name suggests by itself, or None."""
    toks = tokens(name)
    if not toks or (_SPREAD | _DERIVED | _HPARAM) & set(toks):
        return None
    if _is_scale(toks):
        return "loss_scale"
    if _is_grad_norm(toks):
        return "grad_norm"
    if _is_lr(toks, name):
        return "lr"
    split = _split(toks)
    if _is_gan_part(toks):
        return "train_loss"  # CycleGAN prints `D_A: 0.23 G_A: 0.48 cycle_A: 2.49 idt_A: 1.00`
    # the objective under other names (`objective`, `train_cost`, `val_mse`); a Keras-style `mse`
    # metric next to `loss` stays second: `_preference` ranks the plain loss first
    if (_is_lossy(toks) or toks[-1] in ("nll", "ce", "xent", "objective", "cost", "mse", "rmse", "mae", "elbo")) and toks[-1] not in _SETTING:
        if split == "val":
            return "val_loss"
        if split == "test":
            return "test_loss"
        return "train_loss"
    words = _vocabulary(name, toks)
    if words & _ERR:
        # an error rate is a task score read the other way round (`val/top1_err` is no accuracy);
        # a training-split error rate takes no role
        if split is None and words & _EVAL_ONLY_ERR:
            split = "val"
        return "val_err" if split in ("val", "test") else None
    if _is_accuracy(words):
        if split is None and words & _EVAL_ONLY:
            split = "val"
        return "val_acc" if split in ("val", "test") else "train_acc"
    if any(t in _REWARD for t in toks) or any(t.endswith(("return", "reward")) for t in toks):
        # DPO's implicit rewards (`rewards/chosen`, `rewards/margins`) score a supervised loss,
        # not returns an RL policy collects: they make no run reinforcement learning
        return None if _PREFERENCE & set(toks) else "reward"
    rest = [t for t in toks if t not in _TRAIN]
    if rest and rest[-1] in ("epoch", "epochs") and set(rest[:-1]) <= _EPOCH_NAMESPACE:  # not `epoch_time`
        return "epoch"
    return None


def higher_is_better(role: str) -> bool:
    """True for roles where a rising curve is progress (accuracy-like, reward)."""
    return role in HIGHER_IS_BETTER


def _acc_tier(name: str, toks: list[str]) -> int:
    words = _vocabulary(name, toks)
    for tier, tier_words in enumerate(_ACC_TIERS):
        if words & tier_words or (tier == 0 and any(w.endswith(("accuracy", "accuracies")) for w in words)):
            return tier
    return len(_ACC_TIERS)


def _preference(name: str, counts: dict[str, int], step_points: int = 0) -> tuple:
    """Sort key among candidates for one role: plain totals, step-level, most points first.

    Step-level series win for their resolution (an epoch mean hides the spikes within it); an
    epoch-level one with more than twice the points of every step-level candidate (`step_points`:
    their most points) is the finer reading after all and loses no rank: a Lightning
    `train_loss_step` logged every 50 steps of a one-batch epoch has 8 points beside 400 of
    `train_loss_epoch`.
    """
    toks = tokens(name)
    extra = [t for t in toks if t not in _VAL | _TEST | _TRAIN | _EXTRA_LOSS_PARTS | _QUANTITY and "loss" not in t]
    total = bool(TOTAL_WORDS & set(toks))
    epoch_level = "epoch" in toks and counts.get(name, 0) <= 2 * step_points
    split = _split(toks)
    # a role both splits can fill (reward, epoch): the training curve first, test last
    # an adversarial part hovers by design: any other loss part is a better primary
    # a loss named for a score (`loss_iou`, `loss_dice`) is a loss part, not an accuracy: no tier
    tier = len(_ACC_TIERS) if _is_lossy(toks) else _acc_tier(name, toks)
    return (split == "test", split == "val", not total, is_adversarial_part(name), tier, len(extra), epoch_level, -counts.get(name, 0), len(name), name)


def amp_scale_candidates(metrics: Iterable[str], values_of: Callable[[str], np.ndarray | None]) -> set[str]:
    """Bare `scale` metrics (`scale`, `train/scale`) whose values say they are an AMP loss scale.

    A dynamic GradScaler only ever holds powers of two (init 2**16, x2 growth, x0.5 backoff), so
    all finite values exact powers of two with a peak of at least 16 is its signature; a CLIP logit
    scale (exp of a learned temperature) or an augmentation scale of 1.0 never looks like that.
    """
    found = set()
    for name in metrics:
        if [t for t in tokens(name) if t not in _TRAIN] != ["scale"]:
            continue
        values = values_of(name)
        if values is None:
            continue
        ok = values[np.isfinite(values)]
        if len(ok) >= 2 and np.all(ok > 0) and ok.max() >= _MIN_AMP_SCALE_PEAK and np.all(np.frexp(ok)[0] == 0.5):
            found.add(name)
    return found


def _matches(pattern: str, name: str) -> bool:
    if len(pattern) > 2 and pattern.startswith("/") and pattern.endswith("/"):
        return re.search(pattern[1:-1], name) is not None
    return pattern == name


def _held_out_twins(metrics: list[str]) -> set[tuple[str, ...]]:
    """The names of validation / test metrics with their split words taken out (`val_dice_coef`
    -> dice, coef): a split-less metric of the same name is their training counterpart."""
    twins = set()
    for name in metrics:
        toks = tokens(name)
        if _split(toks) in ("val", "test"):
            twins.add(tuple(t for t in toks if _split([t]) is None and t not in ("hold", "held", "out")))
    return twins


def assign_roles(
    metrics: Iterable[str],
    counts: dict[str, int] | None = None,
    overrides: dict[str, list[str]] | None = None,
    amp_scales: Collection[str] = (),
) -> dict[str, list[str]]:
    """Map roles to metric names, best candidate first.

    `counts` (points per metric) breaks ties toward the densest series; a test
    loss stands in for validation loss only when no validation loss exists;
    `amp_scales` are the names `amp_scale_candidates` found by their values.
    """
    counts = counts or {}
    metrics = list(metrics)
    found: dict[str, list[str]] = {}
    pinned: set[str] = set()
    for role, patterns in (overrides or {}).items():
        # the order the patterns are listed in is the user's preference: the first one's match is primary
        hits = [m for p in patterns for m in metrics if _matches(p, m)]
        hits = list(dict.fromkeys(hits))
        if hits:
            found[role] = hits
            pinned.update(hits)
    held_out = _held_out_twins(metrics)
    for name in metrics:
        if name in pinned:
            continue
        role = classify(name) or ("loss_scale" if name in amp_scales else None)
        if role in ("val_acc", "val_err") and _split(tokens(name)) is None and tuple(tokens(name)) in held_out:
            # `dice_coef` beside `val_dice_coef` is the training-batch score, whatever its kind
            role = "train_acc" if role == "val_acc" else None
        if role is None or role in (overrides or {}):
            continue
        found.setdefault(role, []).append(name)
    test = found.pop("test_loss", None)
    if test and "val_loss" not in found:
        found["val_loss"] = test
    for role, names in found.items():
        if role not in (overrides or {}):
            step_points = max((counts.get(n, 0) for n in names if "epoch" not in tokens(n)), default=0)
            names.sort(key=lambda n: _preference(n, counts, step_points))
    return found


def primary(roles: dict[str, list[str]]) -> dict[str, str]:
    """The one metric per role that rules and the JSON report use."""
    return {role: names[0] for role, names in roles.items() if names}
