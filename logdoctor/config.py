"""User configuration: `[tool.logdoctor]` in pyproject.toml or a `logdoctor.toml`.

Shape (every key optional):

    [tool.logdoctor]
    select = ["flat", "crawl"]       # only these rules (default: all)
    ignore = ["epoch_jumps"]         # never these rules
    [tool.logdoctor.roles]           # metric name (exact) or /regex/ -> role
    train_loss = ["my_objective"]
    [tool.logdoctor.rules.crawl]     # per-rule (or replay probe) threshold overrides
    max_relative_drop = 0.1

A `logdoctor.toml` holds the same keys at top level (no `[tool.logdoctor]`).
Every mistake (an unknown key, role, rule code or threshold, a regex that does
not compile, a threshold of the wrong type) is a `ConfigError` naming the file
and the key: a typo must not silently fall back to the defaults.
"""
from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .roles import ROLES

#: The keys a config table may hold.
_KEYS = ("select", "ignore", "roles", "rules")


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


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """"; did you mean 'crawl'?" for the closest known name, or '' when none is close."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def _from_table(table: Any, source: str) -> Config:
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [tool.logdoctor] must be a table, not {table!r}")
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise ConfigError(f"{source}: unknown key '{unknown[0]}'{did_you_mean(unknown[0], _KEYS)} (valid keys: {', '.join(_KEYS)})")

    def names(key: str) -> list[str] | None:
        value = table.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{source}: '{key}' must be a list of rule codes")
        return value

    rules = table.get("rules", {})
    if not isinstance(rules, dict) or not all(isinstance(v, dict) for v in rules.values()):
        raise ConfigError(f"{source}: [rules.<code>] must be tables of thresholds")
    return Config(select=names("select"), ignore=names("ignore") or [], roles=_roles(table.get("roles", {}), source), rules=rules, source=source)


def _roles(table: Any, source: str) -> dict[str, list[str]]:
    """`[roles]` checked up front: a misspelt role or a broken regex would otherwise be ignored
    silently or crash mid-analysis."""
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: [roles] must be a table of role = [metric names]")
    roles = {}
    for role, value in table.items():
        if role not in ROLES:
            raise ConfigError(f"{source}: unknown role 'roles.{role}'{did_you_mean(role, ROLES)} (valid roles: {', '.join(ROLES)})")
        patterns = [value] if isinstance(value, str) else value
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise ConfigError(f"{source}: 'roles.{role}' must be a list of metric names or /regexes/")
        for pattern in patterns:
            if len(pattern) > 2 and pattern.startswith("/") and pattern.endswith("/"):
                try:
                    re.compile(pattern[1:-1])
                except re.error as exc:
                    raise ConfigError(f"{source}: 'roles.{role}': invalid regex {pattern} ({exc})") from None
        roles[role] = list(patterns)
    return roles


def unknown_codes(codes: Iterable[str], known: Iterable[str]) -> list[str]:
    """Rule codes in a select/ignore list that no rule has (`ALL` is always known)."""
    known = set(known)
    return [code for code in codes if code != "ALL" and code not in known]


def check_rules(config: Config, thresholds: dict[str, dict[str, Any]], codes: Iterable[str], complete: bool = True) -> None:
    """Raise ConfigError for a select/ignore code outside `codes`, a `[rules.<code>]` table that
    no entry of `thresholds` (code -> default thresholds of rules and probes) owns, an unknown
    threshold or one of the wrong type. With `complete` False, tables of codes missing from
    `thresholds` are let through (the catalogue could not be loaded in full).

    Lives apart from parsing because the catalogue of rules and probes is the caller's to load.
    """
    source = config.source or "config"
    codes = list(codes)
    for key, listed in (("select", config.select or []), ("ignore", config.ignore)):
        bad = unknown_codes(listed, codes)
        if bad:
            raise ConfigError(f"{source}: '{key}' names unknown rule code '{bad[0]}'{did_you_mean(bad[0], codes)} (see `logdoctor rules`)")
    for code, overrides in config.rules.items():
        defaults = thresholds.get(code)
        if defaults is None:
            if complete:
                hint = did_you_mean(code, thresholds)
                raise ConfigError(f"{source}: [rules.{code}]: no rule or replay probe has this code{hint} (see `logdoctor rules`)")
            continue
        for key, value in overrides.items():
            if key not in defaults:
                hint = did_you_mean(key, defaults)
                raise ConfigError(f"{source}: unknown threshold 'rules.{code}.{key}'{hint} (valid: {', '.join(defaults)})")
            if not _same_kind(defaults[key], value) or _is_nan(value):
                raise ConfigError(f"{source}: 'rules.{code}.{key}' must be {_kind(defaults[key])}, not {value!r}")


def _is_nan(value: Any) -> bool:
    """TOML's `nan`, alone or in a list: every comparison with it is false, so a NaN threshold
    would switch its rule off without a word."""
    items = value if isinstance(value, (list, tuple)) else [value]
    return any(isinstance(v, float) and v != v for v in items)


def _kind(value: Any) -> str:
    """How a threshold's kind reads in an error line ('a number', 'a list of numbers')."""
    if isinstance(value, (list, tuple)) and value:
        return f"a list of {_kind(value[0]).removeprefix('a ')}s"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    return f"a {type(value).__name__}"


def _same_kind(default: Any, value: Any) -> bool:
    """A threshold keeps its default's kind: numbers stay numbers (an int may set a float), booleans
    booleans, and a list's items the kind of the default's items (`lrs = ["a"]` would otherwise
    pass here and fail inside a probe); a default of None accepts anything."""
    if default is None:
        return True
    if isinstance(default, (list, tuple)) and isinstance(value, (list, tuple)) and default:
        return all(_kind(item) == _kind(default[0]) for item in value)
    return _kind(default) == _kind(value)


def load_config(explicit: Path | None = None, start: Path | None = None) -> Config:
    """Find and read the configuration.

    An explicit file wins; otherwise the nearest `logdoctor.toml` or a
    pyproject.toml with a `[tool.logdoctor]` table, searching from `start` (the
    analysed PATH) up to the filesystem root, then from the current directory up:
    a project's own pyproject.toml applies to logs kept outside it. A folder that
    cannot be looked into (listable, not enterable) holds no configuration
    anyone could read: the search goes on above it.
    """
    if explicit is not None:
        return _read(explicit)
    searched: set[Path] = set()
    for origin in (start, Path.cwd()):
        if origin is None:
            continue
        here = origin.resolve()
        if os.path.isfile(here):  # os.path's answer is False, never PermissionError
            here = here.parent
        for folder in (here, *here.parents):
            if folder in searched:
                break
            searched.add(folder)
            found = _config_in(folder)
            if found is not None:
                return found
    return Config()


def _config_in(folder: Path) -> Config | None:
    """The configuration this folder holds (`logdoctor.toml`, else a pyproject.toml with a
    `[tool.logdoctor]` table), or None."""
    candidate = folder / "logdoctor.toml"
    if os.path.isfile(candidate):
        return _read(candidate)
    pyproject = folder / "pyproject.toml"
    if not os.path.isfile(pyproject):
        return None
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError):
        return None
    tool = data.get("tool")
    if isinstance(tool, dict) and "logdoctor" in tool:
        return _from_table(tool["logdoctor"], str(pyproject))
    return None


def _read(path: Path) -> Config:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except PermissionError:
        raise ConfigError(f"{path}: config file not readable (permission denied)") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except RecursionError:
        raise ConfigError(f"{path}: not read (nested deeper than Python's TOML parser goes)") from None
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        data = tool.get("logdoctor", {}) if isinstance(tool, dict) else {}
    return _from_table(data, str(path))
