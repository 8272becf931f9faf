"""User configuration: `[tool.logdoctor]` in pyproject.toml or a `logdoctor.toml`.

Shape (every key optional):

    [tool.logdoctor]
    select = ["flat", "crawl"]       # only these rules (default: all)
    ignore = ["epoch_jumps"]         # never these rules
    [tool.logdoctor.roles]           # metric name (exact) or /regex/ -> role
    train_loss = ["my_objective"]
    [tool.logdoctor.rules.crawl]     # per-rule threshold overrides
    max_relative_gain = 0.05

A `logdoctor.toml` holds the same keys at top level (no `[tool.logdoctor]`).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """A configuration file that cannot be used; the message names the file."""


@dataclass
class Config:
    select: list[str] | None = None
    ignore: list[str] = field(default_factory=list)
    roles: dict[str, list[str]] = field(default_factory=dict)
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str | None = None

    def rule_enabled(self, code: str) -> bool:
        if code in self.ignore:
            return False
        return self.select is None or code in self.select or "ALL" in self.select

    def thresholds(self, code: str) -> dict[str, Any]:
        return dict(self.rules.get(code, {}))

    def merged(self, select: list[str] | None, ignore: list[str] | None) -> "Config":
        """This config with command-line select/ignore applied on top."""
        return Config(
            select=select if select else self.select,
            ignore=list(self.ignore) + list(ignore or []),
            roles=self.roles,
            rules=self.rules,
            source=self.source,
        )


def _from_table(table: dict[str, Any], source: str) -> Config:
    def names(key: str) -> list[str] | None:
        value = table.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{source}: '{key}' must be a list of rule codes")
        return value

    roles = table.get("roles", {})
    if not isinstance(roles, dict):
        raise ConfigError(f"{source}: [roles] must be a table of role = [metric names]")
    roles = {k: [v] if isinstance(v, str) else list(v) for k, v in roles.items()}
    rules = table.get("rules", {})
    if not isinstance(rules, dict) or not all(isinstance(v, dict) for v in rules.values()):
        raise ConfigError(f"{source}: [rules.<code>] must be tables of thresholds")
    return Config(select=names("select"), ignore=names("ignore") or [], roles=roles, rules=rules, source=source)


def load_config(explicit: Path | None = None, start: Path | None = None) -> Config:
    """Find and read the configuration.

    An explicit file wins; otherwise the nearest `logdoctor.toml` or a
    pyproject.toml with a `[tool.logdoctor]` table, searching from `start`
    (default: the current directory) up to the filesystem root.
    """
    if explicit is not None:
        return _read(explicit)
    here = (start or Path.cwd()).resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "logdoctor.toml"
        if candidate.is_file():
            return _read(candidate)
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
                continue
            if "logdoctor" in data.get("tool", {}):
                return _from_table(data["tool"]["logdoctor"], str(pyproject))
    return Config()


def _read(path: Path) -> Config:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("logdoctor", {})
    return _from_table(data, str(path))
