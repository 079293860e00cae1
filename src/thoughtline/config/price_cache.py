"""The price data's prices for the models a home's runs called, kept under the home, so a
process that prices one call does not load the whole data: genai-prices' 25,000 objects
and pydantic cost about 80 ms of CPU, and its version read from the installed
distributions 25 ms more, in a ``run`` that otherwise takes a few hundred.

One file, ``HOME/price-cache.json`` (``0600``, written whole and renamed into place).
Its entries belong to one copy of the data, named by the path, size and modification
time of genai-prices' data module (an upgrade rewrites it): a file written for other data
is ignored, so a price never outlives the data it came from. An entry holds what the
data gave for one model at one of its providers and the UTC dates between which that
stays so: a price that starts on a date is kept from the last start up to the next. A
model with a time-of-day price (off-peak hours) is never kept: it is looked up each time.

A file that cannot be read, or is not what this module writes, is ignored and replaced;
one that cannot be written is left: the next process loads the data again.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from thoughtline._private_files import make_private_dir, write_private_text
from thoughtline._user_files import MIB, read_text_file
from thoughtline.errors import ConfigError

if TYPE_CHECKING:
    from thoughtline.config.pricing import Prices, Rate

logger = logging.getLogger(__name__)

CACHE_FILE: Final = "price-cache.json"
"""The cache's file under the thoughtline home."""
FORMAT: Final = 1
"""The version of the file's layout: a file of another version is ignored."""
MAX_CACHE_BYTES: Final = 1 * MIB
"""The largest cache file read; a larger one is ignored (and replaced)."""
DATA_MODULE: Final = ("genai_prices", "data.py")


@dataclass(frozen=True, slots=True)
class Window:
    """The UTC dates a data price holds for: from ``since`` (``None``: always before)
    up to, not including, ``until`` (``None``: no later price is known)."""

    since: date | None = None
    until: date | None = None

    def holds(self, day: date) -> bool:
        return (self.since is None or self.since <= day) and (
            self.until is None or day < self.until
        )


class PriceCache:
    """``HOME/price-cache.json``: :meth:`get` a model's kept data price, :meth:`put` one
    looked up. Neither raises: a cache that cannot be read or written is a miss."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, Any] | None = None

    @classmethod
    def under(cls, home: Path) -> PriceCache:
        """The cache under the thoughtline ``home``."""
        return cls(home / CACHE_FILE)

    def get(self, provider_id: str, model: str, day: date) -> Prices | None:
        """The data's prices for ``model`` at ``provider_id`` on ``day``, when kept for
        the installed data and still holding on ``day``; else ``None``."""
        entry = self._read().get(_key(provider_id, model))
        if entry is None:
            return None
        try:
            window = Window(_date(entry["since"]), _date(entry["until"]))
            if not window.holds(day):
                return None
            return _prices(entry["prices"])
        except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
            logger.debug("ignoring the cached price of %s at %s: %s", model, provider_id, exc)
            return None

    def put(self, provider_id: str, model: str, prices: Prices, window: Window) -> None:
        """Keep ``prices`` for ``model`` at ``provider_id`` for ``window`` (a cache that
        cannot be written is logged and left)."""
        data = data_identity()
        if data is None:
            return
        entries = dict(self._read())
        entries[_key(provider_id, model)] = {
            "since": None if window.since is None else window.since.isoformat(),
            "until": None if window.until is None else window.until.isoformat(),
            "prices": _encoded(prices),
        }
        body = {"format": FORMAT, "data": data, "entries": entries}
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            make_private_dir(self.path.parent)
            write_private_text(temporary, json.dumps(body, ensure_ascii=False))
            temporary.replace(self.path)  # atomic: a reader never sees half a file
        except (OSError, TypeError, ValueError) as exc:
            logger.warning("could not keep the price of %s in %s: %s", model, self.path, exc)
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
            return
        self._entries = entries

    def _read(self) -> dict[str, Any]:
        if self._entries is None:
            self._entries = self._load()
        return self._entries

    def _load(self) -> dict[str, Any]:
        data = data_identity()
        if data is None or not self.path.exists():
            return {}
        try:
            kept = json.loads(read_text_file(self.path, "price cache", limit=MAX_CACHE_BYTES))
            if not isinstance(kept, dict) or kept.get("format") != FORMAT:
                raise ValueError("written by another version")
            if kept.get("data") != data:
                raise ValueError("written for other price data")
            entries = kept["entries"]
            if not isinstance(entries, dict):
                raise TypeError("entries is not an object")
            return entries
        except (ConfigError, ValueError, KeyError, TypeError) as exc:
            logger.debug("ignoring the price cache %s: %s", self.path, exc)
            return {}


@cache
def data_identity() -> str | None:
    """The installed price data's identity: its data module's path, size and modification
    time (found without importing it), or ``None`` when it is not installed."""
    package, module = DATA_MODULE
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)), module)
    try:
        status = path.stat()
    except OSError:
        return None
    return f"{path}:{status.st_size}:{status.st_mtime_ns}"


def _key(provider_id: str, model: str) -> str:
    return f"{provider_id}/{model}"


def _date(value: object) -> date | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"a date is {type(value).__name__}")
    return date.fromisoformat(value)


def _encoded(prices: Prices) -> dict[str, Any]:
    rates = {
        "input": prices.input,
        "output": prices.output,
        "cached_input": prices.cached_input,
        "cache_write": prices.cache_write,
        "reasoning": prices.reasoning,
    }
    return {
        "rates": {
            name: None
            if rate is None
            else {"base": str(rate.base), "tiers": [[start, str(p)] for start, p in rate.tiers]}
            for name, rate in rates.items()
        },
        "source": prices.source,
        "model_ref": prices.model_ref,
    }


def _prices(encoded: dict[str, Any]) -> Prices:
    from thoughtline.config.pricing import Prices

    rates = encoded["rates"]
    input_rate, output_rate = _rate(rates["input"]), _rate(rates["output"])
    if input_rate is None or output_rate is None:
        raise ValueError("no input or output price")
    source, model_ref = encoded["source"], encoded["model_ref"]
    if not isinstance(source, str) or not isinstance(model_ref, str):
        raise TypeError("source and model_ref are strings")
    return Prices(
        input=input_rate,
        output=output_rate,
        cached_input=_rate(rates["cached_input"]),
        cache_write=_rate(rates["cache_write"]),
        reasoning=_rate(rates["reasoning"]),
        source=source,
        model_ref=model_ref,
    )


def _rate(encoded: Any) -> Rate | None:
    from thoughtline.config.pricing import Rate

    if encoded is None:
        return None
    tiers = tuple((int(start), Decimal(price)) for start, price in encoded["tiers"])
    return Rate(Decimal(encoded["base"]), tiers)
