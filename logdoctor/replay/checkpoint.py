"""Read a checkpoint safely, whatever layout it was saved in, into one shape.

Checkpoints are untrusted input: a pickle can run arbitrary code when loaded.
Files are read with `torch.load(weights_only=True)` (tensors, containers and
plain numbers only) or with safetensors; anything that needs full unpickling is
refused with one line unless the user passes `--trust-checkpoint`.

Layouts understood:

* a plain `state_dict` (name -> tensor);
* a hand-written training dict (`model` / `optimizer` / `scheduler` / `scaler`
  / `step` keys, with the usual aliases);
* a PyTorch Lightning `.ckpt` (`state_dict`, `optimizer_states`,
  `lr_schedulers`, the AMP scaler under `MixedPrecision` or the older
  `native_amp_scaling_state`, `global_step`);
* a Hugging Face Trainer `checkpoint-N/` folder (`model.safetensors`, sharded
  safetensors or `pytorch_model.bin`, `optimizer.pt`, `scheduler.pt`,
  `scaler.pt`, `trainer_state.json`).
"""
from __future__ import annotations

import json
import logging
import pickle
import pickletools
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from . import ReplayError

MODEL_KEYS = ("model", "model_state_dict", "model_state", "state_dict", "net", "network", "module", "weights")
OPTIMIZER_KEYS = ("optimizer", "optimizer_state_dict", "optimizer_state", "optim", "opt", "optimizers")
SCHEDULER_KEYS = ("scheduler", "lr_scheduler", "scheduler_state_dict", "sched", "lr_sched", "schedulers")
SCALER_KEYS = ("scaler", "grad_scaler", "scaler_state_dict", "amp_scaler", "amp")
STEP_KEYS = ("global_step", "step", "iteration", "iter", "steps")
#: Lightning stores the precision plugin's state under its class name (2.x) or this key (1.x).
LIGHTNING_SCALER_KEYS = ("MixedPrecision", "MixedPrecisionPlugin", "native_amp_scaling_state")
#: Wrappers that prefix every parameter name (DDP, torch.compile).
WRAPPER_PREFIXES = ("module.", "_orig_mod.")


@dataclass
class Checkpoint:
    """Everything the probes need, independent of how it was saved."""

    path: str
    layout: str
    #: Model tensors by name (parameters and persistent buffers), on CPU.
    model: dict[str, torch.Tensor] = field(default_factory=dict)
    #: Optimizer state dicts (`{"state": ..., "param_groups": ...}`), one per optimizer.
    optimizers: list[dict[str, Any]] = field(default_factory=list)
    #: LR scheduler state dicts, one per scheduler.
    schedulers: list[dict[str, Any]] = field(default_factory=list)
    #: GradScaler state dict (`scale`, `_growth_tracker`, ...), if AMP was used.
    scaler: dict[str, Any] | None = None
    #: Optimizer steps taken when saved, where the layout records it.
    step: int | None = None
    #: Planned total optimizer steps (HF `max_steps`), where known.
    planned_steps: int | None = None
    #: How the file was normalised (prefix stripped, files skipped...), one line each.
    notes: list[str] = field(default_factory=list)


def load_checkpoint(path: str | Path, trust: bool = False) -> Checkpoint:
    """Read `path` (a file or an HF `checkpoint-N/` folder) into a Checkpoint, or raise ReplayError."""
    path = Path(path)
    if not path.exists():
        raise ReplayError(f"{path}: no such file or folder")
    if path.is_dir():
        ckpt = _read_hf_folder(path, trust)
    elif path.suffix == ".safetensors":
        ckpt = Checkpoint(str(path), "safetensors", model=_read_safetensors(path))
    else:
        ckpt = _from_object(path, load_file(path, trust))
    ckpt.model = _strip_wrapper_prefix(ckpt.model, ckpt.notes)
    if not ckpt.model and not ckpt.optimizers and not ckpt.schedulers and ckpt.scaler is None:
        raise ReplayError(f"{path}: checkpoint holds no model weights, optimizer, scheduler or scaler state")
    return ckpt


@contextmanager
def quiet_torch() -> Iterator[None]:
    """Silence Python warnings and torch's logger while torch reads user files or runs user models.

    torch reports a damaged .pt2 as a logged traceback and an unusual pickle protocol or a
    broadcasting loss as UserWarnings, before raising or returning; the one line logdoctor prints
    says what matters, and the noise above it would bury that line.
    """
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


#: Globals a plain tensor pickle legitimately names; anything else is what the refusal should name.
_TENSOR_GLOBALS = ("torch.", "collections.", "_codecs.", "numpy.core.multiarray._reconstruct", "numpy.dtype", "numpy.ndarray")
_STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING", "BINSTRING", "STRING"}


def pickled_global(path: Path, limit: int = 200_000) -> str | None:
    """The first global a raw (non-zip) pickle imports that a tensor file would not, found by reading
    its opcodes with pickletools (nothing is executed), or None.

    The safe loader rejects such files on an opcode number ("Unsupported operand 149") rather than
    on the global, so the refusal could not otherwise say what the file wants to run.
    """
    strings: list[str] = []
    memo: dict[int, str] = {}
    try:
        with open(path, "rb") as fh:
            for count, (op, arg, _) in enumerate(pickletools.genops(fh)):
                if count >= limit:
                    return None
                name = op.name
                if name in _STRING_OPS:
                    strings.append(str(arg))
                elif name == "MEMOIZE" and strings:
                    memo[len(memo)] = strings[-1]
                elif name in ("BINPUT", "LONG_BINPUT", "PUT") and strings:
                    memo[int(arg)] = strings[-1]
                elif name in ("BINGET", "LONG_BINGET", "GET") and int(arg) in memo:
                    strings.append(memo[int(arg)])
                elif name in ("GLOBAL", "INST", "STACK_GLOBAL"):
                    found = str(arg).replace(" ", ".") if name != "STACK_GLOBAL" else ".".join(strings[-2:])
                    if not found.startswith(_TENSOR_GLOBALS):
                        return found
    except Exception:  # noqa: BLE001 - a damaged pickle simply names nothing
        return None
    return None


def load_file(path: Path, trust: bool = False) -> Any:
    """`torch.load` with weights_only=True; a file that needs full unpickling is refused unless trusted."""
    try:
        with quiet_torch():
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        if not trust:
            found = re.search(r"GLOBAL ([\w.]+)", str(exc))
            name = found.group(1) if found else pickled_global(path)
            if name:
                raise ReplayError(
                    f"{path}: refusing to unpickle (it references {name}; loading it could run code) — "
                    "pass --trust-checkpoint only if you trust where it came from"
                ) from None
            detail = re.search(r"WeightsUnpickler error:\s*(.+)", str(exc))
            raise ReplayError(
                f"{path}: not a readable PyTorch checkpoint (the safe loader rejected it: "
                f"{detail.group(1).strip() if detail else 'not a tensor pickle'}); "
                "if it is a full pickle you trust, pass --trust-checkpoint"
            ) from None
    except Exception as exc:  # noqa: BLE001 - torch raises many types for a damaged file
        raise ReplayError(f"{path}: not a readable PyTorch checkpoint ({type(exc).__name__}: {exc})") from None
    try:
        with quiet_torch():
            return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # noqa: BLE001
        raise ReplayError(f"{path}: cannot load even with --trust-checkpoint ({type(exc).__name__}: {exc})") from None


def _read_safetensors(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file as load_safetensors

    try:
        return load_safetensors(str(path), device="cpu")
    except Exception as exc:  # noqa: BLE001
        raise ReplayError(f"{path}: not a readable safetensors file ({exc})") from None


def _is_state_dict(obj: Any) -> bool:
    return isinstance(obj, dict) and bool(obj) and all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in obj.items())


def _is_optimizer_state(obj: Any) -> bool:
    return isinstance(obj, dict) and "state" in obj and isinstance(obj.get("param_groups"), list)


def _as_list(value: Any, check) -> list[dict[str, Any]]:
    items = value if isinstance(value, (list, tuple)) else [value]
    return [v for v in items if check(v)]


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    return next((obj[k] for k in keys if k in obj and obj[k] is not None), None)


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _from_object(path: Path, obj: Any) -> Checkpoint:
    """Recognise the layout of one loaded file."""
    if isinstance(obj, torch.nn.Module):  # torch.save(model): only loadable with --trust-checkpoint
        return Checkpoint(str(path), "module", model=dict(obj.state_dict()))
    if _is_state_dict(obj):
        return Checkpoint(str(path), "state_dict", model=dict(obj))
    if _is_optimizer_state(obj):
        return Checkpoint(str(path), "optimizer", optimizers=[obj])
    if not isinstance(obj, dict):
        raise ReplayError(f"{path}: not a checkpoint layout logdoctor knows (a {type(obj).__name__}, expected a dict)")
    if "state_dict" in obj and any(k in obj for k in ("optimizer_states", "lr_schedulers", "pytorch-lightning_version", "loops")):
        ckpt = Checkpoint(
            str(path),
            "lightning",
            model=_tensors(obj.get("state_dict")),
            optimizers=_as_list(obj.get("optimizer_states", []), _is_optimizer_state),
            schedulers=_as_list(obj.get("lr_schedulers", []), lambda s: isinstance(s, dict)),
            scaler=_first(obj, LIGHTNING_SCALER_KEYS),
            step=_int_or_none(obj.get("global_step")),
        )
        return ckpt
    model = _first(obj, MODEL_KEYS)
    optimizer = _first(obj, OPTIMIZER_KEYS)
    if model is None and optimizer is None:
        keys = ", ".join(sorted(map(str, obj))[:8])
        raise ReplayError(f"{path}: not a checkpoint layout logdoctor knows (top-level keys: {keys})")
    scaler = _first(obj, SCALER_KEYS)
    return Checkpoint(
        str(path),
        "training_dict",
        model=_tensors(model),
        optimizers=_as_list(optimizer, _is_optimizer_state) if optimizer is not None else [],
        schedulers=_as_list(_first(obj, SCHEDULER_KEYS) or [], lambda s: isinstance(s, dict)),
        scaler=scaler if isinstance(scaler, dict) else None,
        step=_int_or_none(_first(obj, STEP_KEYS)),
    )


def _tensors(obj: Any) -> dict[str, torch.Tensor]:
    """The tensor entries of a state_dict-like mapping (non-tensor extras dropped)."""
    if isinstance(obj, torch.nn.Module):  # a whole module saved in place of its state_dict (trusted load)
        obj = obj.state_dict()
    if not isinstance(obj, dict):
        return {}
    return {k: v for k, v in obj.items() if isinstance(k, str) and isinstance(v, torch.Tensor)}


def _read_hf_folder(folder: Path, trust: bool) -> Checkpoint:
    """A Hugging Face Trainer `checkpoint-N/` folder."""
    ckpt = Checkpoint(str(folder), "hf_trainer")
    index = folder / "model.safetensors.index.json"
    if (folder / "model.safetensors").is_file():
        ckpt.model = _read_safetensors(folder / "model.safetensors")
    elif index.is_file():
        for shard in sorted(set(_read_json(index).get("weight_map", {}).values())):
            ckpt.model.update(_read_safetensors(folder / shard))
    elif (folder / "pytorch_model.bin").is_file():
        ckpt.model = _tensors(load_file(folder / "pytorch_model.bin", trust))
    elif (folder / "adapter_model.safetensors").is_file():
        ckpt.model = _read_safetensors(folder / "adapter_model.safetensors")
        ckpt.notes.append("only PEFT adapter weights present (adapter_model.safetensors)")
    if (folder / "optimizer.pt").is_file():
        ckpt.optimizers = _as_list(load_file(folder / "optimizer.pt", trust), _is_optimizer_state)
    if (folder / "scheduler.pt").is_file():
        ckpt.schedulers = _as_list(load_file(folder / "scheduler.pt", trust), lambda s: isinstance(s, dict))
    if (folder / "scaler.pt").is_file():
        scaler = load_file(folder / "scaler.pt", trust)
        ckpt.scaler = scaler if isinstance(scaler, dict) else None
    if (folder / "trainer_state.json").is_file():
        state = _read_json(folder / "trainer_state.json")
        ckpt.step = _int_or_none(state.get("global_step"))
        ckpt.planned_steps = _int_or_none(state.get("max_steps")) or None
    if not ckpt.model and not ckpt.optimizers and ckpt.step is None:
        raise ReplayError(
            f"{folder}: not a checkpoint file or a Hugging Face checkpoint folder "
            "(no model.safetensors, pytorch_model.bin, optimizer.pt or trainer_state.json)"
        )
    return ckpt


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReplayError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ReplayError(f"{path}: expected a JSON object")
    return data


def _strip_wrapper_prefix(model: dict[str, torch.Tensor], notes: list[str]) -> dict[str, torch.Tensor]:
    """Drop a `module.` (DDP) or `_orig_mod.` (torch.compile) prefix every name carries."""
    for prefix in WRAPPER_PREFIXES:
        if model and all(k.startswith(prefix) for k in model):
            notes.append(f"stripped the '{prefix}' prefix from every tensor name")
            model = {k[len(prefix):]: v for k, v in model.items()}
    return model
