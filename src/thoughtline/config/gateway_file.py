"""``thoughtline gateway add-client`` and ``remove-client``: one ``[gateway.clients.NAME]``
table added to or taken out of the user's config, every other byte of the file kept.

A table is appended at the end of the file (TOML lets a table be defined anywhere once);
a removed one is cut from its header to the next table's header, with the blank lines
before it. The result is parsed
and validated before it replaces the file (a temporary file renamed over it), so a file
the edit would break is left as it was, with the reason.
"""

from __future__ import annotations

import os
import re
import tempfile
import tomllib
from pathlib import Path

from thoughtline._user_files import read_text_file
from thoughtline.config import Config
from thoughtline.config.gateway import CLIENT_NAME, CLIENT_NAME_RULE
from thoughtline.errors import ConfigError, ThoughtlineError
from thoughtline.records import ChainOfThought

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _key_parts(header: str) -> list[str]:
    return [part.strip().strip('"').strip("'") for part in header.split(".")]


def check_client_name(name: str) -> None:
    if not CLIENT_NAME.match(name):
        raise ThoughtlineError("REQUEST_INVALID", f"Client name {name!r}: {CLIENT_NAME_RULE}.")


def add_client(path: Path, name: str, digest: str, mode: ChainOfThought) -> Config:
    """Append ``[gateway.clients.NAME]`` to ``path`` (made when missing)."""
    check_client_name(name)
    text = read_text_file(path, "config file") if path.exists() else ""
    if name in _clients(text, path):
        raise ThoughtlineError(
            "GATEWAY_CLIENT_EXISTS",
            f"{path} already has [gateway.clients.{name}]; remove it first with "
            f"`thoughtline gateway remove-client {name}`, or choose another name.",
        )
    table = f'[gateway.clients.{name}]\ntoken_sha256 = "{digest}"\nchain_of_thought = "{mode}"\n'
    separator = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
    return _replace(path, text + separator + table)


def remove_client(path: Path, name: str) -> Config:
    """Cut ``[gateway.clients.NAME]`` (and its sub-tables) out of ``path``."""
    text = read_text_file(path, "config file") if path.exists() else ""
    if name not in _clients(text, path):
        raise ThoughtlineError(
            "GATEWAY_CLIENT_UNKNOWN",
            f"{path} has no [gateway.clients.{name}] table (`thoughtline gateway "
            "list-clients` shows the clients).",
        )
    kept: list[str] = []
    inside = False
    for line in text.splitlines(keepends=True):
        header = _HEADER.match(line)
        if header is not None:
            parts = _key_parts(header.group(1))
            entering = parts[:3] == ["gateway", "clients", name]
            if entering and not inside:
                # The blank lines that set the table apart go with it.
                while kept and not kept[-1].strip():
                    kept.pop()
                if kept and not kept[-1].endswith("\n"):
                    kept[-1] += "\n"
            inside = entering
        if not inside:
            kept.append(line)
    edited = "".join(kept)
    if name in _clients(edited, path):
        raise ThoughtlineError(
            "CONFIG_WRITE_FAILED",
            f"{path} defines the client {name} other than as a [gateway.clients.{name}] "
            "table (an inline or dotted key); edit the file by hand.",
        )
    return _replace(path, edited)


def _clients(text: str, path: Path) -> dict[str, object]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}.") from exc
    gateway = data.get("gateway", {})
    clients = gateway.get("clients", {}) if isinstance(gateway, dict) else {}
    return clients if isinstance(clients, dict) else {}


def _replace(path: Path, text: str) -> Config:
    """Validate ``text`` as ``path``'s config, then put it in place atomically."""
    from thoughtline.config.validation import ConfigValidator

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path}: the edit would not be valid TOML ({exc}); the file is unchanged."
        ) from exc
    config = ConfigValidator(path).build(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
                out.write(text)
            os.chmod(temporary, mode)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ThoughtlineError(
            "CONFIG_WRITE_FAILED", f"Cannot write {path}: {exc.strerror or exc}."
        ) from None
    return config
