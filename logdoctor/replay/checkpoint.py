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
  `scaler.pt`, `trainer_state.json`, `config.json`);
* a timm `train.py` checkpoint (`state_dict`, `optimizer`, `epoch`, `arch`,
  `args`, `amp_scaler`, `state_dict_ema`).

Beside the tensors, what each layout says about the run's plan is kept (the
step and epoch reached, saved hyperparameters or args, HF's logged LR), so the
probes can tell a finished anneal from a schedule that ran out early.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..ingest.limits import loads
from . import ReplayError
from .plan import fill_plan
from .safe_load import load_file

MODEL_KEYS = ("model", "model_state_dict", "model_state", "state_dict", "net", "network", "module", "weights")
OPTIMIZER_KEYS = ("optimizer", "optimizer_state_dict", "optimizer_state", "optim", "opt", "optimizers")
SCHEDULER_KEYS = ("scheduler", "lr_scheduler", "scheduler_state_dict", "sched", "lr_sched", "schedulers")
SCALER_KEYS = ("scaler", "grad_scaler", "scaler_state_dict", "amp_scaler", "amp")
STEP_KEYS = ("global_step", "step", "iteration", "iter", "steps")
HPARAM_KEYS = ("hyper_parameters", "hparams", "args", "config", "cfg")
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
    #: Epochs completed when saved, where the layout records it.
    epochs_done: int | None = None
    #: The run's saved hyperparameters (Lightning `hyper_parameters`, timm `args`).
    hparams: dict[str, Any] = field(default_factory=dict)
    #: (step, LR) the trainer logged (HF trainer_state.json `log_history`).
    lr_log: list[tuple[int, float]] = field(default_factory=list)
    #: The model's config.json (HF folders), for building it without code.
    config: dict[str, Any] | None = None
    #: Planned total optimizer steps / epochs (`plan.fill_plan`), where known.
    planned_steps: int | None = None
    planned_epochs: int | None = None
    #: How the file was normalised (prefix stripped, files skipped...), one line each.
    notes: list[str] = field(default_factory=list)


def load_checkpoint(path: str | Path, trust: bool = False, warn: Callable[[str], None] | None = None) -> Checkpoint:
    """Read `path` (a file or an HF `checkpoint-N/` folder) into a Checkpoint, or raise ReplayError.

    `warn` receives the warning line of a trusted (full) unpickling as it happens.
    """
    path = Path(path)
    if not path.exists():
        raise ReplayError(f"{path}: no such file or folder")

    def load(file: Path) -> Any:
        return load_file(file, trust, warn=warn)

    if path.is_dir():
        ckpt = _read_hf_folder(path, load)
    elif path.suffix == ".safetensors":
        ckpt = Checkpoint(str(path), "safetensors", model=_read_safetensors(path))
    else:
        ckpt = _from_object(path, load(path))
    ckpt.model = _strip_wrapper_prefix(ckpt.model, ckpt.notes)
    fill_plan(ckpt)
    if not ckpt.model and not ckpt.optimizers and not ckpt.schedulers and ckpt.scaler is None:
        raise ReplayError(f"{path}: checkpoint holds no model weights, optimizer, scheduler or scaler state")
    return ckpt


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
            hparams=_plain_dict(obj.get("hyper_parameters")),
        )
        epoch = _int_or_none(obj.get("epoch"))
        ckpt.epochs_done = None if epoch is None else epoch + 1  # saved at the end of epoch `epoch` (0-based)
        return ckpt
    model = _first(obj, MODEL_KEYS)
    optimizer = _first(obj, OPTIMIZER_KEYS)
    if model is None and optimizer is None:
        keys = ", ".join(sorted(map(str, obj))[:8])
        raise ReplayError(f"{path}: not a checkpoint layout logdoctor knows (top-level keys: {keys})")
    scaler = _first(obj, SCALER_KEYS)
    timm = "arch" in obj and "state_dict" in obj  # timm's CheckpointSaver
    epoch = _int_or_none(obj.get("epoch"))
    return Checkpoint(
        str(path),
        "timm" if timm else "training_dict",
        model=_tensors(model),
        optimizers=_as_list(optimizer, _is_optimizer_state) if optimizer is not None else [],
        schedulers=_as_list(_first(obj, SCHEDULER_KEYS) or [], lambda s: isinstance(s, dict)),
        scaler=scaler if isinstance(scaler, dict) else None,
        step=_int_or_none(_first(obj, STEP_KEYS)),
        # timm saves `epoch` after finishing that (0-based) epoch; a hand-written dict's meaning is unknown
        epochs_done=None if epoch is None or not timm else epoch + 1,
        hparams=_plain_dict(obj.get("args") if timm else _first(obj, HPARAM_KEYS)),
    )


def _plain_dict(obj: Any) -> dict[str, Any]:
    """Saved hyperparameters as a dict (a dict, AttributeDict or argparse Namespace); {} otherwise."""
    if obj is not None and not isinstance(obj, dict) and hasattr(obj, "__dict__"):
        obj = vars(obj)
    return {str(k): v for k, v in obj.items()} if isinstance(obj, dict) else {}


def _tensors(obj: Any) -> dict[str, torch.Tensor]:
    """The tensor entries of a state_dict-like mapping (non-tensor extras dropped)."""
    if isinstance(obj, torch.nn.Module):  # a whole module saved in place of its state_dict (trusted load)
        obj = obj.state_dict()
    if not isinstance(obj, dict):
        return {}
    return {k: v for k, v in obj.items() if isinstance(k, str) and isinstance(v, torch.Tensor)}


def _read_hf_folder(folder: Path, load: Callable[[Path], Any]) -> Checkpoint:
    """A Hugging Face Trainer `checkpoint-N/` folder."""
    ckpt = Checkpoint(str(folder), "hf_trainer")
    index = folder / "model.safetensors.index.json"
    if (folder / "model.safetensors").is_file():
        ckpt.model = _read_safetensors(folder / "model.safetensors")
    elif index.is_file():
        for shard in sorted(set(_read_json(index).get("weight_map", {}).values())):
            ckpt.model.update(_read_safetensors(folder / shard))
    elif (folder / "pytorch_model.bin").is_file():
        ckpt.model = _tensors(load(folder / "pytorch_model.bin"))
    elif (folder / "adapter_model.safetensors").is_file():
        ckpt.model = _read_safetensors(folder / "adapter_model.safetensors")
        ckpt.notes.append("only PEFT adapter weights present (adapter_model.safetensors)")
    if (folder / "optimizer.pt").is_file():
        ckpt.optimizers = _as_list(load(folder / "optimizer.pt"), _is_optimizer_state)
    if (folder / "scheduler.pt").is_file():
        ckpt.schedulers = _as_list(load(folder / "scheduler.pt"), lambda s: isinstance(s, dict))
    if (folder / "scaler.pt").is_file():
        scaler = load(folder / "scaler.pt")
        ckpt.scaler = scaler if isinstance(scaler, dict) else None
    if (folder / "trainer_state.json").is_file():
        state = _read_json(folder / "trainer_state.json")
        ckpt.step = _int_or_none(state.get("global_step"))
        ckpt.planned_steps = _int_or_none(state.get("max_steps")) or None
        ckpt.lr_log = [
            (int(e["step"]), float(e["learning_rate"]))
            for e in state.get("log_history", [])
            if isinstance(e, dict) and isinstance(e.get("step"), (int, float)) and isinstance(e.get("learning_rate"), (int, float))
        ]
    if (folder / "config.json").is_file():
        ckpt.config = _read_json(folder / "config.json")
    if not ckpt.model and not ckpt.optimizers and ckpt.step is None:
        raise ReplayError(
            f"{folder}: not a checkpoint file or a Hugging Face checkpoint folder "
            "(no model.safetensors, pytorch_model.bin, optimizer.pt or trainer_state.json)"
        )
    return ckpt


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = loads(path.read_text(encoding="utf-8"))  # bounded depth: a damaged file is one line, no RecursionError
    except (OSError, ValueError) as exc:  # UnicodeDecodeError, JSONDecodeError and TooDeep are ValueErrors
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
