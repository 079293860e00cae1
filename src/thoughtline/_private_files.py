"""Files under THOUGHTLINE_HOME are private to their owner, whatever the umask.

They hold answers, displayed reasoning and (opt-in) raw provider traffic. A directory
thoughtline creates is ``0700``; the database, its ``-wal``/``-shm`` files and caches are
``0600``. A directory that already exists is left as its owner set it (a user may share
a home on purpose); files thoughtline owns are tightened whenever they are opened.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def make_private_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) unless it exists; the directory itself is
    created ``0700``. Parents get the usual mode; an existing directory is not changed."""
    if path.is_dir():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=PRIVATE_DIR_MODE)
    except FileExistsError:
        return  # another process created it meanwhile (or it is a file: the caller says)
    # mkdir applied the umask, which can only have removed bits; make the mode exact.
    os.chmod(path, PRIVATE_DIR_MODE)


def create_private_file(path: Path) -> None:
    """Create an empty ``0600`` file unless ``path`` exists, so programs that copy a
    file's mode to the files beside it (SQLite's ``-wal`` and ``-shm``) start private."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    except FileExistsError:
        return
    os.close(descriptor)


def make_private(path: Path) -> None:
    """Remove group and other permissions from an existing file. A missing file, or
    one this user may not change (another owner), is left alone."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            os.chmod(path, mode & 0o700)
    except (FileNotFoundError, PermissionError):
        return


def write_private_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8), which is or becomes a ``0600`` file."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        if hasattr(os, "fchmod"):
            os.fchmod(file.fileno(), PRIVATE_FILE_MODE)  # it may have existed, wider
        file.write(text)


@dataclass(frozen=True, slots=True)
class SecretFile:
    """A secret made once and kept in one file of the home (the daemon's token, the
    gateway's key), trusted only as written here: a regular file (not a link) of this
    user's, readable by no one else, holding one value matching ``pattern``. Any other
    file is refused with ``error(sentence)``, the sentence naming the file and ending
    with ``remedy``; it is never repaired (a file others could read may have given its
    secret away). The secret never appears in a sentence.

    A new file is written whole under a temporary name and then linked into place, which
    fails when the file exists: two processes making it together end up with one secret.
    """

    path: Path
    label: str
    """What the file is, as a sentence names it: "daemon's token file"."""
    noun: str
    """What it holds: "token"."""
    pattern: re.Pattern[str]
    remedy: str
    error: Callable[[str], Exception]
    max_bytes: int = 1024

    def load_or_create(self, make: Callable[[], str]) -> tuple[str, bool]:
        """The secret in the file, or ``make()``'s, written (the home made ``0700`` when
        missing); whether it was made by this call. Raises ``OSError`` when it cannot be
        written, for the caller to say what to do."""
        secret = self.read()
        if secret is not None:
            return secret, False
        make_private_dir(self.path.parent)
        return self._create(make())

    def read(self) -> str | None:
        """The secret in the file, ``None`` when there is no file."""
        path, label, remedy = self.path, self.label, self.remedy
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as exc:  # ELOOP: a symbolic link; anything else: not readable
            raise self.error(
                f"Cannot use the {label} {path} ({exc.strerror or exc}): it must be a regular "
                f"file readable by this user; {remedy}."
            ) from exc
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):  # before fdopen, which refuses a directory
            os.close(descriptor)
            raise self.error(f"The {label} {path} is not a regular file; {remedy}.")
        with os.fdopen(descriptor, "rb") as file:
            if info.st_uid != os.getuid():
                raise self.error(f"The {label} {path} belongs to another user; {remedy}.")
            mode = stat.S_IMODE(info.st_mode)
            if mode & 0o077:
                raise self.error(
                    f"The {label} {path} can be read by other accounts (mode {mode:04o}), so "
                    f"its {self.noun} may be known; {remedy}."
                )
            data = file.read(self.max_bytes + 1)
        text = data.decode("ascii", "replace").strip()
        if len(data) > self.max_bytes or not self.pattern.fullmatch(text):
            raise self.error(
                f"The {label} {path} does not hold a {self.noun} (empty or damaged); {remedy}."
            )
        return text

    def _create(self, secret: str) -> tuple[str, bool]:
        path = self.path
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
        descriptor = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, PRIVATE_FILE_MODE
        )
        try:
            with os.fdopen(descriptor, "w", encoding="ascii") as file:
                os.fchmod(file.fileno(), PRIVATE_FILE_MODE)  # the umask can only narrow it
                file.write(secret + "\n")
                file.flush()
                os.fsync(file.fileno())
            try:
                os.link(temporary, path)
            except FileExistsError:
                # Another process made it first: use its secret, so both agree.
                existing = self.read()
                if existing is None:  # removed again meanwhile: an odd race, not a loop
                    raise self.error(
                        f"The {self.label} {path} changed while being made; try again."
                    ) from None
                return existing, False
        finally:
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
        return secret, True
