"""What a model call cost: prices per million tokens, and one call's usage priced with them.

Prices come from ``[prices."provider/model"]`` in config when an entry names the model
(it replaces the data's prices for it), else from pydantic's ``genai-prices`` data,
pinned and read offline (this is the only module that imports it, and only on the first
lookup: loading a stored run prices nothing; a runtime's pricer keeps what it looked up
under the home, ``config/price_cache.py``, and loads the data only for a model it has
not priced before). A model neither knows, a local server
without a configured price, or a call whose usage was not reported costs ``unknown``,
with a reason; nothing is guessed.

Usage is read the way thoughtline reports it for every provider (``records.UsageSnapshot``):
``input_tokens`` holds every input token, cached or not, and ``output_tokens`` every
generated one, reasoning included. A call costs its uncached input at the input price,
its cache reads and writes at theirs, and its output at the output price, except its
reasoning tokens where the data prices reasoning apart. The ``reasoning`` part is the
share of ``output`` that reasoning cost: it is never added to the total twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import cache
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, Final

from thoughtline.config.price_cache import PriceCache, Window
from thoughtline.records import Cost, CostParts, TaskUsage

if TYPE_CHECKING:
    from thoughtline.config import Config

PRICE_KEYS: Final = ("input", "output", "cached_input", "cache_write", "reasoning")
"""The keys of a ``[prices."provider/model"]`` entry beside ``currency`` (USD per
million tokens); ``input`` and ``output`` are required, the rest default to them."""
CURRENCY: Final = "USD"
DATA_PACKAGE: Final = "genai-prices"

DATA_PROVIDERS: Final[Mapping[str, str]] = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openrouter": "openrouter",
    "gemini": "google",
    "deepseek": "deepseek",
}
"""thoughtline's built-in endpoints → genai-prices provider ids. A model served by any
other endpoint (a local server, a user-defined one) is priced from config: a
``[prices]`` entry, or ``[providers.NAME] prices`` naming one of these."""
LOCAL_ENDPOINTS: Final = ("ollama", "vllm", "llamacpp")
_MILLION = Decimal(1_000_000)
_PLACES = Decimal("1e-10")


@dataclass(frozen=True, slots=True)
class Rate:
    """USD per million tokens; above each tier's input-token threshold its price applies
    (genai-prices' tiered prices, e.g. a long-context surcharge)."""

    base: Decimal
    tiers: tuple[tuple[int, Decimal], ...] = ()

    def at(self, input_tokens: int) -> Decimal:
        for start, price in reversed(self.tiers):
            if input_tokens > start:
                return price
        return self.base


@dataclass(frozen=True, slots=True)
class Prices:
    """The prices one model's calls are charged, and where they came from. A rate left
    ``None`` is charged at the input price (cache reads and writes) or at the output
    price (reasoning)."""

    input: Rate
    output: Rate
    cached_input: Rate | None
    cache_write: Rate | None
    reasoning: Rate | None
    source: str
    """``config FILE [prices."provider/model"]`` or ``genai-prices VERSION``."""
    model_ref: str = ""
    """The model the data matched (its own id), for ``thoughtline prices``."""

    def cost(self, usage: TaskUsage) -> Cost:
        """``usage`` priced; ``unknown`` when the provider did not report its tokens."""
        if usage.input_tokens is None or usage.output_tokens is None:
            return Cost.unknown(
                "the provider did not report token usage for this call", source=self.source
            )
        total_in = usage.input_tokens
        cached = usage.cached_input_tokens or 0
        written = usage.cache_write_tokens or 0
        reasoning = min(usage.reasoning_tokens or 0, usage.output_tokens)
        uncached = max(total_in - cached - written, 0)
        output_rate = self.output.at(total_in)
        reasoning_rate = output_rate if self.reasoning is None else self.reasoning.at(total_in)
        input_rate = self.input.at(total_in)
        parts = {
            "input": uncached * input_rate,
            "cached_input": cached * (self.cached_input or self.input).at(total_in),
            "cache_write": written * (self.cache_write or self.input).at(total_in),
            "reasoning": reasoning * reasoning_rate,
        }
        parts["output"] = (usage.output_tokens - reasoning) * output_rate + parts["reasoning"]
        exact = {name: value / _MILLION for name, value in parts.items()}
        total = exact["input"] + exact["cached_input"] + exact["cache_write"] + exact["output"]
        return Cost(
            amount=_rounded(total),
            source=self.source,
            parts=CostParts(**{name: _rounded(value) for name, value in exact.items()}),
        )


@dataclass(frozen=True, slots=True)
class Unpriced:
    """No prices for a model, and why (the sentence a cost's ``unknown_reason`` carries)."""

    reason: str


@dataclass(frozen=True, slots=True)
class ConfiguredPrice:
    """A validated ``[prices."provider/model"]`` entry (USD per million tokens)."""

    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None
    cache_write: Decimal | None = None
    reasoning: Decimal | None = None


@dataclass(slots=True)
class Pricer:
    """Prices calls by provider and model: config entries first, then the data.

    ``configured`` maps ``provider/model`` (or ``provider/*`` for every model of an
    endpoint) to its entry; ``config_path`` names the file they came from."""

    configured: Mapping[str, ConfiguredPrice] = field(default_factory=dict)
    config_path: str | None = None
    priced_as: Mapping[str, str] = field(default_factory=dict)
    """Endpoint → the built-in endpoint whose price data prices its models
    (``[providers.NAME] prices``)."""
    cache: PriceCache | None = None
    """Where the data's prices of models priced before are kept (a runtime's, under the
    home); without it every process loads the data for its first price."""

    @classmethod
    def from_config(cls, config: Config) -> Pricer:
        """The config's ``[prices]`` entries and ``[providers.NAME] prices`` choices."""
        return cls(
            config.prices,
            config_path=str(config.path) if config.path else None,
            priced_as={
                name: settings.prices
                for name, settings in config.providers.items()
                if settings.prices is not None
            },
        )

    def prices(self, provider: str, model: str, *, at: datetime | None = None) -> Prices | Unpriced:
        """The prices ``model`` on endpoint ``provider`` is charged (at time ``at``,
        for data whose prices change over time), or why there are none."""
        for key in (f"{provider}/{model}", f"{provider}/*"):
            entry = self.configured.get(key)
            if entry is not None:
                where = f"config {self.config_path}" if self.config_path else "config"
                return _from_config(entry, f'{where} [prices."{key}"]')
        data_provider = DATA_PROVIDERS.get(self.priced_as.get(provider, provider))
        if data_provider is None:
            set_zero = f'set [prices."{provider}/{model}"] input = 0 and output = 0'
            if provider in LOCAL_ENDPOINTS:
                return Unpriced(
                    f"{provider} is a local server with no configured price; {set_zero} "
                    "in config if its calls cost nothing"
                )
            vendors = ", ".join(f'"{name}"' for name in DATA_PROVIDERS)
            return Unpriced(
                f"endpoint {provider!r} has no price data; {set_zero} (or its real "
                f"prices) in config, or [providers.{provider}] prices = one of {vendors} "
                "to price its models as that provider's"
            )
        if at is not None or self.cache is None:
            return _data_prices(provider, data_provider, model, at or datetime.now(UTC))[0]
        now = datetime.now(UTC)
        kept = self.cache.get(data_provider, model, now.date())
        if kept is not None:
            return kept
        found, window = _data_prices(provider, data_provider, model, now)
        if isinstance(found, Prices) and window is not None:
            self.cache.put(data_provider, model, found, window)
        return found

    def price(
        self, provider: str, model: str, usage: TaskUsage, *, at: datetime | None = None
    ) -> Cost:
        """One call's cost from its reported usage."""
        found = self.prices(provider, model, at=at)
        if isinstance(found, Unpriced):
            return Cost.unknown(found.reason)
        return found.cost(usage)


@cache
def data_version() -> str:
    """The pinned price data's version, e.g. ``0.2.3``: the package's as it was imported.
    Read once: ``importlib.metadata`` scans the installed distributions for it (about a
    millisecond), and every priced call names it."""
    return version(DATA_PACKAGE)


def format_amount(amount: float) -> str:
    """``$0.0064``: dollars and cents from one dollar up, else two significant figures."""
    if amount == 0:
        return "$0"
    if amount >= 1:
        return f"${amount:,.2f}"
    digits = Decimal(repr(amount))
    exponent = digits.adjusted()  # -3 for 0.0064
    return f"${round(digits, 1 - exponent):f}"


def reasoning_cost_clause(cost: Cost | None) -> str:
    """`` ($0.0064)``: what a call's reasoning tokens cost, for the reasoning notice; empty
    when that is unknown or nothing."""
    if cost is None or cost.parts is None or not cost.parts.reasoning:
        return ""
    return f" ({format_amount(cost.parts.reasoning)})"


def _from_config(entry: ConfiguredPrice, source: str) -> Prices:
    return Prices(
        input=Rate(entry.input),
        output=Rate(entry.output),
        cached_input=None if entry.cached_input is None else Rate(entry.cached_input),
        cache_write=None if entry.cache_write is None else Rate(entry.cache_write),
        reasoning=None if entry.reasoning is None else Rate(entry.reasoning),
        source=source,
    )


@cache
def _snapshot() -> Any:
    from genai_prices import data_snapshot

    return data_snapshot.get_snapshot()


def load_price_data() -> None:
    """Read the price data now (about 0.1 s, some 25,000 objects). A long-running process
    does so before it freezes its startup heap: otherwise the first task to end stalls
    its event loop while the data loads, and every full garbage collection walks it."""
    _snapshot()


def _data_prices(
    provider: str, provider_id: str, model: str, at: datetime
) -> tuple[Prices | Unpriced, Window | None]:
    """The data's prices for ``model`` at ``at``, and the dates they hold for (``None``:
    they change within a day, or there are none)."""
    try:
        _provider, info = _snapshot().find_provider_model(model, None, provider_id, None)
    except LookupError:
        return Unpriced(
            f"{DATA_PACKAGE} {data_version()} has no price for {model!r} at "
            f'{provider_id}; set [prices."{provider}/{model}"] in config'
        ), None
    price = info.get_prices(at)
    key = (provider, provider_id, model)
    built = _BUILT.get(key)
    if built is not None and built[0] is price:
        found = built[1]
    else:
        found = _prices_of(price, provider, provider_id, model, str(info.id))
        if len(_BUILT) >= _BUILT_KEPT:
            _BUILT.clear()
        _BUILT[key] = (price, found)
    if isinstance(found, Unpriced):
        return found, None
    return found, _window(info.prices, at.astimezone(UTC).date())


_BUILT: dict[tuple[str, str, str], tuple[object, Prices | Unpriced]] = {}
"""Per endpoint, data provider and model: the data's price object last used and the
prices made of it. A model's price object is the same from call to call (another one
when its prices change with the time of day), and reading its rates took half of
pricing a call."""
_BUILT_KEPT: Final = 1024


def _prices_of(
    price: Any, provider: str, provider_id: str, model: str, model_ref: str
) -> Prices | Unpriced:
    input_rate, output_rate = _rate(price.input_mtok), _rate(price.output_mtok)
    if input_rate is None or output_rate is None:
        return Unpriced(
            f"{DATA_PACKAGE} {data_version()} has no token prices for {model!r} at {provider_id}"
        )
    return Prices(
        input=input_rate,
        output=output_rate,
        cached_input=_rate(price.cache_read_mtok),
        cache_write=_rate(price.cache_write_mtok),
        reasoning=_rate(price.output_reasoning_mtok),
        source=f"{DATA_PACKAGE} {data_version()}",
        model_ref=model_ref,
    )


def _window(prices: object, day: date) -> Window | None:
    """The dates the price a model's data gives on ``day`` holds for: one price holds
    always; conditional prices that start on dates hold from the last start up to the
    next; any other condition (a time of day) may change within the day: ``None``."""
    if not isinstance(prices, list):
        return Window()
    starts: list[date] = []
    for conditional in prices:
        constraint = getattr(conditional, "constraint", None)
        if constraint is None:
            continue
        start = getattr(constraint, "start_date", None)
        if not isinstance(start, date) or hasattr(constraint, "start_time"):
            return None
        starts.append(start)
    return Window(
        since=max((start for start in starts if start <= day), default=None),
        until=min((start for start in starts if start > day), default=None),
    )


def _rate(value: object) -> Rate | None:
    if value is None:
        return None
    if isinstance(value, Decimal):
        return Rate(value)
    base = getattr(value, "base", None)
    tiers = getattr(value, "tiers", None)
    if not isinstance(base, Decimal) or tiers is None:
        return None
    return Rate(base, tuple((int(tier.start), Decimal(tier.price)) for tier in tiers))


def _rounded(value: Decimal) -> float:
    return float(value.quantize(_PLACES))
