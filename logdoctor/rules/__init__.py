"""The rule catalogue: every module in this package defines one Rule subclass."""
from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from .base import Rule


@cache
def all_rules() -> dict[str, type[Rule]]:
    """code -> Rule class, for every rule module in this package, in code order."""
    found: dict[str, type[Rule]] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_") or info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule and obj.__module__ == module.__name__:
                found[obj.code] = obj
    return dict(sorted(found.items()))
