"""Files under THOUGHTLINE_HOME are private to their owner, whatever the umask.

They hold answers, displayed reasoning and (opt-in) raw provider traffic. A directory
thoughtline creates is ``0700``; the database, its ``-wal``/``-shm`` files and caches are
``0600``. A directory that already exists is left as its owner set it (a user may share
a home on purpose); files thoughtline owns are tightened whenever they are opened.
"""

from __future__ import annotations

import os
import stat
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
