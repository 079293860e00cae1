"""The notices of a run's tool servers (a type and its metadata: a server starting, a
pooled one started again), passed on to the one listener that takes them, and held
until there is one."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

Listener: TypeAlias = Callable[[str, dict[str, object]], None]
"""Takes notices (type, metadata): the run writes them to its trace."""


class HeldNotices:
    """A listener that passes each notice to the one :meth:`listen` gives; those that
    come before it are held, and passed to it first."""

    __slots__ = ("_held", "_listener")

    def __init__(self) -> None:
        self._listener: Listener | None = None
        self._held: list[tuple[str, dict[str, object]]] = []

    def listen(self, listener: Listener) -> None:
        """Send the notices to ``listener``, those held first."""
        self._listener = listener
        held, self._held = self._held, []
        for kind, metadata in held:
            listener(kind, metadata)

    def __call__(self, kind: str, metadata: dict[str, object]) -> None:
        if self._listener is None:
            self._held.append((kind, metadata))
        else:
            self._listener(kind, metadata)
