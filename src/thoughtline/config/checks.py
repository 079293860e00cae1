"""One config key's value checked: the typed readers every section of
``thoughtline.toml`` is read with (a table of known keys, a choice, a bounded number, a
duration), each mistake naming the file and the key."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from thoughtline.config import (
    MAX_COST_CEILING,
    describe_value,
)
from thoughtline.errors import ConfigError
from thoughtline.tools.specs import (
    tool_spec_problem,
)

_Choice = TypeVar("_Choice", bound=str)


class KeyChecks:
    """Reads one key at a time from a parsed ``thoughtline.toml``, recording where each
    value came from (``sources``); every mistake names the file and the key."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sources: dict[str, str] = {}

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.path}: {key}: {problem}")

    def table(self, data: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> dict[str, Any]:
        value = data.get(key.rsplit(".", 1)[-1], {})
        if not isinstance(value, dict):
            raise self.fail(
                key, f"wrong type: must be a table ([{key}]), got {describe_value(value)}"
            )
        for name in value:
            if name not in allowed:
                raise self.fail(
                    f"{key}.{name}", f"unknown key. Allowed keys in [{key}]: {', '.join(allowed)}"
                )
        return value

    def choice(
        self,
        table: Mapping[str, object],
        key: str,
        allowed: tuple[_Choice, ...],
        default: _Choice,
    ) -> _Choice:
        """The value at ``key``, one of ``allowed`` (typed as they are), or ``default``."""
        chosen = self.optional_choice(table, key, allowed)
        return default if chosen is None else chosen

    def optional_choice(
        self, table: Mapping[str, object], key: str, allowed: tuple[_Choice, ...]
    ) -> _Choice | None:
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return None
        value = table[name]
        if not isinstance(value, str):
            raise self.fail(
                key,
                f"wrong type: must be a string, one of {', '.join(allowed)}; "
                f"got {describe_value(value)}",
            )
        for option in allowed:
            if value == option:
                self.sources[key] = str(self.path)
                return option
        raise self.fail(key, f"{value!r} is not allowed. Allowed values: {', '.join(allowed)}")

    def string(self, table: Mapping[str, object], key: str, default: str | None) -> str | None:
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return default
        value = table[name]
        if not isinstance(value, str):
            raise self.fail(key, f"wrong type: must be a string, got {describe_value(value)}")
        if not value:
            raise self.fail(key, "must not be empty")
        self.sources[key] = str(self.path)
        return value

    def boolean(self, table: Mapping[str, object], key: str, default: bool) -> bool:
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return default
        value = table[name]
        if not isinstance(value, bool):
            raise self.fail(key, f"wrong type: must be true or false, got {describe_value(value)}")
        self.sources[key] = str(self.path)
        return value

    def bounded_int(
        self,
        table: Mapping[str, object],
        key: str,
        default: int,
        *,
        maximum: int,
        unit: str = "",
    ) -> int:
        """An integer from 1 to ``maximum`` (``unit`` follows the maximum in messages)."""
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return default
        value = table[name]
        allowed = f"an integer from 1 to {maximum}{unit}"
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(key, f"wrong type: must be {allowed}, got {describe_value(value)}")
        if not 1 <= value <= maximum:
            raise self.fail(key, f"must be {allowed}, got {value}")
        self.sources[key] = str(self.path)
        return value

    def counted(
        self, table: Mapping[str, object], key: str, default: int, *, lowest: int, highest: int
    ) -> int:
        """An integer from ``lowest`` to ``highest``."""
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return default
        value = table[name]
        allowed = f"an integer from {lowest} to {highest:,}"
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(key, f"wrong type: must be {allowed}, got {describe_value(value)}")
        if not lowest <= value <= highest:
            raise self.fail(key, f"must be {allowed}, got {value}")
        self.sources[key] = str(self.path)
        return value

    def seconds_between(
        self, table: Mapping[str, object], key: str, default: float, *, lowest: int, highest: int
    ) -> float:
        """A number of seconds from ``lowest`` to ``highest``."""
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return default
        value = table[name]
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self.fail(
                key,
                f"wrong type: must be a number of seconds from {lowest} to {highest}, got "
                f"{describe_value(value)}",
            )
        if not lowest <= value <= highest:  # also refuses NaN
            raise self.fail(key, f"must be from {lowest} to {highest} seconds, got {value!r}")
        self.sources[key] = str(self.path)
        return float(value)

    def max_cost(self, table: Mapping[str, object], key: str) -> float | None:
        """A budget in US dollars: a finite number from 0 up (``None``: not set)."""
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return None
        value = table[name]
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not math.isfinite(value)
            or not 0 <= value <= MAX_COST_CEILING
        ):
            raise self.fail(
                key,
                f"must be a number of US dollars from 0 to {MAX_COST_CEILING:,.0f}, got {value!r}",
            )
        self.sources[key] = str(self.path)
        return float(value)

    def seconds(self, table: Mapping[str, object], key: str, default: float) -> float:
        """A positive, finite number of seconds."""
        name = key.rsplit(".", 1)[-1]
        if name not in table:
            return default
        value = table[name]
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not math.isfinite(value)
            or value <= 0
        ):
            raise self.fail(key, f"must be a positive number of seconds, got {value!r}")
        self.sources[key] = str(self.path)
        return float(value)

    def tool_specs(self, value: object, key: str) -> tuple[str, ...]:
        """A list of ``SERVER`` or ``SERVER.TOOL`` names (whether each server exists is
        checked when a run is planned: ``--mcp-config`` may add servers)."""
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(
                key,
                'wrong type: must be a list of "SERVER" or "SERVER.TOOL" strings, '
                f"got {describe_value(value)}",
            )
        for item in value:
            problem = tool_spec_problem(item)
            if problem is not None:
                raise self.fail(key, problem)
        self.sources[key] = str(self.path)
        return tuple(value)
