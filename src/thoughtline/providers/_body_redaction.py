"""Redacting a response body as it arrives in chunks (:class:`BodyRedactor`), for the
exchange a call captures: the same bytes :meth:`Redactor.bytes
<thoughtline.providers.redaction.Redactor.bytes>` gives for the whole body, without
holding or scanning the whole body.
"""

from __future__ import annotations

import re
from typing import Final

from thoughtline.providers.redaction import (
    _KEY_SHAPES_BYTES,
    _REDACTED_BYTES,
    Redactor,
    _HeldTail,
)

# The bytes key shapes are made of. A match never contains any other byte, and one that
# starts right after a byte outside this set and the space has no "Bearer " before it: a
# body cut after such a byte splits no match.
_KEY_BYTES: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._~+/=-"
_KEY_OR_SPACE_BYTES: Final = _KEY_BYTES + b" "

BODY_BLOCK_BYTES: Final = 16 * 1024
""":class:`BodyRedactor` looks at chunks once this many bytes have gathered."""
BODY_CARRY_LIMIT: Final = 64 * 1024
"""Most bytes :class:`BodyRedactor` holds back past a block, in a run that a key shape
could still be part of."""
_BODY_HOLD: Final = 128  # kept when a run of key bytes passes the limit (see BodyRedactor)


class BodyRedactor:
    """Sans-IO redaction of a response body that arrives in chunks: loaded values and key
    shapes, as :meth:`Redactor.bytes` removes them from the whole body.

    :meth:`feed` returns the redacted bytes that can be released now (often none),
    :meth:`flush` the rest at the end. Chunks are gathered into blocks of
    :data:`BODY_BLOCK_BYTES` first: a stream delivers one small frame per chunk, and
    testing each on its own would cost more than the substring tests themselves. Loaded
    values then go through the same held-tail logic as :class:`StreamRedactor`. Key
    shapes are looked for up to the last byte that no key shape can contain or follow
    (a quote, a comma, a line break, any non-ASCII byte...; not a space, which may end
    "Bearer "); the bytes after it are held until such a byte arrives. A block of
    ordinary text passes after a few substring tests, never reaching a regular expression.

    A credential cut anywhere across chunks is removed whole, and the output equals
    :meth:`Redactor.bytes` of the whole body, with one bounded exception. At most
    :data:`BODY_CARRY_LIMIT` bytes are held past a block: a longer run of key bytes and
    spaces (a long base64 signature, say) is released up to its last 128 bytes, a key
    shape that starts before that cut is replaced whole, and one still running at the
    cut makes the key bytes that follow it redacted too (a key shape's greedy tail). That
    can redact more than the whole-body scan would, never less.
    """

    __slots__ = (
        "_carry",
        "_carry_size",
        "_open_ends",
        "_pending",
        "_pending_size",
        "_secrets",
        "_swallow",
        "_values",
    )

    def __init__(self, redactor: Redactor) -> None:
        self._values = _HeldTail(redactor._body, _REDACTED_BYTES, b"")
        self._secrets = redactor._body.values
        # Bytes a block may not end on to pass whole: a key shape or a value could go on.
        self._open_ends = frozenset(_KEY_OR_SPACE_BYTES) | redactor._body.prefix_characters
        self._pending: list[bytes] = []  # chunks not yet looked at
        self._pending_size = 0
        self._carry: list[bytes] = []  # bytes a key shape may still run through
        self._carry_size = 0
        self._swallow = False  # a key shape is running across a forced cut

    def feed(self, chunk: bytes) -> bytes:
        pending = self._pending
        pending.append(chunk)
        size = self._pending_size + len(chunk)
        if size < BODY_BLOCK_BYTES:
            self._pending_size = size
            return b""
        block = b"".join(pending)
        pending.clear()
        self._pending_size = 0
        return self._redact(block)

    def _redact(self, chunk: bytes) -> bytes:
        if (
            chunk
            and chunk[-1] not in self._open_ends
            and not self._carry
            and not self._swallow
            and not self._values._held
            and b"sk-" not in chunk
            and b"AIza" not in chunk
            and b"earer " not in chunk
            and not any(secret in chunk for secret in self._secrets)
        ):
            return chunk  # nothing held, nothing in it, and it cannot end inside anything
        data = self._values.feed(chunk)
        if self._swallow:
            data = self._swallowed(data)
        if not data:
            return data
        if self._carry:
            return self._with_carry(data)
        cut = len(data.rstrip(_KEY_OR_SPACE_BYTES))
        if cut == len(data):
            return _shapes(data)
        self._carry.append(data[cut:])
        self._carry_size = len(data) - cut
        if self._carry_size > BODY_CARRY_LIMIT:
            return _shapes(data[:cut]) + self._forced_cut()
        return _shapes(data[:cut]) if cut else b""

    def flush(self) -> bytes:
        """The held bytes, redacted, at the end of the body (or where capture stops)."""
        block = b"".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        released = self._redact(block) if block else b""
        data = self._values.flush()
        if self._swallow:
            data = self._swallowed(data)
        carry = b"".join(self._carry) + data
        self._carry.clear()
        self._carry_size = 0
        self._swallow = False
        return released + _shapes(carry)

    def _with_carry(self, data: bytes) -> bytes:
        cut = len(data.rstrip(_KEY_OR_SPACE_BYTES))
        if cut == 0:  # still inside the run: keep it, joining only at the limit
            self._carry.append(data)
            self._carry_size += len(data)
            return self._forced_cut() if self._carry_size > BODY_CARRY_LIMIT else b""
        released = _shapes(b"".join(self._carry) + data[:cut])
        rest = data[cut:]
        self._carry = [rest] if rest else []
        self._carry_size = len(rest)
        if self._carry_size > BODY_CARRY_LIMIT:
            return released + self._forced_cut()
        return released

    def _forced_cut(self) -> bytes:
        """Release a run of key bytes and spaces longer than the limit, but its last
        ``_BODY_HOLD`` bytes. Every key shape is decided within 45 bytes of its start and
        "Bearer " is 7, so whatever starts before the cut is settled by the held bytes,
        except a greedy match still running at the end of what has arrived."""
        run = b"".join(self._carry)
        cut = len(run) - _BODY_HOLD
        if not (b"sk-" in run or b"AIza" in run or b"earer " in run):  # no key shape in it
            self._carry = [run[cut:]]
            self._carry_size = _BODY_HOLD
            return run[:cut]
        pieces: list[bytes] = []
        position = 0
        for match in _KEY_SHAPES_BYTES.finditer(run):
            if match.start() >= cut:
                if match.start() - 7 < cut:  # keep its "Bearer " with it
                    cut = max(position, match.start() - 7)
                break
            pieces.append(run[position : match.start()])
            pieces.append(_REDACTED_BYTES)
            position = match.end()
            if position >= cut:
                cut = position
                break
        if position == len(run):  # a key shape runs to the end: redact what follows it
            self._swallow = True
        pieces.append(run[position:cut])
        rest = run[cut:]
        self._carry = [rest] if rest else []
        self._carry_size = len(rest)
        return b"".join(pieces)

    def _swallowed(self, data: bytes) -> bytes:
        rest = data.lstrip(_KEY_BYTES)
        if rest:
            self._swallow = False
        return rest


def _shapes(data: bytes) -> bytes:
    if b"sk-" in data or b"AIza" in data or b"earer " in data:  # _KEY_SHAPE_MARKERS
        return _KEY_SHAPES_BYTES.sub(_REDACTED_BYTES, data)
    return data


PIECE_MIN_BYTES: Final = 4
"""The shortest piece of a loaded value :func:`remove_split_pieces` removes. A shorter one
(``sk-``, say) is what any key of its kind starts with, and would redact ordinary text."""


def remove_split_pieces(body: bytes, values: tuple[bytes, ...]) -> bytes:
    """``body`` with the pieces of loaded ``values`` that a stream split across JSON
    strings replaced by ``[REDACTED]``.

    A model that echoes a key one delta at a time writes it as ``"…sk-FAKE-a"`` in one
    frame and ``"bcdef…"`` in the next: the value never occurs whole in the bytes, so
    neither :meth:`Redactor.bytes` nor :class:`BodyRedactor` sees it. Here every run of a
    value's own bytes that touches a string's quote is looked at: its end is removed
    when it is the start of the value and the string closes there, its start when it is
    the end of the value and the string opens there, and a whole string that lies inside
    the value (the middle of a three-way split). Pieces shorter than
    :data:`PIECE_MIN_BYTES` stay.

    Meant for a body whose model output is known to have held a loaded value (the scan
    costs a regular expression over the whole body); linear in the body's size per value.
    """
    for value in values:
        body = _remove_pieces_of(body, value)
    return body


def _remove_pieces_of(body: bytes, value: bytes) -> bytes:
    alphabet = bytes(sorted(set(value) - set(b'"\\')))
    if len(value) <= PIECE_MIN_BYTES or not alphabet:
        return body
    runs = re.compile(b"[" + re.escape(alphabet) + b"]{%d,}" % PIECE_MIN_BYTES)
    spans: list[tuple[int, int]] = []
    for run in runs.finditer(body):
        start, end = run.span()
        text = run.group()
        opens = start > 0 and body[start - 1] == 0x22  # '"'
        closes = body[end : end + 1] == b'"'
        if opens and closes and text in value:
            spans.append((start, end))  # the whole string is a piece of the value
            continue
        tail = _longest_end_piece(text, value) if opens else 0
        head = _longest_start_piece(text, value) if closes else 0
        if tail and head and tail + head > len(text):
            head = 0  # one piece: keep the longer reading, the tail's
        if tail:
            spans.append((start, start + tail))
        if head:
            spans.append((end - head, end))
    if not spans:
        return body
    pieces: list[bytes] = []
    position = 0
    for start, end in spans:
        pieces.append(body[position:start])
        pieces.append(_REDACTED_BYTES)
        position = end
    pieces.append(body[position:])
    return b"".join(pieces)


def _longest_start_piece(text: bytes, value: bytes) -> int:
    """The length of the longest end of ``text`` that begins ``value`` (a proper prefix
    of at least :data:`PIECE_MIN_BYTES`), or 0."""
    for length in range(min(len(text), len(value) - 1), PIECE_MIN_BYTES - 1, -1):
        if text.endswith(value[:length]):
            return length
    return 0


def _longest_end_piece(text: bytes, value: bytes) -> int:
    """The length of the longest start of ``text`` that ends ``value`` (a proper suffix
    of at least :data:`PIECE_MIN_BYTES`), or 0."""
    for length in range(min(len(text), len(value) - 1), PIECE_MIN_BYTES - 1, -1):
        if text.startswith(value[-length:]):
            return length
    return 0
