"""Hyperparameter files beside a log (W&B `config.yaml`, Lightning `hparams.yaml`,
YOLO `args.yaml`, MLflow params...) -> one flat `{dotted.key: scalar}` dict.

Every reader that carries a config goes through here so `run.config` has the
same shape whatever the format: the sweep audit compares these values across
runs and needs plain scalars, not nested dicts or W&B's `{value: .., desc: ..}`
wrappers.
"""
from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .fs import read_regular

if TYPE_CHECKING:
    import yaml

#: Keys W&B adds to every config that are not hyperparameters.
_WANDB_INTERNAL = {"_wandb", "wandb_version"}


@cache
def _loader() -> type:
    """SafeLoader that turns unknown tags (Lightning's `!!python/object`, numpy scalars) into plain data.
    Built on first use: PyYAML loads only for a run that has a YAML file, not at every start-up."""
    import yaml

    class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml's parser where PyYAML has it: 5x faster
        pass

    _Loader.add_multi_constructor("", _unknown)
    _Loader.add_multi_constructor("tag:yaml.org,2002:python/", _unknown)
    return _Loader


def _unknown(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    """Mappings and sequences keep their data; an empty one (`!!python/name:torch.optim.Adam ''`) its tag's name."""
    import yaml  # already loaded: only the loader calls this

    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    value = loader.construct_sequence(node, deep=True) if isinstance(node, yaml.SequenceNode) else loader.construct_scalar(node)
    if value in ("", []):
        return suffix.rsplit(":", 1)[-1]
    return value


#: A config beside a log is a few KB of hyperparameters; these bound what a generated or hostile
#: one (an alias bomb: 30 lines that expand to 10^9 values) can cost before it is refused (PyYAML
#: builds about 25,000 values a second: a 3 MB file of 200,000 keys took 27 s).
_MAX_BYTES = 1 << 20
_MAX_VALUES = 100_000
_MAX_DEPTH = 100


def read_yaml(path: Path) -> tuple[dict[str, Any], str | None]:
    """A YAML mapping file as a dict, or ({}, one-line warning) when it is not one."""
    import yaml  # lazy: see _loader

    try:
        raw = read_regular(Path(path), _MAX_BYTES + 1)
        if len(raw) > _MAX_BYTES:
            return {}, f"{path}: config not read (larger than {_MAX_BYTES >> 20} MB: no hyperparameter file)"
        data = yaml.load(raw.decode("utf-8", errors="replace"), Loader=_loader())
    except (OSError, yaml.YAMLError) as exc:
        return {}, f"{path}: config not readable ({type(exc).__name__})"
    except RecursionError:
        return {}, f"{path}: config not read (nested deeper than Python can parse)"
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return {}, f"{path}: config is not a mapping of hyperparameters"
    problem = _too_big(data)
    if problem:
        return {}, f"{path}: config not read ({problem})"
    return data, None


def _too_big(data: Any) -> str | None:
    """Why `data` is too large to flatten (aliases counted as often as they are used), or None."""
    stack, seen = [(data, 0)], 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > _MAX_VALUES:
            return f"more than {_MAX_VALUES:,} values once its aliases are expanded"
        if depth > _MAX_DEPTH:
            return f"nested more than {_MAX_DEPTH} levels deep"
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return None


def unwrap_wandb(config: dict[str, Any]) -> dict[str, Any]:
    """W&B stores each config entry as `{key: {value: v, desc: ...}}`; keep `key: v`, drop internals."""
    out = {}
    for key, entry in config.items():
        if key in _WANDB_INTERNAL:
            continue
        if isinstance(entry, dict) and "value" in entry and set(entry) <= {"value", "desc"}:
            entry = entry["value"]
        out[key] = entry
    return out


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts -> dotted keys; lists and other non-scalars -> compact JSON text."""
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        elif value is None or isinstance(value, (bool, int, float, str)):
            out[name] = value
        else:
            try:
                out[name] = json.dumps(value, default=str, separators=(",", ":"))
            except (TypeError, ValueError):
                out[name] = str(value)
    return out


def parse_scalar(text: str) -> Any:
    """A hyperparameter stored as text (MLflow params) -> int, float, bool or the text itself."""
    stripped = text.strip()
    for cast in (int, float):
        try:
            return cast(stripped)
        except ValueError:
            pass
    if stripped.lower() in ("true", "false"):
        return stripped.lower() == "true"
    return stripped


def load_config_file(path: Path, warnings: list[str]) -> dict[str, Any]:
    """A YAML config beside a log, flattened (W&B wrappers unwrapped); problems go to `warnings`."""
    data, problem = read_yaml(path)
    if problem:
        warnings.append(problem)
    return flatten(unwrap_wandb(data))
