"""``thoughtline serve`` has a token unless told otherwise: generated once, kept 0600 in
THOUGHTLINE_HOME, printed only in the page's address fragment, reused on restart."""

from __future__ import annotations

import os
import pty
import select
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from tests.cli.test_run_cli import cli_env
from tests.support import daemon_url, start_process
from thoughtline.server.daemon_token import TokenFileError, load_or_create_token, token_file
from thoughtline.testing import Simulator

RUN = {"request": "Who may start me?", "provider": "deepseek"}


def _serve(home: Path, environ: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
    )


def _stop(process: subprocess.Popen[str]) -> tuple[str, str]:
    """Stop the daemon; the rest of its stdout, and its stderr."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate()


def _started(process: subprocess.Popen[str]) -> tuple[str, str]:
    """The daemon's URL and the page address it printed on the line after it."""
    url = daemon_url(process)
    assert process.stdout is not None
    return url, process.stdout.readline()


@pytest.mark.slow  # a daemon in a child process
def test_a_daemon_started_without_flags_answers_only_its_generated_token(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    process = _serve(home, environ)
    try:
        url, line = _started(process)
        path = token_file(home)
        token = path.read_text().strip()
        assert line == (f"thoughtline: open {url}/#token={token} (the token is kept in {path})\n")
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(home.stat().st_mode) == 0o700
        with httpx2.Client(base_url=url, timeout=20) as anyone:
            listed = anyone.get("/v1/runs")
            started = anyone.post("/v1/runs", json=RUN)
            wrong = anyone.get("/v1/runs", headers={"Authorization": "Bearer not-the-token"})
        assert (listed.status_code, started.status_code, wrong.status_code) == (401, 401, 401)
        assert listed.json()["error"]["code"] == "UNAUTHORIZED"
        auth = {"Authorization": f"Bearer {token}"}
        with httpx2.Client(base_url=url, headers=auth, timeout=20) as owner:
            assert owner.post("/v1/runs", json=RUN).status_code == 202
            assert len(owner.get("/v1/runs").json()["runs"]) == 1
    finally:
        _, stderr = _stop(process)
    assert token not in stderr

    # Restarted, it keeps the same token: bookmarks and scripts go on working. Its
    # stdout is no terminal (a service's log, say): the line names the file instead.
    process = _serve(home, environ)
    try:
        url, line = _started(process)
        assert line == (
            f"thoughtline: open {url}/#token=... with the token kept in {path} "
            "(shown whole only when it is made, or on a terminal)\n"
        )
        assert token_file(home).read_text().strip() == token
        with httpx2.Client(base_url=url, timeout=20) as owner:
            answered = owner.get("/v1/runs", headers={"Authorization": f"Bearer {token}"})
            assert answered.status_code == 200
            assert owner.get("/v1/runs").status_code == 401
    finally:
        stdout, stderr = _stop(process)
    assert token not in line + stdout + stderr


@pytest.mark.slow
def test_a_reused_token_is_shown_whole_on_a_terminal(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    token = load_or_create_token(home)  # made before: this start reuses it
    controller, terminal = pty.openpty()
    process = start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0"],
        stdout=terminal,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
    )
    os.close(terminal)
    shown = b""
    try:
        while shown.count(b"\n") < 2:
            readable, _, _ = select.select([controller], [], [], 60)
            assert readable, shown
            shown += os.read(controller, 4096)
    finally:
        _stop(process)
        os.close(controller)
    lines = shown.decode().splitlines()
    assert lines[1].endswith(f"/#token={token} (the token is kept in {token_file(home)})")


@pytest.mark.slow  # a daemon in a child process
def test_no_token_serves_every_local_account_and_says_so(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    process = _serve(home, environ, "--no-token")
    try:
        url = daemon_url(process)
        assert process.stderr is not None
        warning = process.stderr.readline()
        with httpx2.Client(base_url=url, timeout=20) as anyone:
            assert anyone.get("/v1/runs").status_code == 200
            assert anyone.post("/v1/runs", json=RUN).status_code == 202
    finally:
        _stop(process)
    assert warning.startswith("thoughtline: warning: serving without a token")
    assert "every account on this machine" in warning and "API keys" in warning
    assert not token_file(home).exists()


@pytest.mark.slow  # a daemon in a child process
def test_a_given_token_is_used_and_neither_stored_nor_printed(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    given = "a-token-of-my-own-0123456789abcdefgh"
    process = _serve(home, {**environ, "THOUGHTLINE_TOKEN": given})
    try:
        url = daemon_url(process)
        with httpx2.Client(base_url=url, timeout=20) as client:
            assert client.get("/v1/runs").status_code == 401
            mine = client.get("/v1/runs", headers={"Authorization": f"Bearer {given}"})
            assert mine.status_code == 200
    finally:
        stdout, stderr = _stop(process)
    assert given not in stdout + stderr
    assert not token_file(home).exists()


STRONG = "Zq3-vL9_xT2pWm8Rk4Nb7Yc1Hd6Gf0Sj5Ae"  # 35 characters of four kinds


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "env", "problem"),
    [
        (("--token", "a"), {}, "The token (--token or THOUGHTLINE_TOKEN) is too weak to serve "
         "on 0.0.0.0, off loopback: it has 1 character, fewer than 32"),
        ((), {"THOUGHTLINE_TOKEN": "abab" * 10}, "The token (--token or THOUGHTLINE_TOKEN) is "
         "too weak to serve on 0.0.0.0, off loopback: it has only 2 distinct characters, "
         "fewer than 10"),
        (("--token", "0123456789" * 3 + "01234"), {}, "The token (--token or "
         "THOUGHTLINE_TOKEN) is too weak to serve on 0.0.0.0, off loopback: it holds about "
         "116 bits, fewer than 128"),
        (("--token", STRONG, "--operator-token", "operator"), {}, "The operator token "
         "(--operator-token or THOUGHTLINE_OPERATOR_TOKEN) is too weak to serve on 0.0.0.0, "
         "off loopback: it has 8 characters, fewer than 32"),
        (("--token", STRONG), {"THOUGHTLINE_OPERATOR_TOKEN": "op" * 20}, "The operator token "
         "(--operator-token or THOUGHTLINE_OPERATOR_TOKEN) is too weak to serve on 0.0.0.0, "
         "off loopback: it has only 2 distinct characters, fewer than 10"),
    ],
    ids=["one-character-flag", "repetitive-variable", "digits-only", "operator-flag",
         "operator-variable"],
)  # fmt: skip
def test_off_loopback_a_weak_token_is_refused_in_one_sentence(
    tmp_path: Path, environ: dict[str, str], args: tuple[str, ...], env: dict[str, str],
    problem: str,
) -> None:  # fmt: skip
    process = _serve(tmp_path / "home", {**environ, **env}, "--host", "0.0.0.0", *args)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 2
    assert stdout == ""
    assert stderr == (
        f"thoughtline: {problem}; use at least 32 random characters, e.g. from python3 -c "
        "'import secrets; print(secrets.token_urlsafe(32))'.\n"
    )
    assert not (tmp_path / "home" / "thoughtline.db").exists()  # refused before anything


@pytest.mark.slow
def test_off_loopback_a_strong_token_serves(
    tmp_path: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    process = _serve(home, environ, "--host", "0.0.0.0", "--token", STRONG)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("thoughtline: serving on http://0.0.0.0:"), line
        port = line.split()[3].rsplit(":", 1)[1]
        answered = None
        for _ in range(200):
            try:
                answered = httpx2.get(
                    f"http://127.0.0.1:{port}/v1/runs",
                    headers={"Authorization": f"Bearer {STRONG}"},
                    timeout=5,
                )
                break
            except httpx2.TransportError:
                time.sleep(0.05)
        assert answered is not None and answered.status_code == 200
    finally:
        stdout, stderr = _stop(process)
    assert STRONG not in line + stdout + stderr


def test_no_token_and_a_token_contradict(tmp_path: Path, environ: dict[str, str]) -> None:
    process = _serve(tmp_path / "home", environ, "--no-token", "--token", "x" * 40)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 2
    assert stdout == ""
    assert "--no-token and --token" in stderr


def test_an_untrustworthy_token_file_stops_serve_without_showing_it(
    tmp_path: Path, environ: dict[str, str]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    secret = "a-token-others-could-read-0123456789ab"
    token_file(home).write_text(secret)
    token_file(home).chmod(0o644)
    process = _serve(home, environ)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 2
    assert stdout == ""
    assert stderr.count("\n") == 1
    assert "can be read by other accounts (mode 0644)" in stderr
    assert str(token_file(home)) in stderr
    assert secret not in stderr


# -- the token file itself ---------------------------------------------------------------


def test_the_file_is_created_private_and_reused(tmp_path: Path) -> None:
    home = tmp_path / "new" / "home"
    token = load_or_create_token(home)
    assert len(token) >= 43
    assert token_file(home).read_text() == token + "\n"
    assert stat.S_IMODE(token_file(home).stat().st_mode) == 0o600
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert load_or_create_token(home) == token
    assert sorted(path.name for path in home.iterdir()) == ["daemon.token"]


def test_a_file_created_meanwhile_by_another_daemon_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two daemons starting together: the second one's link fails and it takes the first
    one's token, so both answer the same."""
    from thoughtline import _private_files

    home = tmp_path / "home"
    home.mkdir()
    first = "the-first-daemons-token-0123456789abcdef"
    real_link = os.link

    def link_after_another(source: str, target: str) -> None:
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(descriptor, first.encode())
        os.close(descriptor)
        real_link(source, target)

    monkeypatch.setattr(_private_files.os, "link", link_after_another)
    assert load_or_create_token(home) == first
    assert sorted(path.name for path in home.iterdir()) == ["daemon.token"]


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda path: path.write_text(""), "does not hold a token"),
        (lambda path: path.write_text("not a token!\n"), "does not hold a token"),
        (lambda path: path.write_bytes(b"A" * 5000), "does not hold a token"),
        (lambda path: path.mkdir(), "regular file"),
        (lambda path: path.symlink_to(path.parent / "elsewhere"), "regular file"),
        (lambda path: os.mkfifo(path), "not a regular file"),
    ],
    ids=["empty", "garbled", "huge", "directory", "symlink", "fifo"],
)
def test_a_file_thoughtline_did_not_write_is_refused(
    tmp_path: Path, make: object, says: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "elsewhere").write_text("a-token-somewhere-else-0123456789abcdef")
    make(token_file(home))  # type: ignore[operator]
    if token_file(home).is_file() and not token_file(home).is_symlink():
        token_file(home).chmod(0o600)
    with pytest.raises(TokenFileError, match=says) as raised:
        load_or_create_token(home)
    assert raised.value.code == "SERVE_TOKEN_FILE_INVALID"
    assert "remove it" in raised.value.message
    assert "0123456789abcdef" not in raised.value.message
