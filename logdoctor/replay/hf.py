"""Hugging Face models rebuilt from the checkpoint folder's own config.json (no code, no download).

An HF `checkpoint-N/` folder carries `config.json`, which names the model class
(`architectures`) and every size, so `--model hf` needs no hand-written
factory: the class is built from the config with random weights and the
checkpoint's tensors are loaded into it. Without `--model`, the same class
built on the meta device (no memory, no weights) gives the parameter order
the optimizer was built in: safetensors files store tensors sorted by name,
so their order cannot map optimizer slots to names.
"""
from __future__ import annotations

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


def build_from_config(config: dict[str, Any], source: str) -> nn.Module:
    """The model config.json describes, randomly initialised (ReplayError when it cannot be built)."""
    transformers = _transformers()
    if transformers is None:
        raise ReplayError("--model hf needs the transformers package: pip install transformers")
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
