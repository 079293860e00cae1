"""Round-trip rules: what each simulated provider demands back between tool steps.

A provider that returns a reasoning carrier (a signature, ``encrypted_content``, a
``thoughtSignature``, ``reasoning_content``) checks it when a later request sends the
conversation back, and refuses a history that drops, reorders, blanks or alters it with
its own HTTP status and error body. A :class:`RoundTripRule` is that check for one wire
API: :meth:`~RoundTripRule.remember` is told every response the simulator sent, and
:meth:`~RoundTripRule.check` reads each new request against what was remembered, in a
:class:`CarrierBook` the simulator owns (so :meth:`Simulator.reset` forgets it).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from thoughtline.testing.transcript import SimRequest


@dataclass(frozen=True, slots=True, kw_only=True)
class Rejection:
    """The provider's answer to a broken round trip: its status and its JSON error body."""

    status: int
    body: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class Accepted:
    """The provider answers the request after changing it: ``input_transformations``
    says how (e.g. Anthropic thinking blocks dropped by a binding check), and goes into
    the response."""

    input_transformations: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReturnedCarrier:
    """A carrier a request sent back, as the simulator found it (``kind`` names the
    field: ``signature``, ``redacted_data``, ``encrypted_content``, ``thought_signature``,
    ``reasoning_content``, ``reasoning_details``, ``thinking``)."""

    profile: str
    model: str | None
    kind: str
    value: str


@dataclass(slots=True)
class CarrierBook:
    """What the simulator handed out, by carrier value, and what came back. Thread-safe."""

    issued: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    returned: list[ReturnedCarrier] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def issue(self, namespace: str, key: str, record: Any) -> None:
        """Remember ``record`` under ``key`` (one key may be handed out several times)."""
        with self._lock:
            self.issued.setdefault((namespace, key), []).append(record)

    def lookup(self, namespace: str, key: object) -> list[Any]:
        """Every record handed out under ``key``; empty when it never was."""
        if not isinstance(key, str):
            return []
        with self._lock:
            return list(self.issued.get((namespace, key), ()))

    def saw(self, request: SimRequest, kind: str, value: object) -> None:
        """Record a carrier a request sent back."""
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        with self._lock:
            self.returned.append(
                ReturnedCarrier(profile=request.profile, model=request.model, kind=kind, value=text)
            )

    def clear(self) -> None:
        with self._lock:
            self.issued.clear()
            self.returned.clear()


class RoundTripRule(Protocol):
    """One wire API's round-trip rule (see the module docstring)."""

    def remember(self, request: SimRequest, response: Mapping[str, Any], book: CarrierBook) -> None:
        """Note the carriers of ``response`` (the complete, non-streamed body the
        simulator rendered for ``request``) and what they are bound to."""
        ...

    def check(self, request: SimRequest, book: CarrierBook) -> Rejection | Accepted | None:
        """The provider's rejection of ``request``'s history, what it changed before
        answering, or ``None`` to answer it as it is."""
        ...


def digest(value: Any) -> str:
    """A stable digest of a JSON value (object key order does not count, as on the wire)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def json_error(status: int, payload: Mapping[str, Any]) -> Rejection:
    """A rejection whose body is ``payload`` as compact JSON."""
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return Rejection(status=status, body=body)
