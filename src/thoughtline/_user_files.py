"""Files users hand to thoughtline: the config, plan files and role prompt files.

Each is read whole, so each must be a regular file of bounded size (:data:`MAX_USER_FILE_BYTES`).
``/dev/zero``, a FIFO nobody writes to, or a huge file given by mistake fails at once with
an error that names the path and the limit, instead of reading until memory runs out or
waiting forever. The file is checked after it is opened (``fstat`` on the open
descriptor, so a path swapped between a check and the read cannot slip through), and
never more than the limit and one byte are read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

from thoughtline.errors import ConfigError

KIB: Final = 1024
MIB: Final = 1024 * KIB
MAX_USER_FILE_BYTES: Final = MIB
"""The most a config, plan or role prompt file may hold: 1 MiB."""

# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
_OPEN_FLAGS: Final = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_READ_CHUNK: Final = 64 * KIB


def describe_size(size: int) -> str:
    """``1 MiB``, ``256 KiB`` or ``1,000 bytes``: a limit as people write it."""
    if size >= MIB and size % MIB == 0:
        return f"{size // MIB} MiB"
    if size >= KIB and size % KIB == 0:
        return f"{size // KIB} KiB"
    return f"{size:,} bytes"


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for error messages."""
    for test, kind in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return "not a regular file"


def read_text_file(path: Path, what: str, *, limit: int = MAX_USER_FILE_BYTES) -> str:
    """A file users write (config, plan, role prompt) as text, or a :class:`ConfigError`
    that names the file and says what is wrong with it: missing, a directory or another
    kind of file, larger than ``limit`` bytes, not UTF-8."""
    data = read_bounded_file(path, what, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}: the {what} is not UTF-8 text (byte 0x{data[exc.start]:02x} "
            f"on line {line}); save it as UTF-8."
        ) from None


def read_bounded_file(path: Path, what: str, *, limit: int = MAX_USER_FILE_BYTES) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them, or a
    :class:`ConfigError` naming the path, what the file is for and the limit."""
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
    except IsADirectoryError:
        raise ConfigError(f"{path}: the {what} is a directory, not a file.") from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(f"{path}: cannot read the {what} ({reason}).") from None
    try:
        info = os.fstat(descriptor)
        if stat.S_ISDIR(info.st_mode):
            raise ConfigError(f"{path}: the {what} is a directory, not a file.")
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(
                f"{path}: the {what} is {file_kind(info.st_mode)}, not a regular file; "
                f"give a regular file of at most {describe_size(limit)}."
            )
        if info.st_size > limit:
            raise _too_large(path, what, limit, info.st_size)
        chunks: list[bytes] = []
        size = 0
        # limit + 1: a file that grew after fstat is still caught, and never read whole.
        while size <= limit:
            chunk = os.read(descriptor, min(_READ_CHUNK, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise _too_large(path, what, limit, None)
        return b"".join(chunks)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(f"{path}: cannot read the {what} ({reason}).") from None
    finally:
        os.close(descriptor)


def _too_large(path: Path, what: str, limit: int, size: int | None) -> ConfigError:
    found = "larger than" if size is None else f"{size:,} bytes, more than"
    return ConfigError(
        f"{path}: the {what} is {found} the {describe_size(limit)} a {what} may hold."
    )
