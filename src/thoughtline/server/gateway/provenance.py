"""Which reasoning carriers a client may send back itself: those this gateway handed it,
for the endpoint and model that made them.

A client whose mode shows reasoning receives each answer's carriers (a Messages
``thinking`` block's ``signature``, a ``redacted_thinking`` block's ``data``, a Responses
reasoning item's ``encrypted_content``, and reasoning text that is its own carrier, as
DeepSeek's ``reasoning_content`` is) and may send them back on its next call. The
gateway forwards such a part upstream only if it handed that exact carrier to that
client for the call's endpoint and model. The carriers themselves go back byte for byte
as the provider made them (an Anthropic signature cannot hold a tag): what binds them is
a keyed digest, HMAC-SHA-256 under the gateway's key, of the client, the endpoint, the
model, the carrier and the text it signs, 16 bytes of it kept per carrier.

- **The key** (``$THOUGHTLINE_HOME/gateway.key``, 32 random bytes in hex) is made on the
  first start of a daemon with a client whose mode shows reasoning, ``0600``, and trusted
  only as written: a regular file of this user's, readable by no one else. It is never
  logged nor shown.
- **The digests** (``$THOUGHTLINE_HOME/gateway-carriers``, 16 bytes each, appended) are
  read back at start, so a surface client's tool loop goes on across a daemon restart with
  the carriers it sends itself. They reveal nothing of a carrier without the key. The file
  keeps the latest ``[gateway] carriers_max`` times 4 digests; daemons sharing a home read what
  the others appended when a digest is not found.

A part the gateway did not hand out (forged, altered, made by another model, or sent to
another client) keeps no origin, so no wire sends it upstream: the turn goes by the
provider's rule for turns without carriers, and a provider that refuses it is answered
``GATEWAY_CARRIERS_GONE`` (409). A part whose text the disclosure gate changed (a loaded
credential value taken out) is never vouched for: the provider signed the text as it came.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import secrets
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from thoughtline._private_files import PRIVATE_FILE_MODE, SecretFile
from thoughtline.errors import ThoughtlineError
from thoughtline.model.parts import ReasoningPart

KEY_FILE: Final = "gateway.key"
DIGESTS_FILE: Final = "gateway-carriers"
DIGEST_BYTES: Final = 16
_KEY: Final = re.compile(r"[0-9a-f]{64}")
_CARRIER_KEYS: Final = ("signature", "data", "encrypted_content")


class GatewayKeyError(ThoughtlineError):
    """The gateway's key file cannot be trusted or written; the message names it."""

    def __init__(self, message: str) -> None:
        super().__init__("GATEWAY_KEY_INVALID", message)


def carrier(part: ReasoningPart) -> tuple[str, str] | None:
    """What a part carries back to its provider: its signature, redacted data or
    encrypted content (name and value), else its text alone (``("", "")``); ``None`` for
    a part with neither."""
    for name in _CARRIER_KEYS:
        value = part.provider_metadata.get(name)
        if isinstance(value, str) and value:
            return name, value
    return ("", "") if part.text else None


def _field(value: str) -> bytes:
    data = value.encode("utf-8", "surrogatepass")
    return len(data).to_bytes(8, "big") + data


class Provenance:
    """The keyed digests of the carriers handed to clients (see the module docstring)."""

    def __init__(self, home: Path, *, max_digests: int) -> None:
        self.home = home
        self.max_digests = max_digests
        self._key = _load_or_create_key(home)
        self._path = home / DIGESTS_FILE
        self._known: OrderedDict[bytes, None] = OrderedDict()
        self._read = 0  # bytes of the file read so far
        self._refresh()

    def _digest(
        self, client: str, endpoint: str, model: str, part: ReasoningPart, text: str
    ) -> bytes | None:
        found = carrier(part)
        if found is None:
            return None
        message = b"".join(_field(value) for value in (client, endpoint, model, *found, text))
        return hmac.new(self._key, message, hashlib.sha256).digest()[:DIGEST_BYTES]

    def vouch(self, client: str, endpoint: str, model: str, parts: Iterable[ReasoningPart]) -> None:
        """Remember the carriers of ``parts``, as handed to ``client`` for ``endpoint``
        and ``model``. A signed part is bound to its text as shown: one shown without it
        (Messages' ``display: "omitted"``) comes back blank, which the provider would
        refuse, and is left to the carriers the gateway keeps itself."""
        made: list[bytes] = []
        for part in parts:
            if part.withheld is not None:
                continue  # the client got other text than the provider signed
            digest = self._digest(client, endpoint, model, part, part.text)
            if digest is not None and digest not in self._known:
                made.append(digest)
                self._remember(digest)
        if made:
            self._append(b"".join(made))

    def accepts(self, client: str, endpoint: str, model: str, part: ReasoningPart) -> bool:
        """Whether ``part``, sent back by ``client``, carries what this gateway handed it
        for ``endpoint`` and ``model``."""
        digest = self._digest(client, endpoint, model, part, part.text)
        if digest is None:
            return False
        if digest in self._known:
            self._known.move_to_end(digest)
            return True
        self._refresh()  # another daemon on this home may have handed it out
        return digest in self._known

    def _remember(self, digest: bytes) -> None:
        self._known[digest] = None
        while len(self._known) > self.max_digests:
            self._known.popitem(last=False)

    def _refresh(self) -> None:
        """Take in what was appended to the file since it was last read (the whole file
        again after another daemon rewrote it shorter)."""
        try:
            descriptor = os.open(self._path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return
        except OSError:
            return  # unreadable: nothing more is vouched for than this daemon knows
        with os.fdopen(descriptor, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            whole = size - size % DIGEST_BYTES
            if whole < self._read:
                self._read = 0
            start = max(self._read, whole - self.max_digests * DIGEST_BYTES)
            file.seek(start)
            data = file.read(whole - start)
        self._read = start + len(data)
        for at in range(0, len(data) - DIGEST_BYTES + 1, DIGEST_BYTES):
            self._remember(data[at : at + DIGEST_BYTES])

    def _append(self, data: bytes) -> None:
        try:
            descriptor = os.open(
                self._path,
                os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW,
                PRIVATE_FILE_MODE,
            )
        except OSError:
            return  # kept in memory: the loop goes on until this daemon stops
        with os.fdopen(descriptor, "ab") as file:
            file.write(data)
            size = file.tell()
        if size == self._read + len(data):
            self._read = size
        if size > 2 * self.max_digests * DIGEST_BYTES:
            self._compact()

    def _compact(self) -> None:
        """Rewrite the file with the latest digests only, whole, under a new name."""
        temporary = self._path.with_name(f".{DIGESTS_FILE}.{secrets.token_hex(8)}")
        kept = b"".join(self._known)
        try:
            descriptor = os.open(
                temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE_MODE
            )
            with os.fdopen(descriptor, "wb") as file:
                file.write(kept)
            os.replace(temporary, self._path)
        except OSError:
            with contextlib.suppress(OSError):
                temporary.unlink()
            return
        self._read = len(kept)


def _load_or_create_key(home: Path) -> bytes:
    """The key under ``home``, made (``0600``) when there is none."""
    path = home / KEY_FILE
    secret = SecretFile(
        path=path,
        label="gateway's key file",
        noun="key",
        pattern=_KEY,
        remedy="remove it (a new key is then made; carriers handed out before are refused)",
        error=GatewayKeyError,
    )
    try:
        key, _made = secret.load_or_create(lambda: secrets.token_hex(32))
    except OSError as exc:
        raise GatewayKeyError(
            f"Cannot write the gateway's key file {path} ({exc.strerror or exc}); make "
            f"{home} writable, then start the daemon again."
        ) from exc
    return bytes.fromhex(key)
