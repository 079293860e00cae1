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

import pytest

from tests.cli.test_run_cli import MARKUP, MARKUP_REQUEST, cli_env, thoughtline
from thoughtline.testing import SimReasoning, Simulator, Transcript

# The frames of rich's "dots" spinner.
SPINNER_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def run_on_pty(
    home: Path, environ: dict[str, str], *args: str, timeout_s: float = 120.0
) -> tuple[int, str]:
    """``thoughtline ARGS`` with stdout and stderr on a 120x40 pseudo-terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**cli_env(home, environ), "TERM": "xterm-256color"}
    env.pop("COLUMNS", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "thoughtline.cli", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
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
        code = process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
    return code, output.decode("utf-8", errors="replace")


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
    assert "reasoning (240,000 characters; the whole text: thoughtline status run_" in shown
    assert "first reasoning" in final  # the closing table follows the answer
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
    assert "task engineer: ✂ The answer was cut off" in piped.stderr
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
        result = subprocess.run(
            [sys.executable, "-m", "thoughtline.cli", *args],
            input=request + "\n",
            capture_output=True,
            text=True,
            env=cli_env(home, environ),
            cwd=home.parent,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["request"] == request
    empty = subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", "run", "-"],
        input="  \n",
        capture_output=True,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
        timeout=60,
        check=False,
    )
    assert empty.returncode == 2
    assert "The request on stdin is empty" in empty.stderr


def test_run_ids_by_hand_full_ids_prefixes_and_latest(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    first = json.loads(thoughtline(home, environ, "run", "one", "--json").stdout)["id"]
    second = json.loads(thoughtline(home, environ, "run", "two", "--json").stdout)["id"]
    latest = json.loads(thoughtline(home, environ, "status", "latest", "--json").stdout)
    assert latest["id"] == second
    by_prefix = json.loads(thoughtline(home, environ, "status", first[:-2], "--json").stdout)
    assert by_prefix["id"] == first
    # The run_ part may be left out, and trace takes the same forms.
    trace = thoughtline(home, environ, "trace", second.removeprefix("run_")[:-2], "--json")
    assert trace.returncode == 0, trace.stderr
    assert {event["run_id"] for event in json.loads(trace.stdout)} == {second}
    assert thoughtline(home, environ, "trace", "latest", "--json").stdout == trace.stdout
    ambiguous = thoughtline(home, environ, "status", "run_20")
    assert ambiguous.returncode == 2
    assert ambiguous.stderr == (
        f"thoughtline: 'run_20' matches 2 runs: {second}, {first}. Give more of the id.\n"
    )
    # Listed ids are whole, even on a narrow terminal.
    narrow = thoughtline(home, {**environ, "COLUMNS": "60"}, "runs")
    assert narrow.returncode == 0, narrow.stderr
    assert first in narrow.stdout and second in narrow.stdout


def test_an_empty_reasoning_layer_says_why(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    run_id = json.loads(
        thoughtline(home, environ, "run", "x", "--chain-of-thought", "surface", "--json").stdout
    )["id"]
    result = thoughtline(home, environ, "trace", run_id, "--layer", "reasoning", "--json")
    assert result.returncode == 0
    assert result.stdout == "[]\n"
    assert result.stderr == (
        f"thoughtline: The reasoning layer of run {run_id} is empty: its tasks ran with "
        "chain_of_thought=surface, which does not record reasoning (telemetry_only and "
        "surface_and_telemetry do).\n"
    )
