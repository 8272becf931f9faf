"""Load a torch file without running code from it, allowing the harmless types training code saves.

A pickle can run arbitrary code when loaded, so every file is read with
`torch.load(weights_only=True)`. Real checkpoints also hold a few plain data
types that weights_only refuses by default: timm's train.py pickles its
argparse Namespace, Lightning its hyperparameter AttributeDict, an HF data
collator returns a BatchEncoding, and configs carry paths and enums. Those
are allowed through `torch.serialization.safe_globals`: an allow-list by
name, plus enums and config classes of the training libraries, resolved by
importing the library (never a module the file names). Anything else is
refused with the exact global named, unless the user trusts the file, and
then a warning line says so.
"""
from __future__ import annotations

import enum
import importlib
import logging
import pickle
import pickletools
import re
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from . import ReplayError

#: Plain data types that training code pickles into checkpoints and batches.
ALLOWED_GLOBALS = frozenset({
    "argparse.Namespace",
    "pathlib.Path", "pathlib.PosixPath", "pathlib.WindowsPath", "pathlib.PurePath", "pathlib.PurePosixPath", "pathlib.PureWindowsPath",
    "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar",
    "transformers.tokenization_utils_base.BatchEncoding",
    "lightning.fabric.utilities.data.AttributeDict", "lightning_fabric.utilities.data.AttributeDict",
    "pytorch_lightning.utilities.parsing.AttributeDict",
})
#: Libraries whose enums and configuration classes (plain attribute bags) may be rebuilt.
CONFIG_PACKAGES = ("transformers.", "lightning.", "lightning_fabric.", "pytorch_lightning.", "timm.", "numpy.dtypes.")
#: Base classes that mark a library class as configuration data.
CONFIG_BASES = ("PretrainedConfig", "PreTrainedConfig", "AttributeDict")

#: Globals a plain tensor pickle legitimately names; anything else is what a refusal should name.
_TENSOR_GLOBALS = ("torch.", "collections.", "_codecs.", "numpy.core.multiarray._reconstruct", "numpy.dtype", "numpy.ndarray")
_STRING_OPS = {"SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "SHORT_BINSTRING", "BINSTRING", "STRING"}


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


def allowed_global(name: str) -> Any | None:
    """The object behind `name` when it is harmless data to rebuild, else None.

    Only names on the allow-list or inside a known training library are imported; the library is
    the user's installed code, not the file's, and a class is allowed only when it is an enum or a
    configuration class there.
    """
    module, _, attr = name.rpartition(".")
    if not module or not (name in ALLOWED_GLOBALS or name.startswith(CONFIG_PACKAGES)):
        return None
    try:
        obj = getattr(importlib.import_module(module), attr)
    except Exception:  # noqa: BLE001 - library not installed or name gone: not allowed
        return None
    if name in ALLOWED_GLOBALS:
        return obj
    if isinstance(obj, type) and (
        issubclass(obj, enum.Enum)
        or any(base.__name__ in CONFIG_BASES for base in obj.__mro__)
        or (name.startswith("numpy.dtypes.") and obj.__name__.endswith("DType"))
    ):
        return obj
    return None


def file_globals(path: Path) -> list[str]:
    """Every non-tensor global a torch file names (read from its pickle, nothing executed)."""
    try:
        with quiet_torch():
            return list(torch.serialization.get_unsafe_globals_in_checkpoint(str(path)))
    except Exception:  # noqa: BLE001 - a legacy (non-zip) file: read its opcodes instead
        found = pickled_global(path)
        return [found] if found else []


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


def load_file(
    path: Path, trust: bool = False, flag: str = "--trust-checkpoint", warn: Callable[[str], None] | None = None, what: str = "checkpoint"
) -> Any:
    """`torch.load` with weights_only=True and the allow-list; anything else refused unless trusted.

    `flag` is the option that trusts this file (the checkpoint and a batch have their own); a
    trusted full unpickling is announced through `warn`, because it runs whatever the file holds.
    """
    names = file_globals(path)
    allowed = {n: allowed_global(n) for n in names}
    blocked = [n for n, obj in allowed.items() if obj is None]
    if not blocked:
        try:
            with quiet_torch(), torch.serialization.safe_globals([obj for obj in allowed.values() if obj is not None]):
                return torch.load(path, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as exc:
            blocked = _blocked_by(path, exc)
            if not blocked and not trust:
                detail = re.search(r"WeightsUnpickler error:\s*(.+)", str(exc))
                raise ReplayError(
                    f"{path}: not a readable PyTorch {what} (the safe loader rejected it: "
                    f"{detail.group(1).strip() if detail else 'not a tensor pickle'}); "
                    f"if it is a full pickle you trust, pass {flag}"
                ) from None
        except Exception as exc:  # noqa: BLE001 - torch raises many types for a damaged file
            raise ReplayError(f"{path}: not a readable PyTorch {what} ({type(exc).__name__}: {exc})") from None
    if not trust:
        raise ReplayError(
            f"{path}: refusing to unpickle (it references {', '.join(blocked)}; loading it could run code) — "
            f"pass {flag} only if you trust where it came from"
        )
    if warn is not None:
        warn(f"warning: {flag}: loading {path} with full unpickling, which runs code from the file ({', '.join(blocked) or 'unreadable safely'})")
    try:
        with quiet_torch():
            return torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # noqa: BLE001
        raise ReplayError(f"{path}: cannot load even with {flag} ({type(exc).__name__}: {exc})") from None


def _blocked_by(path: Path, exc: Exception) -> list[str]:
    """The global a weights-only failure names, from torch's message or the file's opcodes."""
    found = re.search(r"GLOBAL ([\w.]+)", str(exc))
    name = found.group(1) if found else pickled_global(path)
    return [name] if name else []
