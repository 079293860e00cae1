"""Cost arithmetic: what a call, a task or a run cost, and sums of costs kept up as they
come (priced by :mod:`thoughtline.config.pricing` when each call ends)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

# typing's TypedDict is not readable by pydantic before Python 3.12 (schema/run.py).
from thoughtline.records.snapshot import CostPartsSnapshot, CostSnapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class CostParts:
    """See :class:`CostPartsSnapshot` (``reasoning`` is part of ``output``)."""

    input: float = 0.0
    cached_input: float = 0.0
    cache_write: float = 0.0
    output: float = 0.0
    reasoning: float = 0.0

    def to_dict(self) -> CostPartsSnapshot:
        return {
            "input": self.input,
            "cached_input": self.cached_input,
            "cache_write": self.cache_write,
            "output": self.output,
            "reasoning": self.reasoning,
        }


NOT_PRICED = "stored before thoughtline priced model calls"
"""The reason a call recorded by an older thoughtline (no stored cost) costs unknown."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Cost:
    """What a call, a task or a run cost (see :class:`CostSnapshot`); priced once, by
    :mod:`thoughtline.config.pricing`, when each call ends, and stored with its task."""

    amount: float | None = 0.0
    source: str | None = None
    parts: CostParts | None = field(default_factory=CostParts)
    unknown_reason: str | None = None
    known_amount: float | None = None
    """When ``amount`` is unknown: what the calls whose cost is known came to (``None``:
    none is known)."""
    unknown_part: str | None = None
    """When ``amount`` is unknown: which of its calls are (``step 2``, ``2 steps``,
    ``task b step 2``); ``None`` for one call's own cost."""

    @classmethod
    def unknown(
        cls,
        reason: str,
        *,
        source: str | None = None,
        known_amount: float | None = None,
        unknown_part: str | None = None,
    ) -> Cost:
        return cls(
            amount=None,
            source=source,
            parts=None,
            unknown_reason=reason,
            known_amount=known_amount,
            unknown_part=unknown_part,
        )

    @property
    def known(self) -> bool:
        return self.amount is not None

    def to_dict(self) -> CostSnapshot:
        snapshot: CostSnapshot = {
            "amount": self.amount,
            "currency": "USD",
            "source": self.source,
            "parts": None if self.parts is None else self.parts.to_dict(),
            "unknown_reason": self.unknown_reason,
        }
        if self.known_amount is not None:
            snapshot["known_amount"] = self.known_amount
        if self.unknown_part is not None:
            snapshot["unknown_part"] = self.unknown_part
        return snapshot

    @classmethod
    def from_dict(cls, data: CostSnapshot) -> Cost:
        parts = data["parts"]
        return cls(
            amount=data["amount"],
            source=data["source"],
            parts=None if parts is None else CostParts(**parts),
            unknown_reason=data["unknown_reason"],
            known_amount=data.get("known_amount"),
            unknown_part=data.get("unknown_part"),
        )


def total_cost(costs: Iterable[Cost], *, label: Callable[[int], str] | None = None) -> Cost:
    """The sum of ``costs``: unknown when any is (with the first one's reason, led by
    ``label(i)``, e.g. the task's name), and from every source they were priced from."""
    running = RunningCost(label)
    for cost in costs:
        running.add(cost)
    return running.total()


class RunningCost:
    """:func:`total_cost` kept up as costs come, one at a time: the same sums, added in
    the same order (so the same floats) as summing them all again, which a loop of
    many steps would do at every step."""

    __slots__ = (
        "_total",
        "amount",
        "count",
        "dicts",
        "known",
        "label",
        "sources",
        "sums",
        "unknown",
        "unknown_count",
        "unknown_part",
    )

    def __init__(self, label: Callable[[int], str] | None = None) -> None:
        self.label = label
        self.count = 0
        self.amount = 0.0
        self.sums = dict.fromkeys(
            ("input", "cached_input", "cache_write", "output", "reasoning"), 0.0
        )
        self.sources: list[str] = []
        self.unknown: str | None = None
        self.unknown_count = 0
        self.unknown_part: str | None = None
        self.known = False
        """Whether any cost added is known, wholly or in part."""
        self.dicts: list[CostSnapshot] = []
        """The costs' :meth:`Cost.to_dict`, each made once, when first asked for (see
        :meth:`Task.step_cost_dicts`)."""
        self._total: Cost | None = None  # until the next cost

    def add(self, cost: Cost) -> None:
        index, self.count = self.count, self.count + 1
        self._total = None
        for source in (cost.source or "").split("; "):
            if source and source not in self.sources:
                self.sources.append(source)
        if cost.amount is None or cost.parts is None:
            self.unknown_count += 1
            label = None if self.label is None else self.label(index)
            if self.unknown is None:
                reason = cost.unknown_reason or "unknown"
                self.unknown = reason if label is None else f"{label}: {reason}"
                inner = cost.unknown_part
                self.unknown_part = " ".join(part for part in (label, inner) if part) or None
            elif label is not None:
                self.unknown_part = f"{self.unknown_count} {label.split()[0]}s"
            if cost.known_amount is not None:  # a part of it is known: kept
                self.amount += cost.known_amount
                self.known = True
            return
        self.known = True
        self.amount += cost.amount
        sums = self.sums
        for name in sums:
            sums[name] += getattr(cost.parts, name)

    def total(self) -> Cost:
        if self._total is not None:
            return self._total
        joined = "; ".join(self.sources) or None
        if self.unknown is not None:
            total = Cost.unknown(
                self.unknown,
                source=joined,
                known_amount=round(self.amount, 10) if self.known else None,
                unknown_part=self.unknown_part,
            )
        else:
            total = Cost(
                amount=round(self.amount, 10),
                source=joined,
                parts=CostParts(**{name: round(value, 10) for name, value in self.sums.items()}),
            )
        self._total = total
        return total


def _step_label(index: int) -> str:
    return f"step {index + 1}"
