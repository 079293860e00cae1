"""The daemon's access token when none is given: generated once, kept in
``$THOUGHTLINE_HOME/daemon.token`` and reused by every later ``thoughtline serve``.

Without a token, any local account could read every run on a loopback daemon and start
runs on its owner's keys, so ``serve`` always has one unless told ``--no-token``.

The file is the secret, so it is trusted only as thoughtline writes it: a regular file
(not a link), owned by this user, ``0600``, holding one URL-safe token. Anything else
stops ``serve`` with :class:`TokenFileError` naming the file and what to do; a file
others could read is never reused (its token may be known) nor silently repaired. The
token itself never appears in these messages.

A new file is written whole under a temporary name and then linked into place, which
fails when the file exists: two daemons starting together end up with the same token.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Final

from thoughtline._private_files import PRIVATE_FILE_MODE, make_private_dir
from thoughtline.errors import ThoughtlineError

TOKEN_FILE_NAME: Final = "daemon.token"
_TOKEN_BYTES: Final = 32
_TOKEN: Final = re.compile(r"[A-Za-z0-9_-]{32,256}")
_MAX_FILE_BYTES: Final = 1024


class TokenFileError(ThoughtlineError):
    """The daemon's token file cannot be trusted or read; the message names the file."""

    def __init__(self, message: str) -> None:
        super().__init__("SERVE_TOKEN_FILE_INVALID", message)


def token_file(home: Path) -> Path:
    """Where the daemon keeps its generated token under ``home``."""
    return home / TOKEN_FILE_NAME


def load_or_create_token(home: Path) -> str:
    """The token kept under ``home``, generated and stored (``0600``, the directory
    ``0700`` when created here) on first use."""
    path = token_file(home)
    token = _read(path)
    if token is not None:
        return token
    try:
        make_private_dir(home)
        return _create(path)
    except OSError as exc:
        raise TokenFileError(
            f"Cannot write the daemon's token file {path} ({exc.strerror or exc}); make "
            f"{home} writable, or pass --token (or set THOUGHTLINE_TOKEN)."
        ) from exc


def _read(path: Path) -> str | None:
    """The token in ``path``, ``None`` when there is no file."""
    remedy = "remove it (a new token is then generated) or pass --token"
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        # ELOOP: a symbolic link; anything else: not readable by this user.
        raise TokenFileError(
            f"Cannot use the daemon's token file {path} ({exc.strerror or exc}): it must be "
            f"a regular file readable by this user; {remedy}."
        ) from exc
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        os.close(descriptor)
        raise TokenFileError(f"The daemon's token file {path} is not a regular file; {remedy}.")
    with os.fdopen(descriptor, "rb") as file:
        if info.st_uid != os.getuid():
            raise TokenFileError(
                f"The daemon's token file {path} belongs to another user; {remedy}."
            )
        if stat.S_IMODE(info.st_mode) & 0o077:
            raise TokenFileError(
                f"The daemon's token file {path} can be read by other accounts (mode "
                f"{stat.S_IMODE(info.st_mode):04o}), so its token may be known: {remedy}."
            )
        data = file.read(_MAX_FILE_BYTES + 1)
    text = data.decode("ascii", "replace").strip()
    if len(data) > _MAX_FILE_BYTES or not _TOKEN.fullmatch(text):
        raise TokenFileError(
            f"The daemon's token file {path} does not hold a token (empty or damaged); {remedy}."
        )
    return text


def _create(path: Path) -> str:
    token = secrets.token_urlsafe(_TOKEN_BYTES)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    descriptor = os.open(
        temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE_MODE
    )
    try:
        with os.fdopen(descriptor, "w", encoding="ascii") as file:
            os.fchmod(file.fileno(), PRIVATE_FILE_MODE)  # the umask can only narrow it
            file.write(token + "\n")
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            # Another daemon wrote it first: use its token, so both answer the same one.
            existing = _read(path)
            if existing is None:  # removed again meanwhile: an odd race, not worth a loop
                raise TokenFileError(
                    f"The daemon's token file {path} changed while being created; try again."
                ) from None
            return existing
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
    return token
