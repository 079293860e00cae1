"""``thoughtline run`` with tools when things go wrong, as a user meets it: a tool the
server does not have, a server that does not start, a 50 MB result, a server that hangs,
answers a call with a JSON-RPC error or dies mid-call, a ``thoughtline run`` killed
mid-loop, and a result that is not UTF-8 or holds terminal controls. Real processes
throughout; the model is simulated."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_run_cli import cli_env, thoughtline
from tests.cli.test_terminal import run_with_terminal
from tests.support import alive, refusal_lines, start_process
from tests.tools.test_mcp_tools import TEST_SERVER, _config, broken_server, http_server
from thoughtline.testing import SimToolCall, Simulator, Transcript

pytestmark = pytest.mark.slow  # every test starts thoughtline and server processes

RAW_SERVER = str(Path(__file__).with_name("raw_mcp_server.py"))
PROBE = f"""
[mcp_servers.probe]
command = {json.dumps(sys.executable)}
args = [{json.dumps(TEST_SERVER)}]
"""
FINAL = Transcript(answer="Done.")

__all__ = ["http_server"]  # a fixture used here: the test MCP server over Streamable HTTP


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def calling(name: str, arguments: dict[str, object], call_id: str = "call_1") -> Transcript:
    return Transcript(
        tool_calls=(SimToolCall(call_id=call_id, name=name, arguments=json.dumps(arguments)),)
    )


def _nothing_stored(home: Path, environ: dict[str, str]) -> bool:
    listed = thoughtline(home, environ, "runs", "--json")
    return json.loads(listed.stdout) in ([], {"runs": []})


def _only_task(home: Path, environ: dict[str, str]) -> dict[str, object]:
    shown = thoughtline(home, environ, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    (task,) = json.loads(shown.stdout)["tasks"]
    return dict(task)


@pytest.mark.parametrize(
    ("args", "config", "said"),
    [
        (
            ("--tool", "probe.nosuch"),
            PROBE,
            "Task assistant: The MCP server probe has no tool 'nosuch' (it lists: environment,",
        ),
        (
            ("--role", "engineer"),
            PROBE + '\n[roles.engineer]\nprompt = "p"\ntools = ["probe.missing"]\n',
            "The MCP server probe has no tool 'missing'",
        ),
        (
            ("--tool", "probe.repeat"),
            PROBE + 'allow = ["sleep"]\n',
            "The tool 'probe.repeat' is not in [mcp_servers.probe] allow",
        ),
    ],
    ids=["--tool", "role", "not-allowed"],
)
def test_a_tool_its_server_does_not_offer_is_one_sentence_and_exit_2_with_nothing_stored(
    home: Path,
    environ: dict[str, str],
    sim: Simulator,
    args: tuple[str, ...],
    config: str,
    said: str,
) -> None:
    _config(home, config)
    result = thoughtline(home, environ, "run", "Hi.", *args)
    assert result.returncode == 2, result.stderr
    (line,) = refusal_lines(result.stderr, "probe")
    assert said in line
    assert sim.requests == []
    assert _nothing_stored(home, environ)


def test_a_server_that_does_not_start_is_exit_2_with_its_stderr_tail_and_nothing_stored(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    broken_server(home)
    result = thoughtline(home, environ, "run", "Hi.", "--tool", "broken")
    assert result.returncode == 2, result.stderr
    (line,) = refusal_lines(result.stderr, "broken")
    assert line.startswith("thoughtline: The MCP server broken (")
    assert "Its last output: cannot open the index at /nowhere" in line
    assert sim.requests == []
    assert _nothing_stored(home, environ)


def test_a_50_mb_result_is_cut_as_it_is_read_and_the_process_stays_small(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    _config(home, PROBE)
    sim.script(FINAL)
    sim.script(calling("probe__big", {"megabytes": 50}), times=1)
    # The CLI's own peak memory (its servers are other processes), printed as it exits:
    # VmHWM, the peak of this process's memory since its exec. (ru_maxrss would not do:
    # Linux carries it over a fork and an exec, so it would report this test process's
    # own peak, hundreds of MB late in a full run.)
    measured = (
        "import atexit, re, runpy, sys\n"
        "def peak():\n"
        "    status = open('/proc/self/status').read()\n"
        "    kb = re.search(r'VmHWM:\\s+(\\d+) kB', status).group(1)\n"
        "    sys.stderr.write(f'peak-rss-kb={kb}\\n')\n"
        "atexit.register(peak)\n"
        "runpy.run_module('thoughtline.cli', run_name='__main__')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", measured, "run", "Big.", "--tool", "probe.big", "--json"],
        capture_output=True,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    (task,) = json.loads(result.stdout)["tasks"]
    (call,) = task["tool_calls"]
    assert (call["status"], call["is_error"], call["error"]) == ("done", False, None)
    assert call["result_truncated"] is True
    assert call["result"].startswith("the start of a big result\nxxx")
    # The model got the start, marked, and not the 50 MB.
    sent = json.dumps(sim.requests[1].body)
    # The server sent the text twice (as content and as structured content): ~100 MB.
    assert re.search(
        r"\[result cut at 100,000 characters; the server sent 100,0\d\d,\d\d\d bytes\]", sent
    )
    assert len(sent) < 1_000_000
    peak_kb = int(result.stderr.rsplit("peak-rss-kb=", 1)[1].split()[0])
    # One copy of the result alone would be 50 MB; the SDK's reader peaked at ~540 MB.
    assert peak_kb < 200_000, peak_kb


def test_a_server_that_never_answers_times_out_and_the_loop_goes_on(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    _config(home, PROBE + "\n[timeouts]\ntool = 1\n")
    sim.script(FINAL)
    sim.script(calling("probe__hang", {}), times=1)
    result = thoughtline(home, environ, "run", "Hang.", "--tool", "probe", "--json")
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)
    assert run["status"] == "completed"
    (task,) = run["tasks"]
    assert task["output"] == "Done."
    (call,) = task["tool_calls"]
    assert (call["status"], call["error"]) == ("timed_out", "TOOL_TIMEOUT")
    assert "did not answer within 1 s ([timeouts] tool)" in call["result"]
    assert "did not answer within 1 s" in json.dumps(sim.requests[1].body)


def test_a_server_that_dies_mid_call_answers_every_later_call_as_an_error(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    # A hang would time out (timed_out); a dead server must answer at once.
    _config(home, PROBE + "\n[timeouts]\ntool = 30\n")
    sim.script(FINAL)
    sim.script(calling("probe__repeat", {"text": "a", "times": 2}, call_id="call_2"), times=1)
    sim.script(calling("probe__die", {}), times=1)
    result = thoughtline(home, environ, "run", "Die.", "--tool", "probe", "--json")
    assert result.returncode == 0, result.stderr
    run = json.loads(result.stdout)
    assert run["status"] == "completed"
    (task,) = run["tasks"]
    died, later = task["tool_calls"]
    assert (died["name"], died["status"], died["error"]) == (
        "die",
        "failed",
        "TOOL_SERVER_UNAVAILABLE",
    )
    assert "failed during the call" in died["result"]
    assert (later["name"], later["status"], later["error"]) == (
        "repeat",
        "failed",
        "TOOL_SERVER_UNAVAILABLE",
    )
    assert len(sim.requests) == 3


# What a quirky server says in its error: lines, terminal controls, markup, and far too much.
HOSTILE = "no tool\r\nnamed \x1b[2J\u202e[bold]x[/bold] " + "z" * 600
# As the model is told it: one line, the controls as escapes, cut at 500 characters.
TOLD = ("no tool named \\x1b[2J\\u202e[bold]x[/bold] " + "z" * 600)[:499] + "…"


def _refusing(*codes: int) -> Transcript:
    """One step calling ``probe.refuse`` once per code, each answered with that JSON-RPC
    error and :data:`HOSTILE`."""
    return Transcript(
        tool_calls=tuple(
            SimToolCall(
                call_id=f"call_{code}",
                name="probe__refuse",
                arguments=json.dumps({"code": code, "message": HOSTILE}),
            )
            for code in codes
        )
    )


def _trace_events(home: Path, environ: dict[str, str], kind: str) -> list[dict[str, object]]:
    traced = thoughtline(home, environ, "trace", "latest", "--json")
    assert traced.returncode == 0, traced.stderr
    return [event["metadata"] for event in json.loads(traced.stdout) if event["type"] == kind]


def test_a_json_rpc_error_a_live_stdio_server_answers_is_a_tool_error_and_the_next_call_works(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    _config(home, PROBE + "\n[timeouts]\ntool = 30\n")
    sim.script(FINAL)
    sim.script(calling("probe__echo", {"text": "still here"}, call_id="call_echo"), times=1)
    sim.script(_refusing(-32601, -32602, -32603), times=1)
    result = thoughtline(home, environ, "run", "Try.", "--tool", "probe")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Done.\n"
    # Piped: each refused call's line names the code.
    assert result.stderr.count("task assistant: ✗ probe.refuse failed (TOOL_CALL_FAILED)") == 3

    task = _only_task(home, environ)
    *refused, echoed = task["tool_calls"]  # type: ignore[misc]
    for code, call in zip((-32601, -32602, -32603), refused, strict=True):
        said = (
            f"The MCP server probe answered the call to refuse with an error "
            f"(JSON-RPC {code}): {TOLD}"
        )
        assert (call["status"], call["is_error"], call["error"]) == (
            "failed",
            True,
            "TOOL_CALL_FAILED",
        )
        assert call["result"] == said
    # The server was not taken for dead: the next call to it went through.
    assert (echoed["name"], echoed["status"], echoed["result"]) == ("echo", "done", "still here")
    # The model was told each error, and then the echo.
    told = json.dumps(sim.requests[1].body, ensure_ascii=False)
    assert told.count(json.dumps(TOLD, ensure_ascii=False)[1:-1]) == 3
    assert "still here" in json.dumps(sim.requests[2].body)
    # The trace says the same.
    completed = _trace_events(home, environ, "tool.completed")
    assert [event["error"] for event in completed] == [
        "TOOL_CALL_FAILED",
        "TOOL_CALL_FAILED",
        "TOOL_CALL_FAILED",
        None,
    ]


def test_over_streamable_http_a_json_rpc_error_is_a_tool_error_and_only_a_death_is_unavailable(
    home: Path, environ: dict[str, str], sim: Simulator, http_server: tuple[str, str]
) -> None:
    url, token = http_server
    _config(
        home,
        f'[mcp_servers.probe]\nurl = "{url}"\n'
        f'headers = {{ Authorization = "Bearer {token}" }}\n\n[timeouts]\ntool = 30\n',
    )
    sim.script(FINAL)
    sim.script(calling("probe__echo", {"text": "anyone?"}, call_id="call_after"), times=1)
    sim.script(calling("probe__die", {}, call_id="call_die"), times=1)
    sim.script(calling("probe__echo", {"text": "still here"}, call_id="call_echo"), times=1)
    sim.script(_refusing(-32602), times=1)
    result = thoughtline(home, environ, "run", "Try.", "--tool", "probe", "--json")
    assert result.returncode == 0, result.stderr
    (task,) = json.loads(result.stdout)["tasks"]
    refused, echoed, died, after = task["tool_calls"]
    assert (refused["status"], refused["error"]) == ("failed", "TOOL_CALL_FAILED")
    assert refused["result"] == (
        f"The MCP server probe answered the call to refuse with an error (JSON-RPC -32602): {TOLD}"
    )
    assert (echoed["status"], echoed["error"], echoed["result"]) == ("done", None, "still here")
    # The server's process exiting mid-call is the server gone, and so is every later call.
    assert (died["status"], died["error"]) == ("failed", "TOOL_SERVER_UNAVAILABLE")
    assert f"The MCP server probe ({url}) failed during the call" in died["result"]
    assert (after["status"], after["error"]) == ("failed", "TOOL_SERVER_UNAVAILABLE")
    assert after["result"] == (
        f"The MCP server probe ({url}) is no longer connected: it stopped earlier in the run."
    )
    assert _only_task(home, environ)["tool_calls"] == task["tool_calls"]


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _wait_for_logged_call(database: Path, call_id: str) -> None:
    """Until the event log holds the start of ``call_id`` (it is written live, within the
    store's ``live_flush_s``), at most 20 s."""
    deadline = time.monotonic() + 20
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        while time.monotonic() < deadline:
            rows = connection.execute(
                "SELECT data_json FROM run_events WHERE type = 'task.tool_call.started'"
            ).fetchall()
            if any(json.loads(data)["id"] == call_id for (data,) in rows):
                return
            time.sleep(0.05)
    raise AssertionError(f"the start of {call_id} never reached the event log")


TOOLS = ("--tool", "probe", "--tool", "time")


def test_sigkill_mid_loop_keeps_the_finished_calls_and_leaves_no_server_behind(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    _config(
        home,
        PROBE + f"\n[mcp_servers.time]\ncommand = {json.dumps(sys.executable)}\n"
        'args = ["-m", "mcp_server_time"]\n',
    )
    sim.script(calling("probe__sleep", {"seconds": 120}, call_id="call_2"))
    sim.script(calling("probe__repeat", {"text": "ab", "times": 2}), times=1)
    process = start_process(
        [*(sys.executable, "-m", "thoughtline.cli", "run", "Wait."), *TOOLS],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
    )
    try:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:  # ends when the process does
            seen.append(line)
            if "→ probe.sleep" in line:
                break
        assert any("→ probe.sleep" in line for line in seen), "".join(seen)
        servers = _children(process.pid)
        assert len(servers) == 2, servers  # probe's and time's supervisors
        _wait_for_logged_call(home / "thoughtline.db", "call_2")
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)

    # Each server ends with thoughtline: its supervisor sees the process gone.
    deadline = time.monotonic() + 20
    while any(alive(pid) for pid in servers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in servers), [p for p in servers if alive(p)]

    shown = thoughtline(home, environ, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    run = json.loads(shown.stdout)
    assert run["status"] == "interrupted"
    (task,) = run["tasks"]
    assert task["status"] == "interrupted"
    finished, in_flight = task["tool_calls"]
    assert (finished["name"], finished["status"], finished["result"]) == ("repeat", "done", "abab")
    assert (in_flight["name"], in_flight["status"], in_flight["error"]) == (
        "sleep",
        "cancelled",
        "TOOL_CANCELLED",
    )
    assert (
        "1 of its 2 tool calls had finished, the rest are marked cancelled"
        in (task["reasoning_notice"])
    )


RAW = f"""
[mcp_servers.raw]
command = {json.dumps(sys.executable)}
args = [{json.dumps(RAW_SERVER)}]
"""


def test_bytes_that_are_not_utf8_are_replaced_and_controls_kept_exact_in_json(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    _config(home, RAW)
    sim.script(FINAL)
    sim.script(calling("raw__latin1", {}), times=1)
    result = thoughtline(home, environ, "run", "Read.", "--tool", "raw", "--json")
    assert result.returncode == 0, result.stderr
    (task,) = json.loads(result.stdout)["tasks"]
    (call,) = task["tool_calls"]
    assert call["status"] == "done", call
    # On a pipe, --json keeps the characters exactly: the replacement, ESC and markup.
    assert call["result"] == "caf\ufffd \x1b[31mred\x1b[0m [bold]b[/bold]"
    stored = _only_task(home, environ)
    assert stored["tool_calls"] == task["tool_calls"]


def test_a_result_that_is_not_a_tool_result_is_a_tool_error_and_the_next_call_works(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    _config(home, RAW)
    sim.script(FINAL)
    sim.script(calling("raw__latin1", {}, call_id="call_2"), times=1)
    sim.script(calling("raw__malformed", {}), times=1)
    result = thoughtline(home, environ, "run", "Read.", "--tool", "raw", "--json")
    assert result.returncode == 0, result.stderr
    (task,) = json.loads(result.stdout)["tasks"]
    malformed, latin1 = task["tool_calls"]
    assert (malformed["status"], malformed["error"]) == ("failed", "TOOL_CALL_FAILED")
    assert malformed["result"] == (
        "The MCP server raw answered the call to malformed with a result that is not an MCP "
        "tool result (content: Input should be a valid list)."
    )
    assert (latin1["status"], latin1["error"]) == ("done", None)


def test_a_server_whose_stderr_is_not_utf8_is_shown_with_replacements(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    broken_server(
        home, "import sys; sys.stderr.buffer.write(b'bad \\xff\\xfe bytes\\n'); sys.exit(1)"
    )
    result = thoughtline(home, environ, "run", "Hi.", "--tool", "broken")
    assert result.returncode == 2, result.stderr
    assert "Its last output: bad \ufffd\ufffd bytes" in result.stderr
    assert "Traceback" not in result.stderr


def test_terminal_controls_in_tool_text_are_shown_not_obeyed_on_a_terminal(
    home: Path, environ: dict[str, str], sim: Simulator
) -> None:
    # JSON escapes C0 controls; C1 controls and bidi overrides may stand in it raw.
    text = "\u009b2J \u202eevil [bold]x[/bold]"
    _config(home, PROBE)
    sim.script(FINAL)
    sim.script(
        Transcript(
            tool_calls=(
                SimToolCall(
                    call_id="call_1",
                    name="probe__echo",
                    arguments=json.dumps({"text": text}, ensure_ascii=False),
                ),
            )
        ),
        times=1,
    )
    code, shown, piped = run_with_terminal(
        home, environ, "run", "Echo.", "--tool", "probe.echo", stdout_piped=True
    )
    assert code == 0, shown
    assert piped == "Done.\n"
    # The call's line on the terminal: controls in their visible form, markup as text.
    assert '→ probe.echo {"text":"\\x9b2J \\u202eevil [bold]x[/bold]"}' in shown
    assert "\u009b" not in shown and "\u202e" not in shown
    # The record keeps the exact text, and --json on a pipe shows it exactly.
    (call,) = _only_task(home, environ)["tool_calls"]  # type: ignore[misc]
    assert call["result"] == text
