"""Fixtures of the provider tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


@pytest.fixture
def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 that nothing vouches for, and its key."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


NETRC_PASSWORD = "netrc-canary"


@pytest.fixture
def netrc_for_loopback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A ``~/.netrc`` (``HOME`` and ``NETRC`` point at it) holding a login for 127.0.0.1,
    the host of every loopback provider: its password, which must never be sent."""
    netrc = tmp_path / ".netrc"
    netrc.write_text(f"machine 127.0.0.1\nlogin someone\npassword {NETRC_PASSWORD}\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(netrc))
    return NETRC_PASSWORD
