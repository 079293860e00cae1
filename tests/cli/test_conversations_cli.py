"""Conversations on the command line, as people and scripts have them: ``run -c`` and
``run --continues`` as real processes, ``runs --conversation``, and ``chat`` typed into a
real pseudo-terminal (its controlling terminal, so Ctrl-C is the terminal's SIGINT),
all against the provider simulator. Turn 1's reasoning carries a canary: in the default
mode (hidden) it is in no output, no byte of the store and no later request."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import signal
import sqlite3
import struct
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_run_cli import cli_env, start_thoughtline, thoughtline
from tests.runtime.test_disclosure_e2e import all_bytes_under
from tests.support import start_process
from thoughtline.records import short_run_id
from thoughtline.testing import Fault, SimReasoning, Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

CANARY = "CANARY-CHAT-REASONING-41d7"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def reasoned(answer: str) -> Transcript:
    """An answer after reasoning that holds the canary (sent whole, in one chunk)."""
    return Transcript(
        reasoning=(SimReasoning(kind="raw", text=f"Weighing it; {CANARY} is the secret."),),
        answer=answer,
        reasoning_tokens=16,
        chunk_chars=4096,
    )


def sent(sim: Simulator) -> list[str]:
    """Every request body the simulator received, as JSON text, in order."""
    return [json.dumps(request.body) for request in sim.requests]


def query(home: Path, sql: str) -> list[sqlite3.Row]:
    database = home / "thoughtline.db"
    if not database.exists():
        return []
    try:
        with sqlite3.connect(database, timeout=5) as connection:
            connection.row_factory = sqlite3.Row
            return connection.execute(sql).fetchall()
    except sqlite3.OperationalError:  # not created yet
        return []


def wait_for_row(home: Path, sql: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if query(home, sql):
            return
        time.sleep(0.02)
    raise AssertionError(f"never true: {sql}")


# -- run -c / --continues --------------------------------------------------------------


def test_run_continue_sends_the_first_turn_and_never_its_hidden_reasoning(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script_turns(reasoned("First answer BRAVO-1."), Transcript(answer="Second answer DELTA-2."))
    first = thoughtline(home, environ, "run", "First question ALPHA-1", "--provider", "deepseek")
    assert first.returncode == 0, first.stderr
    # -c: the latest run's tasks again (deepseek), with its conversation so far.
    second = thoughtline(home, environ, "run", "-c", "Second question CHARLIE-2")
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Second answer DELTA-2.\n"
    bodies = sent(sim)
    assert len(bodies) == 2
    for text in ("First question ALPHA-1", "First answer BRAVO-1.", "Second question CHARLIE-2"):
        assert text in bodies[1]
    assert "First answer BRAVO-1." not in bodies[0]

    second_snapshot = json.loads(thoughtline(home, environ, "status", "--json", "latest").stdout)
    runs = json.loads(thoughtline(home, environ, "runs", "--json").stdout)
    first_id = runs[1]["id"]
    assert second_snapshot["continues"] == first_id
    assert second_snapshot["conversation_id"] == first_id
    [task] = second_snapshot["tasks"]
    assert task["executor"] == "provider:deepseek:deepseek-reasoner"
    assert (task["history"]["turns"], task["history"]["reasoning_turns"]) == (1, 0)

    # The conversation, oldest first, by any name of it.
    second_id = second_snapshot["id"]
    for name in ("latest", first_id, second_id, second_id.removeprefix("run_")[:-3]):
        listed = thoughtline(home, environ, "runs", "--conversation", name, "--json")
        assert listed.returncode == 0, listed.stderr
        conversation = json.loads(listed.stdout)
        assert [run["id"] for run in conversation] == [first_id, second_id], name
        assert [run["continues"] for run in conversation] == [None, first_id]

    # The table marks the continuation and keeps to 80 columns.
    table = thoughtline(home, {**environ, "COLUMNS": "80"}, "runs")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    [marked] = [line for line in lines if "↳" in line and short_run_id(second_id) in line]
    assert marked.startswith(short_run_id(second_id))
    assert "↳ continues an earlier run: thoughtline runs --conversation RUN_ID" in table.stdout

    # Hidden (the default): the canary reached the process and went no further.
    outputs = [first, second, table]
    assert all(CANARY not in result.stdout + result.stderr for result in outputs)
    assert CANARY not in bodies[1]
    assert CANARY.encode() not in all_bytes_under(home)


def test_run_continues_a_given_run_with_the_flags_winning(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    one = json.loads(
        thoughtline(
            home, environ, "run", "one", "--provider", "deepseek", "--role", "reviewer", "--json"
        ).stdout
    )
    json.loads(thoughtline(home, environ, "run", "unrelated", "--json").stdout)
    # An older run by prefix; a flag wins over what the continued task had.
    result = thoughtline(
        home,
        environ,
        "run",
        "--continues",
        one["id"].removeprefix("run_")[:-3],
        "two",
        "--effort",
        "high",
        "--max-output-tokens",
        "321",
        "--json",
    )
    assert result.returncode == 0, result.stderr
    two = json.loads(result.stdout)
    assert (two["continues"], two["conversation_id"]) == (one["id"], one["id"])
    [task] = two["tasks"]
    assert (task["name"], task["provider"], task["effort"]) == ("reviewer", "deepseek", "high")
    assert task["generation"]["max_output_tokens"] == 321
    assert "one" in sent(sim)[-1] and "unrelated" not in sent(sim)[-1]


def test_run_continue_keeps_a_chosen_mode_until_a_flag_changes_it(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(reasoned("An answer."))
    shown = thoughtline(
        home, environ, "run", "one", "--provider", "deepseek", "--chain-of-thought", "surface"
    )
    assert shown.returncode == 0, shown.stderr
    assert CANARY in shown.stderr  # surface: displayed (piped: on stderr)
    kept = json.loads(thoughtline(home, environ, "run", "-c", "two", "--json").stdout)
    assert kept["chain_of_thought"] == "surface"
    assert CANARY in kept["tasks"][0]["reasoning"]
    changed = thoughtline(home, environ, "run", "-c", "three", "--chain-of-thought", "hidden")
    assert changed.returncode == 0, changed.stderr
    assert CANARY not in changed.stdout + changed.stderr
    last = json.loads(thoughtline(home, environ, "status", "--json").stdout)
    assert (last["chain_of_thought"], last["continues"]) == ("hidden", kept["id"])
    assert last["tasks"][0]["history"]["turns"] == 2


def test_run_continue_refusals_say_one_sentence_and_store_nothing(
    home: Path, sim: Simulator, environ: dict[str, str], tmp_path: Path
) -> None:
    nothing_yet = thoughtline(home, environ, "run", "-c", "hello")
    assert (nothing_yet.returncode, nothing_yet.stdout) == (2, "")
    assert nothing_yet.stderr == 'thoughtline: No runs yet. Start one with: thoughtline run "..."\n'

    # A run that only prepared its prompts keeps no turn to continue from.
    prepared = json.loads(
        thoughtline(home, environ, "run", "x", "--worker-backend", "inline", "--json").stdout
    )
    assert prepared["status"] == "completed_prepare_only"
    plan = tmp_path / "plan.toml"
    plan.write_text('[[tasks]]\nname = "a"\nrole = "engineer"\n', encoding="utf-8")
    refusals = {
        ("run", "--continues", "run_nope", "y"): (
            "thoughtline: No run 'run_nope' in this store. List runs with: thoughtline runs\n"
        ),
        ("run", "-c", "y"): (
            f"thoughtline: Run {prepared['id']} keeps no conversation history (the answer "
            "retention removed it, no task of it reached a model, or it ran before thoughtline "
            "kept conversations); start a new run instead.\n"
        ),
        ("run", "-c", "--continues", "latest", "y"): (
            "Error: Give -c (continue the latest run) or --continues RUN_ID, not both.\n"
        ),
        ("run", "-c", "--plan", str(plan), "y"): (
            "Error: --plan starts a new conversation; do not combine it with -c or --continues.\n"
        ),
        ("run", "-c", ""): "Error: Give a REQUEST (or a --plan file, or the request on stdin).\n",
        ("runs", "--conversation", "nope"): (
            "thoughtline: No conversation or run 'nope' in this store. "
            "List runs with: thoughtline runs\n"
        ),
    }
    for args, said in refusals.items():
        result = thoughtline(home, environ, *args)
        assert (result.returncode, result.stdout) == (2, ""), args
        assert result.stderr.endswith(said), (args, result.stderr)
        assert "Traceback" not in result.stderr
    listed = json.loads(thoughtline(home, environ, "runs", "--json").stdout)
    assert [run["id"] for run in listed] == [prepared["id"]]


def test_run_continue_refuses_a_run_that_is_still_running(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(Transcript(answer="never finished " * 20, chunk_chars=8))
    sim.inject(Fault.stall(at="mid_answer"))
    running = start_thoughtline(home, environ, "run", "slow")
    try:
        wait_for_row(home, "select 1 from run_events where type = 'answer.delta'")
        [row] = query(home, "select id from runs")
        result = thoughtline(home, environ, "run", "--continues", row["id"], "next")
        assert (result.returncode, result.stdout) == (2, "")
        assert result.stderr.startswith(f"thoughtline: Run {row['id']} is still running;")
        assert len(result.stderr.splitlines()) == 1
        assert [r["id"] for r in query(home, "select id from runs")] == [row["id"]]
    finally:
        running.send_signal(signal.SIGINT)
        running.communicate(timeout=60)
    assert running.returncode == 130


# -- chat on a pseudo-terminal -----------------------------------------------------------

# Makes the pseudo-terminal the controlling terminal of the new session, then becomes
# `python -m thoughtline.cli chat ...`: the terminal's Ctrl-C is then a real SIGINT.
_ON_TERMINAL = (
    "import fcntl, os, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
    "os.execv(sys.executable, [sys.executable, '-m', 'thoughtline.cli', *sys.argv[1:]])"
)
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-B]|\x1b[=>]|\r")


class Terminal:
    """``thoughtline ARGS`` on a 100x40 pseudo-terminal: keys in, the screen's text out."""

    def __init__(self, home: Path, environ: dict[str, str], *args: str) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
        env = {**cli_env(home, environ), "TERM": "xterm-256color"}
        env.pop("COLUMNS", None)
        self.process = start_process(
            [sys.executable, "-c", _ON_TERMINAL, *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=home.parent,
            new_session=True,
        )
        os.close(slave)
        self.raw = bytearray()
        self.seen = 0  # how much of the text expect() has matched past

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw.decode("utf-8", errors="replace"))

    def _read(self, wait_s: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], wait_s)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.raw += chunk
        return bool(chunk)

    def expect(self, pattern: str, timeout_s: float = 60.0) -> str:
        """Read until ``pattern`` (a regex) shows after what was matched before; returns
        the text from there to the end of the match."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = re.compile(pattern).search(self.text, self.seen)
            if found:
                start, self.seen = self.seen, found.end()
                return self.text[start : found.end()]
            if time.monotonic() > deadline or not self._read(0.2):
                raise AssertionError(f"never shown: {pattern!r}\n{self.text[-3000:]}")

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def finish(self, timeout_s: float = 60.0) -> int:
        """Read to the end; the exit code."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self._read(0.2):
            if self.process.poll() is not None and not select.select([self.master], [], [], 0)[0]:
                break
        return self.process.wait(timeout=timeout_s)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.master)


PROMPT = "\u203a "


def stored_runs(home: Path) -> list[dict[str, Any]]:
    rows = query(
        home,
        "select id, status, request, conversation_id, continues from runs "
        "order by created_at, rowid",
    )
    return [dict(row) for row in rows]


def test_chat_turns_continue_each_other_ctrl_c_cancels_a_turn_and_ctrl_d_ends(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script_turns(
        reasoned("Answer one BRAVO-1."),
        Transcript(answer="Answer two DELTA-2."),
        Transcript(answer="Answer three, never finished " * 10, chunk_chars=8),
        Transcript(answer="Answer four HOTEL-4."),
    )
    terminal = Terminal(home, environ, "chat", "--provider", "deepseek")
    try:
        terminal.expect("a new conversation")
        terminal.expect(PROMPT)
        terminal.type("Question one ALPHA-1\r")
        terminal.expect("Answer one BRAVO-1.")
        terminal.expect(PROMPT)
        terminal.type("Question two CHARLIE-2\r")
        terminal.expect("Answer two DELTA-2.")
        terminal.expect(PROMPT)

        # A slow turn: its answer stops half way; Ctrl-C cancels it, the chat goes on.
        sim.inject(Fault.stall(at="mid_answer"))
        terminal.type("Question three ECHO-3\r")
        wait_for_row(
            home,
            "select 1 from runs r join run_events e on e.run_id = r.id "
            "where r.status = 'running' and e.type = 'answer.delta'",
        )
        terminal.type("\x03")
        said = terminal.expect("the next line continues from the turn before it.")
        assert "turn cancelled; what arrived is kept" in said
        terminal.expect(PROMPT)

        terminal.type("Question four GOLF-4\r")
        terminal.expect("Answer four HOTEL-4.")
        terminal.expect(PROMPT)
        terminal.type("\x04")  # Ctrl-D
        code = terminal.finish()
    finally:
        terminal.close()
    assert code == 0, terminal.text[-3000:]
    assert "Traceback" not in terminal.text

    bodies = sent(sim)
    assert len(bodies) == 4
    # Turn two carries turn one's prompt and answer; turn four goes on from turn two,
    # without the cancelled turn.
    for text in ("Question one ALPHA-1", "Answer one BRAVO-1."):
        assert text in bodies[1]
    for text in ("Question one ALPHA-1", "Answer one BRAVO-1.", "Answer two DELTA-2."):
        assert text in bodies[3]
    assert "Question three ECHO-3" not in bodies[3]

    runs = stored_runs(home)
    assert [run["status"] for run in runs] == ["completed", "completed", "cancelled", "completed"]
    ids = [run["id"] for run in runs]
    assert [run["continues"] for run in runs] == [None, ids[0], ids[1], ids[1]]
    assert {run["conversation_id"] for run in runs} == {ids[0]}

    # Hidden: the canary is on no screen, in no byte stored, in no later request.
    assert CANARY not in terminal.text
    assert not any(CANARY in body for body in bodies)
    assert CANARY.encode() not in all_bytes_under(home)


def test_chat_resumes_a_conversation_and_ends_on_exit_or_ctrl_c_at_the_prompt(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script_turns(Transcript(answer="Kept answer KILO."), Transcript(answer="Resumed LIMA."))
    (home.parent / "thoughtline.toml").write_text("[orchestration]\nmax_request_bytes = 40\n")
    terminal = Terminal(home, environ, "chat")
    try:
        terminal.expect(PROMPT)
        terminal.type("Kept question JULIET\r")
        terminal.expect("Kept answer KILO.")
        terminal.expect(PROMPT)
        # A line the runtime refuses is one sentence; the chat goes on, nothing stored.
        terminal.type("A line longer than the forty bytes this config allows\r")
        terminal.expect(r"thoughtline: The request is 53 bytes of UTF-8 text, more than")
        terminal.expect(PROMPT)
        assert len(stored_runs(home)) == 1
        terminal.type("/exit\r")
        assert terminal.finish() == 0, terminal.text[-3000:]
    finally:
        terminal.close()
    first_id = stored_runs(home)[0]["id"]

    terminal = Terminal(home, environ, "chat", "-c")
    try:
        terminal.expect(f"continuing run {first_id}")
        terminal.expect(PROMPT)
        terminal.type("Resumed question MIKE\r")
        terminal.expect("Resumed LIMA.")
        terminal.expect(PROMPT)
        # Readline prints the prompt before it waits for a key; a Ctrl-C in that instant
        # is lost to it (a person cannot press that fast, a test can): give it a moment.
        time.sleep(0.3)
        terminal.type("\x03")  # Ctrl-C at the prompt
        assert terminal.finish() == 0, terminal.text[-3000:]
    finally:
        terminal.close()
    assert "Traceback" not in terminal.text
    assert "Kept question JULIET" in sent(sim)[-1] and "Kept answer KILO." in sent(sim)[-1]
    runs = stored_runs(home)
    assert [run["continues"] for run in runs] == [None, first_id]


def test_chat_refuses_a_script_and_a_run_it_cannot_resume(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    piped = thoughtline(home, environ, "chat", stdin_text="hello\n")
    assert (piped.returncode, piped.stdout) == (2, "")
    assert piped.stderr == (
        "thoughtline: thoughtline chat needs a terminal on stdin and stdout; from a script, "
        'continue a conversation with: thoughtline run -c "..." (or --continues RUN_ID).\n'
    )
    assert not home.exists() or not any(home.iterdir())  # nothing stored, not even a store
    terminal = Terminal(home, environ, "chat", "--continues", "run_nope")
    try:
        code = terminal.finish()
    finally:
        terminal.close()
    assert code == 2
    assert "No run 'run_nope' in this store." in terminal.text
    assert PROMPT not in terminal.text  # refused before the first prompt
    assert stored_runs(home) == []


def test_chat_takes_runs_short_flags_and_keeps_its_commands_to_itself(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script_turns(Transcript(answer="Two lines read NOVEMBER."))
    terminal = Terminal(home, environ, "chat", "-p", "deepseek", "-r", "reviewer", "-e", "low")
    try:
        terminal.expect(PROMPT)
        terminal.type("/help\r")
        terminal.expect("/multi")
        terminal.expect(PROMPT)
        terminal.type("/hepl\r")
        terminal.expect(r"/hepl is not a chat command \(/help lists them\); nothing was sent\.")
        terminal.expect(PROMPT)
        terminal.type("/multi\r")
        terminal.type("First line OSCAR\r")
        terminal.type("  second line PAPA\r")
        terminal.type("/end\r")
        terminal.expect("Two lines read NOVEMBER.")
        terminal.expect(PROMPT)
        terminal.type("/quit\r")
        assert terminal.finish() == 0, terminal.text[-3000:]
    finally:
        terminal.close()
    assert "Traceback" not in terminal.text
    bodies = sent(sim)
    assert len(bodies) == 1  # /help and /hepl reached no model
    assert "First line OSCAR\\n  second line PAPA" in bodies[0]
    assert "/help" not in bodies[0] and "/end" not in bodies[0]
    (run,) = stored_runs(home)
    tasks = query(home, f"select role, provider, effort from tasks where run_id = '{run['id']}'")
    assert [tuple(row) for row in tasks] == [("reviewer", "deepseek", "low")]
