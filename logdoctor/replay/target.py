"""What dynamic probes run: the model (from `--model`), one batch, a loss, a device.

`--model` is `package.module:factory`, `path/to/file.py:factory` (a zero-argument
callable or an nn.Module class) or a `torch.export` program saved as `.pt2`.
`--batch` is a weights-only `.pt` file holding `(inputs, targets)` or a dict
with input/target keys; `--data module:fn` returns such a batch or an iterable
of them. `--loss` names a loss (cross_entropy, nll, mse, l1, smooth_l1, bce)
or `module:fn`; by default it is inferred from the targets.
"""
from __future__ import annotations

import copy
import importlib
import importlib.util
import math
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from . import ReplayError
from .checkpoint import Checkpoint, load_file, quiet_torch

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
    notes: list[str] = field(default_factory=list)

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
        out = self.output(model, inputs)
        return self.loss_fn(out, targets), out

    def classes(self, out: torch.Tensor) -> int | None:
        """Number of classes K for a classification loss (for the log K check)."""
        if self.loss_name not in ("cross_entropy", "nll") or out.dim() < 2:
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


def model_factory(spec: str) -> Callable[[], nn.Module]:
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

    def build() -> nn.Module:
        try:
            model = factory()
        except Exception as exc:  # noqa: BLE001
            raise ReplayError(f"--model {spec}: the factory raised {type(exc).__name__}: {exc}") from None
        if not isinstance(model, nn.Module):
            raise ReplayError(f"--model {spec}: returned a {type(model).__name__}, not a torch.nn.Module")
        return model

    return build


def split_batch(obj: Any, source: str) -> tuple[Any, torch.Tensor]:
    """(inputs, targets) from a tuple/list or a dict with recognisable keys."""
    if isinstance(obj, (tuple, list)) and len(obj) >= 2 and isinstance(obj[-1], torch.Tensor):
        inputs = obj[0] if len(obj) == 2 else tuple(obj[:-1])
        return inputs, obj[-1]
    if isinstance(obj, dict):
        target_key = next((k for k in TARGET_KEYS if k in obj), None)
        if target_key is not None:
            rest = {k: v for k, v in obj.items() if k != target_key}
            input_key = next((k for k in INPUT_KEYS if k in rest), None)
            inputs = rest[input_key] if input_key is not None and len(rest) == 1 else rest
            return inputs, obj[target_key]
    raise ReplayError(f"{source}: expected (inputs, targets) or a dict with one of {', '.join(TARGET_KEYS)}")


def load_batches(batch: str | None, data: str | None, trust: bool, limit: int = 8) -> list[tuple[Any, torch.Tensor]]:
    if batch:
        path = Path(batch)
        if not path.is_file():
            raise ReplayError(f"--batch {batch}: no such file")
        return [split_batch(load_file(path, trust), str(path))]
    fn = resolve(data, "--data")
    try:
        produced = fn() if callable(fn) else fn
        if isinstance(produced, (tuple, list, dict)):
            return [split_batch(produced, f"--data {data}")]
        if isinstance(produced, Iterable):
            out = []
            for item in produced:
                out.append(split_batch(item, f"--data {data}"))
                if len(out) >= limit:
                    break
            if out:
                return out
    except ReplayError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise ReplayError(f"--data {data}: raised {type(exc).__name__}: {exc}") from None
    raise ReplayError(f"--data {data}: returned no batch")


def to_device(obj: Any, device: torch.device) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: to_device(v, device) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return type(obj)(to_device(v, device) for v in obj)
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


def load_weights(model: nn.Module, ckpt: Checkpoint, notes: list[str]) -> bool:
    """Copy the checkpoint's tensors into `model`, tolerating a wrapper prefix (Lightning's `model.`)."""
    if not ckpt.model:
        return False
    own = model.state_dict()
    best_prefix, model_prefix = _prefixes(list(ckpt.model), own)
    matched = {}
    mismatched = []
    for key, tensor in ckpt.model.items():
        if not key.startswith(best_prefix):
            continue
        name = model_prefix + key[len(best_prefix):]
        if name in own:
            if tuple(own[name].shape) == tuple(tensor.shape):
                matched[name] = tensor
            else:
                mismatched.append(name)
    if not matched:
        raise ReplayError(
            f"{ckpt.path}: none of its {len(ckpt.model)} tensors match the --model's parameter names/shapes "
            f"(checkpoint: {', '.join(list(ckpt.model)[:3])}; model: {', '.join(list(own)[:3])})"
        )
    model.load_state_dict(matched, strict=False)
    shared = {own[k].data_ptr() for k in matched}  # tied weights (lm_head = embedding) load with their twin
    missing = [k for k in own if k not in matched and own[k].data_ptr() not in shared]
    if best_prefix:
        notes.append(f"checkpoint names carry the prefix '{best_prefix}'; matched without it")
    if model_prefix:
        notes.append(f"the --model's names carry the prefix '{model_prefix}' (a wrapper module); matched under it")
    if missing or mismatched:
        notes.append(f"loaded {len(matched)}/{len(own)} model tensors ({len(missing)} left at init, {len(mismatched)} with a different shape)")
    return True


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
    trust: bool = False,
) -> Target:
    """Everything dynamic probes need, or a ReplayError naming what is wrong."""
    if not batch and not data:
        raise ReplayError("--model needs --batch FILE.pt or --data module:fn to run dynamic probes")
    dev = pick_device(device)
    factory = model_factory(model_spec)
    with quiet_torch():
        model = factory()
    notes: list[str] = []
    loaded = load_weights(model, ckpt, notes)
    model = model.to(dev)
    batches = [to_device(b, dev) for b in load_batches(batch, data, trust)]
    name, fn = loss_function(loss, batches[0][1])
    target = Target(factory, model, batches, name, fn, dev, loaded=loaded, notes=notes)
    target.trainable = [(n, tuple(p.shape)) for n, p in model.named_parameters()]
    target.frozen = {n for n, p in model.named_parameters() if not p.requires_grad}
    try:
        with torch.no_grad(), quiet_torch():  # a broadcasting-loss warning would precede the error line
            value, _ = target.loss(model)
    except ReplayError:
        raise
    except Exception as exc:  # noqa: BLE001 - shape / dtype mismatches between model, batch and loss
        raise ReplayError(f"--model {model_spec}: forward + {name} loss on the batch failed ({type(exc).__name__}: {exc})") from None
    if value.numel() != 1:
        raise ReplayError(f"--loss {name}: returned a tensor of shape {tuple(value.shape)}, expected a scalar")
    if not math.isfinite(float(value)):
        notes.append(f"loss on the batch with the checkpoint weights is {float(value)}")
    return target
