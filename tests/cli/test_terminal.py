"""``thoughtline run`` as people and scripts use it: on a pseudo-terminal (live view, then
the full answer), piped (answers on stdout, progress on stderr, ``| head -1``), and with
the request on stdin. Real processes against the simulator."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import click
import pytest

from tests.cli.test_run_cli import AT, MARKUP, MARKUP_REQUEST, cli_env, thoughtline
from tests.store.builders import make_run
from tests.support import start_process
from thoughtline.cli import cli
from thoughtline.config import Config
from thoughtline.store.opening import open_store
from thoughtline.testing import Fault, SimReasoning, Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

# The frames of rich's "dots" spinner.
SPINNER_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def run_on_pty(
    home: Path, environ: dict[str, str], *args: str, timeout_s: float = 120.0
) -> tuple[int, str]:
    """``thoughtline ARGS`` with stdout and stderr on a 120x40 pseudo-terminal."""
    code, shown, _ = run_with_terminal(home, environ, *args, timeout_s=timeout_s)
    return code, shown


def run_with_terminal(
    home: Path,
    environ: dict[str, str],
    *args: str,
    stdout_piped: bool = False,
    timeout_s: float = 120.0,
) -> tuple[int, str, str]:
    """``thoughtline ARGS`` with stderr (and stdout, unless ``stdout_piped``) on a 120x40
    pseudo-terminal: the exit code, what the terminal received and the piped stdout
    (read at the end: for outputs that fit in a pipe's buffer)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**cli_env(home, environ), "TERM": "xterm-256color"}
    env.pop("COLUMNS", None)
    process = start_process(
        [sys.executable, "-m", "thoughtline.cli", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if stdout_piped else slave,
        stderr=slave,
        env=env,
        cwd=home.parent,
    )
    os.close(slave)
    output = bytearray()
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
        piped = process.stdout.read() if process.stdout is not None else b""
        code = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        if process.stdout is not None:
            process.stdout.close()
        os.close(master)
    return code, output.decode("utf-8", errors="replace"), piped.decode("utf-8")


LONG_ANSWER = "\n".join(
    f"answer line {index:03d}: all of it must be printed" for index in range(120)
)


def test_a_long_reasoning_stream_on_a_terminal_ends_with_the_full_answer(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    # 20k reasoning deltas: the live view must keep up (it once redrew per delta).
    sim.script(
        Transcript(
            reasoning=(SimReasoning(kind="raw", text="thinking, " * 24_000),),
            answer=LONG_ANSWER,
            chunk_chars=12,
        )
    )
    code, shown = run_on_pty(
        home, environ, "run", "Think.", "--provider", "deepseek", "--chain-of-thought", "surface"
    )
    assert code == 0, shown[-2000:]
    # After the live panels (a 12-line tail), the whole answer, in order, then the table.
    final = shown[shown.rindex("answer line 000") :]
    lines = [f"answer line {index:03d}: all of it must be printed" for index in range(120)]
    positions = [final.index(line) for line in lines]
    assert positions == sorted(positions)
    # Surface mode: the whole reasoning, first, then a line that sets the answer apart.
    closing = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown[shown.rindex("reasoning (240,000") :])
    assert closing.count("thinking, ") == 24_000
    assert closing.index("answer\r\n") < closing.index("answer line 000")
    assert closing.rindex("thinking, ") < closing.index("answer\r\n")
    # While the answer streamed, the panel folded the reasoning to one line.
    assert "reasoning ▸ 240,000 characters, printed in full at the end" in shown
    # The closing table follows the answer, and under it what the run cost.
    assert re.search(r"^ *cost \$", re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", final), re.M)
    assert "Traceback" not in shown
    # Streamed characters in the last frame of the panel.
    answer_chars = f"{len(LONG_ANSWER):,}"
    assert re.search(rf"done · \d+\.\d s · reasoning 240,000 chars · answer {answer_chars}", shown)


def test_the_live_panel_moves_while_a_slow_stream_runs(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    # About 1.5 s of paced frames: long enough for several refreshes on any machine (a fast
    # stream may end before the spinner's second frame, which proves nothing either way).
    sim.pace_s = 0.05
    sim.script(
        Transcript(
            reasoning=(SimReasoning(kind="raw", text="slow thought " * 10),),
            answer="a slow answer " * 10,
            chunk_chars=8,
        )
    )
    code, shown = run_on_pty(
        home, environ, "run", "Think.", "--provider", "deepseek", "--chain-of-thought", "surface"
    )
    assert code == 0, shown[-2000:]
    # The spinner moved: more than one of its frames reached the terminal.
    assert len({char for char in shown if char in SPINNER_FRAMES}) >= 2
    # Elapsed time and streamed characters, live and then in the last frame of the panel.
    assert re.search(r"running · \d+\.\d s", shown)
    assert re.search(r"done · \d+\.\d s · reasoning 130 chars · answer 140", shown)


def test_an_answer_cut_off_by_the_token_limit_says_so(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(Transcript(answer="The beginning of a long", finish="length"))
    code, shown = run_on_pty(home, environ, "run", "Write a lot.")
    assert code == 0, shown
    assert "The answer was cut off: the model reached its output token limit (finish = length)" in (
        shown
    )
    piped = thoughtline(home, environ, "run", "Write a lot.")
    assert piped.stdout == "The beginning of a long\n"
    assert "task assistant: ✂ The answer was cut off" in piped.stderr
    status = thoughtline(home, environ, "status")
    assert "The answer was cut off" in status.stdout


def test_markup_like_model_text_is_printed_verbatim_on_a_terminal(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(
        Transcript(
            reasoning=(SimReasoning(kind="summary", text=f"Thinking {MARKUP} <script>x</script>"),),
            answer=f"Answer {MARKUP} <script>alert(1)</script>",
        )
    )
    code, shown = run_on_pty(home, environ, "run", MARKUP_REQUEST, "--chain-of-thought", "surface")
    assert code == 0, shown
    assert f"Answer {MARKUP} <script>alert(1)</script>" in shown
    assert "Traceback" not in shown and "MarkupError" not in shown


def test_piped_answer_streams_to_stdout_and_head_ends_it_quietly(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.pace_s = 0.01
    sim.script(Transcript(answer="first line\n" + "more text " * 2000, chunk_chars=20))
    command = (
        f"'{sys.executable}' -m thoughtline.cli run 'Go.' | head -1; "
        'echo "exit=${PIPESTATUS[0]}" >&2'
    )
    result = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
        timeout=120,
        check=False,
    )
    assert result.stdout == "first line\n"
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr
    assert result.stderr.splitlines()[-1] == "exit=141"
    # The run stopped when its reader went away, and says so in the store.
    snapshot = json.loads(thoughtline(home, environ, "status", "--json").stdout)
    assert snapshot["status"] == "cancelled"
    assert snapshot["tasks"][0]["output"].startswith("first line\n")


def test_the_request_can_come_from_stdin(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    request = "Review this diff:\n--- a\n+++ b\n[bold]not markup[/bold]"
    for args in (["run", "-", "--json"], ["run", "--json"]):
        result = thoughtline(home, environ, *args, stdin_text=request + "\n")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["request"] == request
    empty = thoughtline(home, environ, "run", "-", stdin_text="  \n")
    assert empty.returncode == 2
    assert "The request on stdin is empty" in empty.stderr


def _shell(home: Path, environ: dict[str, str], line: str) -> subprocess.CompletedProcess[str]:
    """``line`` run by sh in the home's parent, ``thoughtline`` being this interpreter's."""
    env = {**cli_env(home, environ), "THOUGHTLINE": f"{sys.executable} -m thoughtline.cli"}
    return subprocess.run(
        ["sh", "-c", line],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=home.parent,
        timeout=60,
        check=False,
    )


def test_a_request_and_piped_text_are_joined_as_llm_joins_them(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home.mkdir(parents=True)
    # The command: the file is no longer dropped.
    from_file = _shell(
        home, environ, 'echo SECRET > n.txt; $THOUGHTLINE run "Summarize this" --json < n.txt'
    )
    assert from_file.returncode == 0, from_file.stderr
    assert json.loads(from_file.stdout)["request"] == "Summarize this\n\nSECRET"
    assert "SECRET" in json.dumps(sim.requests_for("anthropic")[-1].body)
    piped = _shell(home, environ, 'printf "a\\nb\\n" | $THOUGHTLINE run "Summarize this" --json')
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["request"] == "Summarize this\n\na\nb"
    assert piped.stderr == ""
    # Nothing on stdin (</dev/null, an empty file): the request alone, and no word about it.
    alone = _shell(
        home, environ, ': > empty.txt; $THOUGHTLINE run "Summarize this" --json < empty.txt'
    )
    assert alone.returncode == 0, alone.stderr
    assert json.loads(alone.stdout)["request"] == "Summarize this"
    assert alone.stderr == ""
    # The request on stdin alone keeps working.
    only = _shell(home, environ, "$THOUGHTLINE run --json < n.txt")
    assert only.returncode == 0, only.stderr
    assert json.loads(only.stdout)["request"] == "SECRET"


def test_an_open_silent_stdin_does_not_hold_the_run(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    """A test runner or CI job hands its children a pipe nobody writes to or closes."""
    for args, code in ((["run", "Summarize this", "--json"], 0), (["run", "--json"], 2)):
        process = start_process(
            [sys.executable, "-m", "thoughtline.cli", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=cli_env(home, environ),
            cwd=home.parent,
        )
        assert process.stdout is not None and process.stderr is not None
        assert process.stdin is not None
        try:
            out = process.stdout.read()  # ends when the process does; stdin stays open
            err = process.stderr.read()
            assert process.wait(timeout=60) == code, err
        finally:
            process.stdin.close()
            process.kill()
            process.wait()
        if code == 0:
            assert json.loads(out)["request"] == "Summarize this"
            assert (
                err == "thoughtline: nothing arrived on stdin within 1 s; the request goes alone.\n"
            )
        else:
            assert err == (
                "thoughtline: Nothing arrived on stdin within 1 s; give a REQUEST, or '-' to wait "
                "for stdin.\n"
            )


def test_stdin_that_is_not_utf8_is_one_sentence(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    home.mkdir(parents=True)
    for line in (
        'printf "ok \\377\\376" | $THOUGHTLINE run "Summarize this"',
        'printf "ok \\377\\376" | $THOUGHTLINE run -',
    ):
        result = _shell(home, environ, line)
        assert result.returncode == 2
        assert result.stdout == ""
        assert result.stderr == (
            "thoughtline: stdin is not valid UTF-8 text (byte 4 is not); pipe UTF-8 text, "
            "e.g. through iconv.\n"
        )
    assert sim.requests_for("anthropic") == []


def test_run_ids_by_hand_full_ids_short_ids_prefixes_and_latest(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    first = json.loads(thoughtline(home, environ, "run", "one", "--json").stdout)
    second = json.loads(thoughtline(home, environ, "run", "two", "--json").stdout)
    # The snapshot keeps the whole id and adds the short one: its random start.
    for snapshot in (first, second):
        assert re.fullmatch(r"[a-z][0-9a-z]{7}", snapshot["short_id"])
        assert snapshot["id"].startswith(f"run_{snapshot['short_id']}")
    latest = json.loads(thoughtline(home, environ, "status", "latest", "--json").stdout)
    assert latest["id"] == second["id"]
    # Every form names the run: whole, short, a start of the short id, with run_ or not.
    for given in (
        first["id"],
        first["short_id"],
        first["short_id"][:5],
        f"run_{first['short_id']}",
    ):
        found = json.loads(thoughtline(home, environ, "status", given, "--json").stdout)
        assert found["id"] == first["id"], given
    trace = thoughtline(home, environ, "trace", second["short_id"], "--json")
    assert trace.returncode == 0, trace.stderr
    assert {event["run_id"] for event in json.loads(trace.stdout)} == {second["id"]}
    assert thoughtline(home, environ, "trace", "latest", "--json").stdout == trace.stdout
    # The short id is what people see: progress lines, the closing table, runs, status.
    piped = thoughtline(home, environ, "run", "three")
    assert piped.returncode == 0, piped.stderr
    third = json.loads(thoughtline(home, environ, "status", "--json").stdout)
    progress = piped.stderr.splitlines()
    assert progress[0].startswith(f"run {third['short_id']} started: ")
    assert f"run {third['short_id']} completed" in progress
    assert f"run {third['short_id']} · completed" in piped.stderr
    assert third["id"] not in piped.stderr
    listed = thoughtline(home, {**environ, "COLUMNS": "80"}, "runs")
    assert listed.returncode == 0, listed.stderr
    rows = listed.stdout.splitlines()[1:]
    assert [row.split()[0] for row in rows[:3]] == [
        third["short_id"],
        second["short_id"],
        first["short_id"],
    ]
    status = thoughtline(home, environ, "status", third["short_id"])
    assert status.stdout.startswith(f"{third['short_id']} completed")


def test_an_ambiguous_short_id_lists_the_candidates(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    """Two runs whose short ids start alike (written as such ids are made, with the
    start chosen): the start they share names neither."""
    store = open_store(Config(path=None), {"THOUGHTLINE_HOME": str(home)})
    try:
        for run_id in ("run_kq3x9m2a20261201232642000001", "run_kq3x7h4b20261201232643000002"):
            store.create_run(make_run(run_id, status="completed", finished_at=AT))
    finally:
        store.close()
    ambiguous = thoughtline(home, environ, "status", "kq3x")
    assert ambiguous.returncode == 2
    assert ambiguous.stdout == ""
    assert ambiguous.stderr == (
        "thoughtline: 'kq3x' matches 2 runs: kq3x9m2a, kq3x7h4b. Give more of the id.\n"
    )
    one = thoughtline(home, environ, "status", "kq3x7", "--json")
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["short_id"] == "kq3x7h4b"
    # Ids made before short ids stay valid, whole or by their start; they are their own
    # short id.
    old = "run_20261201232642abcdef0123456789"
    store = open_store(Config(path=None), {"THOUGHTLINE_HOME": str(home)})
    try:
        store.create_run(make_run(old, status="completed", finished_at=AT))
    finally:
        store.close()
    for given in (old, old[:-4], "2026120123264"):
        found = thoughtline(home, environ, "status", given, "--json")
        assert found.returncode == 0, (given, found.stderr)
        assert json.loads(found.stdout)["short_id"] == old


def run_id_parameters() -> list[tuple[str, click.Parameter]]:
    """Every parameter of every command that takes a run id (named like one); a new one
    is checked below without being listed."""
    context = click.Context(cli)
    found: list[tuple[str, click.Parameter]] = []
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        assert command is not None
        for param in command.params:
            if re.search(r"(^|_)(ids?|conversation|continues|session)$", param.name or ""):
                found.append((name, param))
    return found


@pytest.mark.slow
def test_every_run_id_argument_refuses_a_shared_start_with_the_candidates(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    store = open_store(Config(path=None), {"THOUGHTLINE_HOME": str(home)})
    try:
        for run_id in ("run_kq3x9m2a20261201232642000001", "run_kq3x7h4b20261201232643000002"):
            store.create_run(make_run(run_id, status="completed", finished_at=AT))
    finally:
        store.close()
    parameters = run_id_parameters()
    assert {(name, param.name) for name, param in parameters} == {
        ("status", "run_id"),
        ("trace", "run_id"),
        ("export", "run_id"),
        ("runs", "conversation"),
        ("run", "continues"),
        ("chat", "continues"),
    }
    for name, param in parameters:
        given = ["kq3x"] if isinstance(param, click.Argument) else [param.opts[-1], "kq3x"]
        args = [name, *given, *(["x"] if name == "run" else [])]
        if name == "chat":  # a terminal on stdin and stdout, or it says it needs one
            code, shown = chat_on_pty(home, environ, *args)
            assert code == 2, shown
            assert shown.replace("\r\n", "\n") == f"thoughtline: {AMBIGUOUS_CLI}\n", shown
            continue
        refused = thoughtline(home, environ, *args)
        assert (refused.returncode, refused.stdout) == (2, ""), (args, refused.stderr)
        assert refused.stderr == f"thoughtline: {AMBIGUOUS_CLI}\n", args
    assert sim.requests == []


AMBIGUOUS_CLI = "'kq3x' matches 2 runs: kq3x9m2a, kq3x7h4b. Give more of the id."


def chat_on_pty(home: Path, environ: dict[str, str], *args: str) -> tuple[int, str]:
    """``thoughtline ARGS`` with stdin, stdout and stderr on a pseudo-terminal, for a
    command that ends without reading a line: its exit code and what it printed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**cli_env(home, environ), "TERM": "dumb", "NO_COLOR": "1"}
    process = start_process(
        [sys.executable, "-m", "thoughtline.cli", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        cwd=home.parent,
    )
    os.close(slave)
    output = bytearray()
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60.0)
            if not ready:
                break  # a prompt waiting for a line: the kill below ends it
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            output += chunk
    finally:
        if process.poll() is None:
            process.kill()
        code = process.wait(timeout=30)
        os.close(master)
    return code, output.decode("utf-8", errors="replace")


def test_an_empty_reasoning_layer_says_why(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    snapshot = json.loads(
        thoughtline(home, environ, "run", "x", "--chain-of-thought", "surface", "--json").stdout
    )
    result = thoughtline(home, environ, "trace", snapshot["id"], "--layer", "reasoning", "--json")
    assert result.returncode == 0
    assert result.stdout == "[]\n"
    assert result.stderr == (
        f"thoughtline: The reasoning layer of run {snapshot['short_id']} is empty: its tasks ran with "
        "chain_of_thought=surface, which does not record reasoning (surface shows the "
        "reasoning with the answer but keeps it out of the trace); telemetry_only and "
        "surface_and_telemetry do.\n"
    )


# An answer that would drive the terminal: write the clipboard (OSC 52), set the window
# title (OSC 0), hide a link (OSC 8), clear the screen, recolour, an 8-bit CSI, a bidi
# override. Each on its own short line, so no view wraps a sequence.
HOSTILE = (
    "clip \x1b]52;c;SGVsbG8=\x07\n"
    "title \x1b]0;pwned\x07\n"
    "link \x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\\n"
    "clear \x1b[2J\n"
    "colour \x1b[31mred\x1b[0m\n"
    "csi \x9b2J \u202eevil"
)
HOSTILE_REQUEST = "Explain \x1b]0;asked\x07 this"
MODEL_SEQUENCES = ("\x1b]52;", "\x1b]0;", "\x1b]8;", "\x1b[2J", "\x1b[31mred", "\x9b", "\u202e")
SHOWN = (
    "clip ␛]52;c;SGVsbG8=␇",
    "title ␛]0;pwned␇",
    "link ␛]8;;https://evil.example/␛\\click␛]8;;␛\\",
    "clear ␛[2J",
    "colour ␛[31mred␛[0m",
    "csi \\x9b2J \\u202eevil",
)


def assert_shown_not_obeyed(shown: str, *visible: str) -> None:
    for sequence in MODEL_SEQUENCES:
        assert sequence not in shown, (sequence, shown[-3000:])
    for text in visible:
        assert text in shown, (text, shown[-3000:])


def test_model_text_never_drives_the_terminal(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(
        Transcript(
            reasoning=(SimReasoning(kind="summary", text=f"Thinking.\n{HOSTILE}"),),
            answer=HOSTILE,
        )
    )
    code, shown = run_on_pty(
        home, environ, "run", HOSTILE_REQUEST, "--chain-of-thought", "surface_and_telemetry"
    )
    assert code == 0, shown[-3000:]
    # The live panel and the final answer both show it; neither sends it.
    assert_shown_not_obeyed(shown, *SHOWN)
    assert shown.count("title ␛]0;pwned␇") >= 2
    code, status = run_on_pty(home, environ, "status")
    assert code == 0, status
    assert_shown_not_obeyed(status, *SHOWN, "request: Explain ␛]0;asked␇ this")
    code, runs = run_on_pty(home, environ, "runs")
    assert code == 0, runs
    assert_shown_not_obeyed(runs, "␛]0;asked␇")  # the cell wraps between words
    # The recorded reasoning is shown as text, every control shown as a symbol.
    code, trace = run_on_pty(home, environ, "trace", "latest")
    assert code == 0, trace
    assert_shown_not_obeyed(trace, *SHOWN, '"Explain ␛]0;asked␇ this"')


def test_piped_answers_and_json_keep_the_model_text_exactly(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.default_transcript = Transcript(
        reasoning=(SimReasoning(kind="summary", text=HOSTILE),), answer=HOSTILE
    )
    piped = thoughtline(home, environ, "run", HOSTILE_REQUEST)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == HOSTILE + "\n"
    as_json = thoughtline(home, environ, "run", HOSTILE_REQUEST, "--json")
    assert json.loads(as_json.stdout)["tasks"][0]["output"] == HOSTILE
    assert "\x9b2J \u202eevil" in as_json.stdout  # raw, as JSON writes them
    status = thoughtline(home, environ, "status", "--json")
    assert json.loads(status.stdout)["request"] == HOSTILE_REQUEST
    # --json on a terminal: the same value, with nothing the terminal would obey.
    code, shown = run_on_pty(home, environ, "run", HOSTILE_REQUEST, "--json")
    assert code == 0, shown
    assert json.loads(shown)["tasks"][0]["output"] == HOSTILE
    assert_shown_not_obeyed(shown, "\\u009b2J \\u202eevil")
    # stdout piped, stderr a terminal: the answer exact, the reasoning shown.
    code, terminal, stdout = run_with_terminal(
        home, environ, "run", HOSTILE_REQUEST, "--chain-of-thought", "surface", stdout_piped=True
    )
    assert code == 0, terminal
    assert stdout == HOSTILE + "\n"
    assert_shown_not_obeyed(terminal, "reasoning (assistant):", *SHOWN)


def test_error_messages_on_a_terminal_are_shown_not_obeyed(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.inject(Fault.http_error(400, "bad request \x1b]0;pwned\x07 \x1b[2J"))
    code, shown = run_on_pty(home, environ, "run", "x")
    assert code == 1, shown
    assert_shown_not_obeyed(shown, "bad request ␛]0;pwned␇ ␛[2J")
    # The sentence after the table, on stderr, as well as the panel and the final print.
    assert re.search(r"thoughtline: task assistant failed: \S+: .*bad request ␛]0;pwned␇", shown)
    # A sentence quoting what the user gave (here a plan file's name).
    code, shown = run_on_pty(home, environ, "run", "x", "--plan", "\x1b]0;pwned\x07")
    assert code == 2, shown
    assert_shown_not_obeyed(shown, "thoughtline: ␛]0;pwned␇")
