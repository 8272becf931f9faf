"""What dynamic probes run: the model (from `--model`), one batch, a loss, a device.

`--model` is one of:

* `hf`: the Hugging Face model the checkpoint folder's config.json describes;
* `timm:NAME` (or `timm`, taking the name from the saved args): `timm.create_model`;
* `package.module:factory` or `path/to/file.py:factory`: a zero-argument
  callable, or an nn.Module class (a LightningModule) built from the
  checkpoint's saved hyperparameters the way `load_from_checkpoint` does;
* a `torch.export` program saved as `.pt2`.

`--batch` is a weights-only `.pt` file (its own trust flag: `--trust-batch`);
`--data module:fn` returns a batch or an iterable of them. A batch is a tuple
or list (inputs first, targets second, anything after ignored, unless
`--targets-index` says where the targets are: the elements before them are
the inputs) or a mapping (a dict or an HF BatchEncoding) whose target key is
one of TARGET_KEYS. `--loss` names a loss (cross_entropy, nll, mse, l1,
smooth_l1, bce) or `module:fn`; by default an HF model given `labels` uses its
own loss (which shifts causal-LM labels), and otherwise the loss is inferred
from the targets.
"""
from __future__ import annotations

import copy
import importlib
import importlib.util
import inspect
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from . import ReplayError
from .checkpoint import Checkpoint
from .hf import build_from_config
from .params import map_params, optimizer_slots
from .safe_load import load_file, quiet_torch

INPUT_KEYS = ("input", "inputs", "x", "data", "image", "images", "pixel_values", "input_ids", "features")
TARGET_KEYS = ("target", "targets", "y", "label", "labels")
LOSSES = ("cross_entropy", "nll", "mse", "l1", "smooth_l1", "bce")


@dataclass
class Target:
    """A model with the checkpoint's weights, a batch and a loss, on one device."""

    factory: Callable[[], nn.Module]
    model: nn.Module
    batches: list[tuple[Any, torch.Tensor]]
    loss_name: str
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    device: torch.device
    #: Every parameter (name, shape) in model order; `frozen` has those with requires_grad=False.
    trainable: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)
    frozen: set[str] = field(default_factory=set)
    #: Whether checkpoint weights were loaded into `model`.
    loaded: bool = False
    #: How the checkpoint's tensors fitted the model (see `load_weights`).
    fit: "WeightFit | None" = None
    #: The model computes its own loss from `labels` (HF models): `loss_fn` is not used.
    own_loss: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        """The model does not match the checkpoint: dynamic probes would test a different network."""
        return self.fit is not None and self.fit.partial

    @property
    def batch(self) -> tuple[Any, torch.Tensor]:
        return self.batches[0]

    def fresh(self) -> nn.Module:
        """A newly initialised model (no checkpoint weights) on the device."""
        return self.factory().to(self.device)

    def copy(self) -> nn.Module:
        """A private copy of the checkpoint model, for probes that step or mutate it."""
        return copy.deepcopy(self.model)

    def output(self, model: nn.Module, inputs: Any) -> torch.Tensor:
        """Run the model and return its prediction tensor (logits for HF-style outputs)."""
        if isinstance(inputs, dict):
            out = model(**inputs)
        elif isinstance(inputs, (tuple, list)):
            out = model(*inputs)
        else:
            out = model(inputs)
        if isinstance(out, torch.Tensor):
            return out
        if isinstance(out, dict) or hasattr(out, "logits"):
            logits = out["logits"] if isinstance(out, dict) else out.logits
            if isinstance(logits, torch.Tensor):
                return logits
        if isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
            return out[0]
        raise ReplayError(f"model output of type {type(out).__name__} has no tensor to compute a loss on")

    def loss(self, model: nn.Module, batch: tuple[Any, torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(loss, model output) on `batch` (default: the first batch)."""
        inputs, targets = batch or self.batch
        if self.own_loss:
            out = model(**inputs, labels=targets) if isinstance(inputs, dict) else model(inputs, labels=targets)
            return out.loss, out.logits
        out = self.output(model, inputs)
        return self.loss_fn(out, targets), out

    def classes(self, out: torch.Tensor) -> int | None:
        """Number of classes K for a classification loss (for the log K check)."""
        classifying = self.loss_name in ("cross_entropy", "nll") or (self.own_loss and not self.batch[1].is_floating_point())
        if not classifying or out.dim() < 2:
            return None
        return int(out.shape[-1] if out.dim() == 3 and out.shape[:2] == self.batch[1].shape else out.shape[1])

    def release(self) -> None:
        """Free device memory held by the model and batches."""
        self.model = None  # type: ignore[assignment]
        self.batches = []
        if self.device.type == "cuda":
            torch.cuda.empty_cache()


def train_mode(model: nn.Module) -> nn.Module:
    """model.train(), except for torch.export programs, whose mode is fixed when exported."""
    try:
        model.train()
    except NotImplementedError:
        pass
    return model


def without_dropout(model: nn.Module) -> nn.Module:
    """`model` with every dropout layer at p=0, so that losses compared across steps or LRs differ by
    what the optimizer did, not by which units dropout drew (HF models train with dropout 0.1)."""
    for m in model.modules():
        if isinstance(m, nn.modules.dropout._DropoutNd):
            m.p = 0.0
    return model


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ReplayError("--device cuda: no CUDA device is available (use --device cpu or auto)")
    if name not in ("cpu", "cuda"):
        raise ReplayError(f"--device {name}: expected cuda, cpu or auto")
    return torch.device(name)


def resolve(spec: str, what: str) -> Any:
    """`module:attr` or `file.py:attr` -> the attribute (imports user code, which the user asked for)."""
    if ":" not in spec:
        raise ReplayError(f"{what} {spec}: expected module:name or path/to/file.py:name")
    module_name, _, attr = spec.rpartition(":")
    try:
        if module_name.endswith(".py") or "/" in module_name:
            path = Path(module_name)
            if not path.is_file():
                raise ReplayError(f"{what} {spec}: {path} does not exist")
            mod_spec = importlib.util.spec_from_file_location(f"logdoctor_user_{path.stem}", path)
            module = importlib.util.module_from_spec(mod_spec)
            sys.modules[mod_spec.name] = module
            mod_spec.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path:  # `pkg.models:build` from the user's project, as `python -m` would see it
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_name)
    except ReplayError:
        raise
    except Exception as exc:  # noqa: BLE001 - user code can raise anything on import
        raise ReplayError(f"{what} {spec}: cannot import {module_name} ({type(exc).__name__}: {exc})") from None
    if not hasattr(module, attr):
        raise ReplayError(f"{what} {spec}: {module_name} has no attribute '{attr}'")
    return getattr(module, attr)


def model_factory(spec: str, ckpt: Checkpoint) -> Callable[[], nn.Module]:
    """A zero-argument builder for the model `spec` names (see the module docstring)."""
    if spec == "hf":
        if ckpt.config is None:
            raise ReplayError(f"--model hf: {ckpt.path} has no config.json (pass a checkpoint-N/ folder, or module:factory)")
        return lambda: build_from_config(ckpt.config, ckpt.path)
    if spec == "timm" or spec.startswith("timm:"):
        return _timm_factory(spec, ckpt)
    if spec.endswith(".pt2"):
        path = Path(spec)
        if not path.is_file():
            raise ReplayError(f"--model {spec}: no such file")

        def from_program() -> nn.Module:
            try:
                with quiet_torch():
                    return torch.export.load(str(path)).module()
            except Exception as exc:  # noqa: BLE001
                raise ReplayError(f"--model {spec}: not a loadable torch.export program ({exc})") from None

        return from_program
    factory = resolve(spec, "--model")
    if not callable(factory):
        raise ReplayError(f"--model {spec}: '{spec.rpartition(':')[2]}' is not callable")
    kwargs = _saved_arguments(factory, ckpt, spec) if isinstance(factory, type) and issubclass(factory, nn.Module) else {}

    def build() -> nn.Module:
        try:
            model = factory(**kwargs)
        except Exception as exc:  # noqa: BLE001
            raise ReplayError(f"--model {spec}: the factory raised {type(exc).__name__}: {exc}") from None
        if not isinstance(model, nn.Module):
            raise ReplayError(f"--model {spec}: returned a {type(model).__name__}, not a torch.nn.Module")
        return model

    return build


def _saved_arguments(cls: type, ckpt: Checkpoint, spec: str) -> dict[str, Any]:
    """Constructor arguments for a module class from the checkpoint's saved hyperparameters,
    as Lightning's load_from_checkpoint passes them (all of them to **kwargs, else those named)."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return dict(ckpt.hparams)
    names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    kwargs = {k: v for k, v in ckpt.hparams.items() if k in names}
    required = [p.name for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in kwargs]
    if required:
        raise ReplayError(
            f"--model {spec}: {cls.__name__}() needs {', '.join(required)}, which the checkpoint's saved hyperparameters "
            f"do not hold ({', '.join(sorted(ckpt.hparams)) or 'none saved'}); pass a factory module:fn instead"
        )
    return kwargs


def _timm_factory(spec: str, ckpt: Checkpoint) -> Callable[[], nn.Module]:
    """timm.create_model with the saved args' model name and class count, never pretrained weights."""
    name = spec.partition(":")[2] or ckpt.hparams.get("model")
    if not isinstance(name, str) or not name:
        raise ReplayError(f"--model {spec}: the checkpoint saves no timm args naming the model; pass --model timm:NAME")
    try:
        import timm
    except ImportError as exc:
        raise ReplayError(f"--model {spec}: timm cannot be imported ({exc})") from None
    kwargs = {k: ckpt.hparams[k] for k in ("num_classes", "in_chans") if isinstance(ckpt.hparams.get(k), int) and not isinstance(ckpt.hparams[k], bool)}

    def build() -> nn.Module:
        try:
            return timm.create_model(name, pretrained=False, **kwargs)
        except Exception as exc:  # noqa: BLE001 - unknown name, bad arguments
            raise ReplayError(f"--model {spec}: timm.create_model('{name}') failed ({type(exc).__name__}: {exc})") from None

    return build


def split_batch(obj: Any, source: str, targets_index: int | None = None) -> tuple[Any, torch.Tensor]:
    """(inputs, targets) from a tuple/list or a mapping with a recognisable target key.

    A sequence is (inputs, targets, extras...): ids, masks or lengths after the targets are not
    inputs. `targets_index` puts the targets elsewhere; the elements before them are the inputs
    (several become positional arguments), or the one after them when they come first.
    """
    if isinstance(obj, Mapping):
        obj = dict(obj)
        target_key = next((k for k in TARGET_KEYS if k in obj), None)
        if target_key is not None:
            rest = {k: v for k, v in obj.items() if k != target_key}
            input_key = next((k for k in INPUT_KEYS if k in rest), None)
            inputs = rest[input_key] if input_key is not None and len(rest) == 1 else rest
            return inputs, obj[target_key]
    elif isinstance(obj, (tuple, list)) and len(obj) >= 2:
        index = 1 if targets_index is None else targets_index
        if not -len(obj) <= index < len(obj):
            raise ReplayError(f"{source}: --targets-index {index} is outside a batch of {len(obj)} elements")
        index %= len(obj)
        before = list(obj[:index]) if index > 0 else [obj[1]]
        if isinstance(obj[index], torch.Tensor) and before:
            return (before[0] if len(before) == 1 else tuple(before)), obj[index]
    raise ReplayError(
        f"{source}: expected (inputs, targets, ...) with tensor targets (or --targets-index N), "
        f"or a dict with one of {', '.join(TARGET_KEYS)}"
    )


def load_batches(
    batch: str | None, data: str | None, trust: bool, targets_index: int | None = None, warn: Callable[[str], None] | None = None, limit: int = 8
) -> list[tuple[Any, torch.Tensor]]:
    if batch:
        path = Path(batch)
        if not path.is_file():
            raise ReplayError(f"--batch {batch}: no such file")
        return [split_batch(load_file(path, trust, flag="--trust-batch", warn=warn, what="batch file"), str(path), targets_index)]
    fn = resolve(data, "--data")
    try:
        produced = fn() if callable(fn) else fn
        if isinstance(produced, (tuple, list, Mapping)):
            return [split_batch(produced, f"--data {data}", targets_index)]
        if isinstance(produced, Iterable):
            out = []
            for item in produced:
                out.append(split_batch(item, f"--data {data}", targets_index))
                if len(out) >= limit:
                    break
            if out:
                return out
    except ReplayError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise ReplayError(f"--data {data}: raised {type(exc).__name__}: {exc}") from None
    raise ReplayError(f"--data {data}: returned no batch")


def to_device(obj: Any, device: torch.device, dtype: torch.dtype | None = None) -> Any:
    """`obj`'s tensors on `device`; floating ones also in `dtype` when given (a bf16 model takes bf16 inputs)."""
    if isinstance(obj, torch.Tensor):
        return obj.to(device, dtype) if dtype is not None and obj.is_floating_point() else obj.to(device)
    if isinstance(obj, dict):
        return {k: to_device(v, device, dtype) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return type(obj)(to_device(v, device, dtype) for v in obj)
    return obj


def loss_function(name: str | None, targets: torch.Tensor) -> tuple[str, Callable]:
    """A loss by name (inferred from the targets when None): integer targets -> cross-entropy, else MSE."""
    if name and ":" in name:
        return name, resolve(name, "--loss")
    if name is None:
        name = "mse" if targets.is_floating_point() else "cross_entropy"
    if name not in LOSSES:
        raise ReplayError(f"--loss {name}: expected one of {', '.join(LOSSES)} or module:fn")

    def classification(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if out.dim() == 3 and out.shape[:2] == y.shape:  # (batch, sequence, classes)
            out, y = out.reshape(-1, out.shape[-1]), y.reshape(-1)
        if y.is_floating_point() and y.shape == out.shape:  # soft / one-hot targets
            return F.cross_entropy(out, y) if name == "cross_entropy" else -(out * y).sum(dim=1).mean()
        return F.cross_entropy(out, y.long()) if name == "cross_entropy" else F.nll_loss(out, y.long())

    regressions = {
        "mse": F.mse_loss,
        "l1": F.l1_loss,
        "smooth_l1": F.smooth_l1_loss,
        "bce": F.binary_cross_entropy_with_logits,
    }
    if name in ("cross_entropy", "nll"):
        return name, classification
    fn = regressions[name]
    return name, lambda out, y: fn(out, y.to(out.dtype).reshape(out.shape) if y.numel() == out.numel() else y.to(out.dtype))


@dataclass
class WeightFit:
    """How the checkpoint's tensors fitted the --model: a partial fit means it is another network."""

    matched: int
    total: int
    #: Model tensors the checkpoint does not fill (left at init), checkpoint tensors the model has no
    #: place for, and tensors present on both sides with different shapes.
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)

    @property
    def partial(self) -> bool:
        return bool(self.missing or self.unexpected or self.mismatched)


def load_weights(model: nn.Module, ckpt: Checkpoint, notes: list[str]) -> WeightFit | None:
    """Copy the checkpoint's tensors into `model`, tolerating a wrapper prefix (Lightning's `model.`).

    Returns None when the checkpoint holds no weights; raises when not one tensor fits.
    """
    if not ckpt.model:
        return None
    own = model.state_dict()
    best_prefix, model_prefix = _prefixes(list(ckpt.model), own)
    matched = {}
    fit = WeightFit(0, len(own))
    for key, tensor in ckpt.model.items():
        if not key.startswith(best_prefix):
            continue
        name = model_prefix + key[len(best_prefix):]
        if name not in own:
            fit.unexpected.append(key)
        elif tuple(own[name].shape) == tuple(tensor.shape):
            matched[name] = tensor
        else:
            fit.mismatched.append(name)
    if not matched:
        raise ReplayError(
            f"{ckpt.path}: none of its {len(ckpt.model)} tensors match the --model's parameter names/shapes "
            f"(checkpoint: {', '.join(list(ckpt.model)[:3])}; model: {', '.join(list(own)[:3])})"
        )
    model.load_state_dict(matched, strict=False)
    shared = {own[k].data_ptr() for k in matched}  # tied weights (lm_head = embedding) load with their twin
    fit.matched = len(matched)
    fit.missing = [k for k in own if k not in matched and k not in fit.mismatched and own[k].data_ptr() not in shared]
    if best_prefix:
        notes.append(f"checkpoint names carry the prefix '{best_prefix}'; matched without it")
    if model_prefix:
        notes.append(f"the --model's names carry the prefix '{model_prefix}' (a wrapper module); matched under it")
    return fit


def mark_frozen_from_optimizer(model: nn.Module, ckpt: Checkpoint, notes: list[str]) -> None:
    """Set requires_grad=False on the parameters an HF Trainer's optimizer left out.

    The Trainer builds its optimizer from the parameters that require grad, so those it left out
    were frozen by the user's code, which config.json does not record. Only when the optimizer's
    slots map onto the model's parameters with certainty.
    """
    slots = optimizer_slots(ckpt.optimizers)
    named = dict(model.named_parameters())
    pmap = map_params(slots, [(n, tuple(p.shape)) for n, p in named.items()], source="model")
    left_out = pmap.unassigned() if slots and len(slots) < len(named) else []
    if not left_out:
        return
    if not pmap.exact:
        notes.append(f"{len(named) - len(slots)} parameters are in no optimizer group, but which ones is uncertain: none marked frozen")
        return
    for name in left_out:
        named[name].requires_grad_(False)
    notes.append(f"{len(left_out)} parameters in no optimizer group marked frozen (the HF Trainer optimises only those that require grad)")


def _prefixes(keys: list[str], own: dict) -> tuple[str, str]:
    """(prefix to strip from checkpoint names, prefix to add for the model's) matching the most tensors.

    Either side may be wrapped: a Lightning checkpoint saves `model.conv1.weight` for a bare model,
    and a --model factory may return the wrapper (a LightningModule holding `self.model`, a
    Sequential(net, Softmax)) for a bare state_dict. The model-side prefix is the one first name
    component every model tensor shares, so a model with several top-level modules gets none.
    """
    firsts = {k.split(".", 1)[0] for k in own}
    model_side = [""] + ([next(iter(firsts)) + "."] if len(firsts) == 1 and all("." in k for k in own) else [])
    ckpt_side = [""] + sorted({k.split(".", 1)[0] + "." for k in keys if "." in k})
    best, best_hits = ("", ""), -1
    for add in model_side:
        for strip in ckpt_side:
            hits = sum(add + k[len(strip):] in own for k in keys if k.startswith(strip))
            if hits > best_hits:
                best, best_hits = (strip, add), hits
    return best


def build_target(
    ckpt: Checkpoint,
    model_spec: str,
    batch: str | None,
    data: str | None,
    loss: str | None,
    device: str = "auto",
    trust_batch: bool = False,
    targets_index: int | None = None,
    warn: Callable[[str], None] | None = None,
) -> Target:
    """Everything dynamic probes need, or a ReplayError naming what is wrong."""
    if not batch and not data:
        raise ReplayError("--model needs --batch FILE.pt or --data module:fn to run dynamic probes")
    dev = pick_device(device)
    factory = model_factory(model_spec, ckpt)
    with quiet_torch():
        model = factory()
    notes: list[str] = []
    fit = load_weights(model, ckpt, notes)
    if fit is not None and model_spec == "hf" and ckpt.layout == "hf_trainer" and ckpt.optimizers:
        mark_frozen_from_optimizer(model, ckpt, notes)
    model = model.to(dev)
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    batches = [(to_device(x, dev, dtype), to_device(y, dev)) for x, y in load_batches(batch, data, trust_batch, targets_index, warn)]
    own = loss is None and _computes_own_loss(model, batches[0])
    name, fn = ("the model's own loss", None) if own else loss_function(loss, batches[0][1])
    target = Target(factory, model, batches, name, fn, dev, loaded=fit is not None, fit=fit, own_loss=own, notes=notes)
    target.trainable = [(n, tuple(p.shape)) for n, p in model.named_parameters()]
    target.frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
    try:
        with torch.no_grad(), quiet_torch():  # a broadcasting-loss warning would precede the error line
            value, _ = target.loss(model)
    except Exception as exc:  # noqa: BLE001 - shape / dtype mismatches between model, batch and loss
        problem = f"--model {model_spec}: forward + {name} on the batch failed ({type(exc).__name__}: {exc})"
        if target.partial:  # another network than the checkpoint's: partial_load reports that, nothing runs it
            notes.append(problem)
            return target
        if isinstance(exc, ReplayError):
            raise
        raise ReplayError(problem) from None
    if not isinstance(value, torch.Tensor) or value.numel() != 1:
        raise ReplayError(f"--loss {name}: returned {getattr(value, 'shape', type(value).__name__)}, expected a scalar tensor")
    if not math.isfinite(float(value)):
        notes.append(f"loss on the batch with the checkpoint weights is {float(value)}")
    return target


def _computes_own_loss(model: nn.Module, batch: tuple[Any, torch.Tensor]) -> bool:
    """Does the model take `labels` and return its own loss (HF models: causal-LM labels get shifted)?"""
    try:
        takes_labels = "labels" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
    return takes_labels and hasattr(model, "config")
