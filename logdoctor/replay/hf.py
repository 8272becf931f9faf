"""Hugging Face models rebuilt from the checkpoint folder's own config.json (no code, no download).

An HF `checkpoint-N/` folder carries `config.json`, which names the model class
(`architectures`) and every size, so `--model hf` needs no hand-written
factory: the class is built from the config with random weights and the
checkpoint's tensors are loaded into it. Without `--model`, the same class
built on the meta device (no memory, no weights) gives the parameter order
the optimizer was built in: safetensors files store tensors sorted by name,
so their order cannot map optimizer slots to names.

What a config asks for is bounded before anything is built: a damaged config.json asking for
100,000 layers hung `replay` while the meta-device model was built (no memory, but one Python
module per layer). Every count of repeated modules (layers, blocks, experts, at any level of a
composite config) is capped at MAX_REPEATS, far above any released model.
"""
from __future__ import annotations

import re
from typing import Any

import torch
from torch import nn

from . import ReplayError
from .safe_load import quiet_torch


def _transformers():
    try:
        import transformers
    except ImportError:
        return None
    return transformers


#: Repeated modules (layers, blocks, experts) a config may ask for; released models have a few hundred at most.
MAX_REPEATS = 1024
#: Config keys that count repeated modules: `num_hidden_layers`, `n_layer`, `decoder_layers`, `depth`, `num_local_experts`.
_REPEATS_KEY = re.compile(r"(layers?|blocks?|experts?|depths?)$", re.IGNORECASE)


def too_many_repeats(config: Any, prefix: str = "") -> str | None:
    """`key = value` for the first count of repeated modules past MAX_REPEATS in a config (nested
    configs and per-stage lists included), else None."""
    items = config.items() if isinstance(config, dict) else enumerate(config) if isinstance(config, list) else ()
    for key, value in items:
        name = f"{prefix}{key}"
        counts = value if isinstance(value, list) else [value]
        if isinstance(key, str) and _REPEATS_KEY.search(key) and any(
            isinstance(v, (int, float)) and not isinstance(v, bool) and v > MAX_REPEATS for v in counts
        ):
            return f"{name} = {value if not isinstance(value, list) else max(counts)}"
        if isinstance(value, (dict, list)):
            found = too_many_repeats(value, f"{name}.")
            if found:
                return found
    return None


def build_from_config(config: dict[str, Any], source: str) -> nn.Module:
    """The model config.json describes, randomly initialised (ReplayError when it cannot be built)."""
    transformers = _transformers()
    if transformers is None:
        raise ReplayError("--model hf needs the transformers package: pip install transformers")
    asked = too_many_repeats(config)
    if asked:
        raise ReplayError(f"--model hf: {source}/config.json asks for {asked}, more than the {MAX_REPEATS:,} repeated modules a model is built with (damaged?)")
    try:
        with quiet_torch():
            cfg = transformers.AutoConfig.for_model(**config)
            names = config.get("architectures") or []
            cls = getattr(transformers, names[0], None) if names else None
            return cls(cfg) if cls is not None else transformers.AutoModel.from_config(cfg)
    except Exception as exc:  # noqa: BLE001 - unknown model_type, a config the installed version cannot read
        raise ReplayError(f"--model hf: cannot build the model from {source}/config.json ({type(exc).__name__}: {exc})") from None


def parameter_order(config: dict[str, Any] | None) -> list[str] | None:
    """Parameter names in model order, from config.json, when transformers can build it; else None."""
    if not config or _transformers() is None:
        return None
    try:
        with torch.device("meta"):
            model = build_from_config(config, "")
    except ReplayError:
        return None
    return [name for name, _ in model.named_parameters()]
