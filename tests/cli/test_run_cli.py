"""``thoughtline run/status/runs/trace/purge`` as a user runs them: real subprocesses
against the simulator, a real store under a temporary THOUGHTLINE_HOME."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from tests.conftest import CANARY_KEY
from tests.providers.proxy_servers import Socks5Proxy
from tests.runtime.test_disclosure_e2e import CANARY, ECHO, TRANSCRIPT, all_bytes_under
from tests.support import daemon_url, start_process, wait_for_running_event
from thoughtline.cli._render import text_console
from thoughtline.cli.live_view import LiveRunView
from thoughtline.providers.redaction import REDACTED
from thoughtline.records.run_events import (
    RunEvent,
    RunStarted,
    TaskAnswerDelta,
    TaskCompleted,
    TaskReasoningDelta,
    TaskStarted,
)
from thoughtline.testing import SimReasoning, Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

AT = "2026-01-01T00:00:00.000Z"


def cli_env(home: Path, environ: dict[str, str]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env.update(environ)
    env["THOUGHTLINE_HOME"] = str(home)
    env.pop("THOUGHTLINE_CONFIG", None)
    return env


def thoughtline(
    home: Path, environ: dict[str, str], *args: str, stdin_text: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``thoughtline ARGS`` with stdout and stderr piped, and ``stdin_text`` piped to its
    stdin (none: nothing, and never the runner's stdin, since a run reads a piped one)."""
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *args],
        stdin=subprocess.DEVNULL if stdin_text is None else None,
        input=stdin_text,
        capture_output=True,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
        timeout=60,
        check=False,
    )


def start_thoughtline(home: Path, environ: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """``thoughtline ARGS`` running in the background, stdout and stderr piped, with
    SIGINT and SIGTERM at their defaults (:func:`tests.support.start_process`)."""
    return start_with_env(home, cli_env(home, environ), *args)


def start_with_env(home: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """:func:`start_thoughtline` in the environment ``env``."""
    return start_process(
        [sys.executable, "-m", "thoughtline.cli", *args],
        env=env,
        cwd=home.parent,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.mark.parametrize("mode", ["hidden", "surface", "telemetry_only", "surface_and_telemetry"])
def test_run_json_prints_only_the_snapshot_and_discloses_per_mode(
    home: Path, sim: Simulator, environ: dict[str, str], mode: str
) -> None:
    sim.script(TRANSCRIPT)
    result = thoughtline(
        home,
        environ,
        "run",
        "Explain.",
        "--provider",
        "deepseek",
        "--chain-of-thought",
        mode,
        "--json",
    )
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    assert snapshot["schema"] == "thoughtline.run/v1"
    assert snapshot["status"] == "completed"
    task = snapshot["tasks"][0]
    assert task["executor"] == "provider:deepseek:deepseek-reasoner"
    shows = mode in ("surface", "surface_and_telemetry")
    assert (CANARY in result.stdout) is shows
    assert CANARY not in result.stderr
    assert CANARY_KEY not in result.stdout + result.stderr
    trace = thoughtline(home, environ, "trace", snapshot["id"], "--json")
    assert trace.returncode == 0, trace.stderr
    events = json.loads(trace.stdout)
    assert (CANARY in trace.stdout) is (mode in ("telemetry_only", "surface_and_telemetry"))
    assert {event["layer"] for event in events} <= {"answer", "reasoning"}
    assert CANARY_KEY.encode() not in all_bytes_under(home)


def test_plain_output_without_a_tty(home: Path, sim: Simulator, environ: dict[str, str]) -> None:
    sim.script(TRANSCRIPT)
    surface = thoughtline(
        home,
        environ,
        "run",
        "Explain.",
        "--role",
        "engineer",
        "--role",
        "reviewer",
        "--chain-of-thought",
        "surface",
    )
    assert surface.returncode == 0, surface.stderr
    # stdout: only the answers, one section per task; stderr: progress, reasoning, table.
    assert surface.stdout == (
        f"==> engineer <==\n{TRANSCRIPT.answer}\n\n==> reviewer <==\n{TRANSCRIPT.answer}\n"
    )
    lines = surface.stderr.splitlines()
    assert re.fullmatch(
        r"run [a-z][0-9a-z]{7} started: 2 task\(s\), chain_of_thought=surface \(explicit\)",
        lines[0],
    ), lines[0]
    assert any(line.startswith("task engineer done — reasoning shown: ") for line in lines)
    assert CANARY in surface.stderr
    # The closing table, and under it what the run cost (deepseek-reasoner's data price).
    assert re.search(
        r"^cost \$[0-9.]+, reasoning \$[0-9.]+ of it \(genai-prices 0\.2\.3\) *$",
        surface.stderr,
        re.M,
    )
    hidden = thoughtline(home, environ, "run", "Explain.", "--provider", "deepseek")
    assert hidden.returncode == 0, hidden.stderr
    assert hidden.stdout == TRANSCRIPT.answer + "\n"
    assert "reasoning not_requested: Reasoning was not requested" in hidden.stderr
    assert CANARY not in hidden.stdout + hidden.stderr


def test_status_and_runs(home: Path, sim: Simulator, environ: dict[str, str]) -> None:
    first = json.loads(thoughtline(home, environ, "run", "one", "--json").stdout)
    second = json.loads(
        thoughtline(home, environ, "run", "two", "--worker-backend", "inline", "--json").stdout
    )
    assert second["status"] == "completed_prepare_only"
    latest = json.loads(thoughtline(home, environ, "status", "--json").stdout)
    assert latest["id"] == second["id"]
    by_id = json.loads(thoughtline(home, environ, "status", first["id"], "--json").stdout)
    assert by_id == first
    runs = json.loads(thoughtline(home, environ, "runs", "--limit", "5", "--json").stdout)
    assert [run["id"] for run in runs] == [second["id"], first["id"]]
    missing = thoughtline(home, environ, "status", "run_nope")
    assert missing.returncode == 2
    assert missing.stderr == (
        "thoughtline: No run 'run_nope' in this store. List runs with: thoughtline runs\n"
    )


def test_a_long_request_is_a_preview_in_the_human_views_and_whole_in_json(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    """A request of megabytes (stored under a raised max_request_bytes): status, runs and
    trace print its start and how to see all of it; --json keeps every character."""
    home.mkdir(parents=True)
    (home / "config.toml").write_text("[orchestration]\nmax_request_bytes = 4194304\n")
    request = "FIRST LINE\n" + ("lorem ipsum dolor sit amet, " * 3 + "\n") * 40_000 + "END"
    # Gemini: the request is over Claude's context window (refused before any call).
    started = thoughtline(
        home, environ, "run", "-", "--json", "--provider", "gemini", stdin_text=request + "\n"
    )
    assert started.returncode == 0, started.stderr
    started_snapshot = json.loads(started.stdout)
    run_id, short_id = started_snapshot["id"], started_snapshot["short_id"]
    status = thoughtline(home, environ, "status", run_id)
    assert status.returncode == 0, status.stderr
    assert status.stdout.count("lorem ipsum") <= 30
    assert len(status.stdout) < 10_000
    assert "request: FIRST LINE\nlorem ipsum" in status.stdout
    assert "END" not in status.stdout
    words = " ".join(status.stdout.split())
    assert (
        f"… (cut: the request is {len(request):,} characters; the whole request: "
        f"thoughtline status {short_id} --json)"
    ) in words
    assert (
        json.loads(thoughtline(home, environ, "status", run_id, "--json").stdout)["request"]
        == request
    )
    listed = thoughtline(home, environ, "runs")
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout) < 5_000
    trace = thoughtline(home, environ, "trace", run_id)
    assert trace.returncode == 0, trace.stderr
    assert len(trace.stdout) < 20_000
    assert f"(cut: {len(request):,} characters; --json has all)" in trace.stdout
    events = json.loads(thoughtline(home, environ, "trace", run_id, "--json").stdout)
    assert events[0]["type"] == "run.started"
    assert events[0]["metadata"]["request"] == request


@pytest.mark.parametrize(
    ("args", "env_drop", "expected"),
    [
        (
            ["--provider", "gemini"],
            "GEMINI_API_KEY",
            "thoughtline: No API key for provider 'gemini': set GEMINI_API_KEY in the environment",
        ),
        (
            ["--provider", "antropic"],
            None,
            "thoughtline: Unknown provider 'antropic'. Did you mean 'anthropic'? Known providers: anthropic",
        ),
        (
            ["--role", "poet"],
            None,
            "thoughtline: Unknown role 'poet'. Known roles: architect, assistant, engineer, reviewer, security",
        ),
        (
            ["--role", "reviwer"],
            None,
            "thoughtline: Unknown role 'reviwer'. Did you mean 'reviewer'? Known roles: architect",
        ),
        (
            ["--provider", "vllm"],
            None,
            "thoughtline: No default model for provider 'vllm': pass --model",
        ),
    ],
)
def test_bad_input_is_one_clear_sentence(
    home: Path, environ: dict[str, str], args: list[str], env_drop: str | None, expected: str
) -> None:
    env = {k: v for k, v in environ.items() if k != env_drop}
    result = thoughtline(home, env, "run", "x", *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(expected)
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["run", "x", "--role", "reviwer", "--json"], "ROLE_UNKNOWN"),
        (["run", "x", "--provider", "antropic", "--json"], "ENDPOINT_UNKNOWN"),
        (["status", "run_nosuchrun", "--json"], "RUN_NOT_FOUND"),
        (["trace", "--json"], "RUN_NOT_FOUND"),  # no runs yet
    ],
)
def test_with_json_a_refusal_is_json_on_stdout_and_the_sentence_on_stderr(
    home: Path, environ: dict[str, str], args: list[str], code: str
) -> None:
    result = thoughtline(home, environ, *args)
    assert result.returncode == 2
    sentence = result.stderr.removeprefix("thoughtline: ").rstrip("\n")
    assert "\n" not in sentence
    assert json.loads(result.stdout) == {"error": {"code": code, "message": sentence}}
    # Without --json stdout stays empty.
    plain = thoughtline(home, environ, *[arg for arg in args if arg != "--json"])
    assert (plain.returncode, plain.stdout) == (2, "")


def test_unreachable_server_fails_the_run_with_advice(home: Path, environ: dict[str, str]) -> None:
    env = {**environ, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    result = thoughtline(home, env, "run", "x", "--json")
    assert result.returncode == 1
    snapshot = json.loads(result.stdout)
    assert snapshot["status"] == "failed"
    assert "PROVIDER_UNREACHABLE: Cannot reach anthropic at http://127.0.0.1:9" in result.stderr
    # Nothing reached the provider: nothing was billed, and the cost says so.
    assert (snapshot["cost"]["amount"], snapshot["cost"]["unknown_reason"]) == (0, None)
    shown = thoughtline(home, env, "status")
    assert "cost $0 (nothing billed)" in shown.stdout + shown.stderr
    assert "unknown" not in shown.stdout + shown.stderr


PROXY_VARIABLES = [
    f"{name}_{case}" for name in ("http", "https", "all", "no") for case in ("proxy", "PROXY")
]


def test_a_trust_store_that_cannot_be_loaded_fails_the_run_with_the_variable_named(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    missing = home.parent / "no-such-bundle.pem"
    result = thoughtline(home, {**environ, "SSL_CERT_FILE": str(missing)}, "run", "x", "--json")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    snapshot = json.loads(result.stdout)
    assert snapshot["status"] == "failed"
    assert snapshot["tasks"][0]["error"]["code"] == "CONFIG_INVALID"
    assert f"SSL_CERT_FILE={missing} cannot be loaded" in result.stderr
    assert sim.requests == []
    stored = json.loads(thoughtline(home, environ, "status", snapshot["id"], "--json").stdout)
    assert stored["status"] == "failed"  # recorded as it ended, not left running


def test_a_run_goes_through_the_socks_proxy_the_environment_names(
    home: Path, sim: Simulator, environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proxy's password is used to authenticate and written nowhere."""
    for variable in PROXY_VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    sim.script(TRANSCRIPT)
    password = "socks-canary-pw-7f3e"
    with Socks5Proxy(credentials=("agent", password)).running() as proxy:
        env = {**environ, "ALL_PROXY": f"socks5://agent:{password}@{proxy.url}"}
        result = thoughtline(home, env, "run", "x", "--json", "--chain-of-thought", "surface")
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    assert snapshot["status"] == "completed"
    assert CANARY in snapshot["tasks"][0]["reasoning"]
    assert [tunnel.username for tunnel in proxy.tunnels] == ["agent"]
    trace = thoughtline(home, environ, "trace", snapshot["id"], "--json")
    for written in (result.stdout, result.stderr, trace.stdout):
        assert password not in written and CANARY_KEY not in written
    assert password.encode() not in all_bytes_under(home)


def test_purge_applies_retention_per_layer(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    (home.parent / "thoughtline.toml").write_text(
        '[trace]\nprovider_raw = true\n[trace.retention]\nreasoning = "1s"\nprovider_raw = "1s"\n'
    )
    # surface_and_telemetry: the canary is in the reasoning layer, the raw exchange, the
    # task row and the run's live event log — retention must reach every copy.
    run = json.loads(
        thoughtline(
            home, environ, "run", "x", "--chain-of-thought", "surface_and_telemetry", "--json"
        ).stdout
    )
    assert CANARY in run["tasks"][0]["reasoning"]
    time.sleep(1.2)
    dry = thoughtline(home, environ, "purge", "--dry-run")
    assert dry.stdout.splitlines() == [
        "answer: would remove 0 event(s) (retention forever)",
        "reasoning: would remove 1 event(s) (retention 1s)",
        "provider_raw: would remove 1 event(s) (retention 1s)",
        "displayed reasoning: would remove from 1 task(s) (retention 1s)",
    ]
    assert CANARY.encode() in all_bytes_under(home)
    real = thoughtline(home, environ, "purge")
    assert real.stdout.splitlines()[1] == "reasoning: removed 1 event(s) (retention 1s)"
    assert (
        real.stdout.splitlines()[3] == "displayed reasoning: removed from 1 task(s) (retention 1s)"
    )
    layers = {
        event["layer"]
        for event in json.loads(thoughtline(home, environ, "trace", run["id"], "--json").stdout)
    }
    assert layers == {"answer"}
    task = json.loads(thoughtline(home, environ, "status", run["id"], "--json").stdout)["tasks"][0]
    assert task["reasoning"] is None
    assert task["reasoning_parts"] == []
    assert task["reasoning_notice"].endswith(
        "The reasoning text was removed by the reasoning retention."
    )
    assert task["output"] == run["tasks"][0]["output"]  # answers stay (retention forever)
    assert CANARY.encode() not in all_bytes_under(home)


@pytest.mark.parametrize("how", ["kill", "interrupt"])
def test_killed_or_interrupted_cli_leaves_an_honest_record(
    home: Path, sim: Simulator, environ: dict[str, str], how: str
) -> None:
    sim.pace_s = 0.05
    sim.script(
        Transcript(
            reasoning=(SimReasoning(kind="summary", text="slow thought " * 40),),
            answer="slow answer " * 40,
            chunk_chars=6,
        )
    )
    process = start_thoughtline(home, environ, "run", "slow", "--chain-of-thought", "surface")
    try:
        run_id = wait_for_running_event(home / "thoughtline.db", "reasoning.delta")
        process.send_signal(signal.SIGKILL if how == "kill" else signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    snapshot = json.loads(thoughtline(home, environ, "status", run_id, "--json").stdout)
    if how == "kill":
        assert process.returncode == -signal.SIGKILL
        assert snapshot["status"] == "interrupted"
        task = snapshot["tasks"][0]
        assert task["status"] == "interrupted"
        assert task["reasoning_status"] == "interrupted"
        assert task["error"]["code"] == "RUN_INTERRUPTED"
        # What reached the run event log is kept, and nothing else is claimed.
        with sqlite3.connect(home / "thoughtline.db") as connection:
            logged = "".join(
                # One delta ({"text"}) or consecutive deltas coalesced ({"texts"}).
                "".join(fields["texts"]) if "texts" in fields else fields["text"]
                for fields in (
                    json.loads(data)
                    for (data,) in connection.execute(
                        "select data_json from run_events where run_id = ? "
                        "and type = 'reasoning.delta' order by seq",
                        (run_id,),
                    )
                )
            )
        assert task["reasoning"] == (logged or None)
        assert ("slow thought " * 40).startswith(logged)
    else:
        assert process.returncode == 130
        assert "cancelled; what arrived is kept" in stderr
        assert snapshot["status"] == "cancelled"
        task = snapshot["tasks"][0]
        assert task["status"] == "cancelled"
        assert task["reasoning_status"] == "interrupted"
        assert task["reasoning"] and "slow thought" in task["reasoning"]


def test_config_shows_sources_and_masks_keys(home: Path, environ: dict[str, str]) -> None:
    (home.parent / "thoughtline.toml").write_text(
        '[orchestration]\nchain_of_thought = "surface"\n[orchestration.chain_of_thought_by_role]\nreviewer = "hidden"\n'
    )
    result = thoughtline(home, environ, "config", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    settings = {entry["key"]: entry for entry in report["settings"]}
    config_file = str(home.parent / "thoughtline.toml")
    assert settings["orchestration.chain_of_thought"] == {
        "key": "orchestration.chain_of_thought",
        "value": "surface",
        "source": config_file,
    }
    assert settings["orchestration.chain_of_thought_by_role.reviewer"]["value"] == "hidden"
    assert settings["orchestration.max_concurrency"]["source"] == "default"
    anthropic = next(e for e in report["endpoints"] if e["name"] == "anthropic")
    assert anthropic["api_key"] == f"set ({len(CANARY_KEY)} characters)"
    assert anthropic["base_url_source"] == "env"
    assert CANARY_KEY not in result.stdout
    human = thoughtline(home, environ, "config")
    assert human.returncode == 0
    assert CANARY_KEY not in human.stdout


ECHO_PLAN = """
[[task]]
name = "adaptive"
role = "engineer"
provider = "anthropic"

[[task]]
name = "raw"
role = "reviewer"
provider = "deepseek"
"""


@pytest.mark.parametrize("mode", ["hidden", "surface", "telemetry_only", "surface_and_telemetry"])
def test_a_key_the_model_echoes_leaves_no_trace_through_the_cli(
    home: Path, sim: Simulator, environ: dict[str, str], mode: str
) -> None:
    # The simulated model repeats the loaded key in its answer and its reasoning, cut
    # across deltas; the raw exchange layer is on too.
    sim.script(ECHO)
    (home.parent / "thoughtline.toml").write_text("[trace]\nprovider_raw = true\n")
    plan = home.parent / "plan.toml"
    plan.write_text(ECHO_PLAN)
    piped = thoughtline(
        home, environ, "run", "Echo.", "--plan", str(plan), "--chain-of-thought", mode
    )
    assert piped.returncode == 0, piped.stderr
    assert f"Your key is {REDACTED} and again {REDACTED}, sorry." in piped.stdout
    as_json = thoughtline(
        home, environ, "run", "Echo.", "--plan", str(plan), "--chain-of-thought", mode, "--json"
    )
    assert as_json.returncode == 0, as_json.stderr
    run_id = json.loads(as_json.stdout)["id"]
    outputs = [
        piped,
        as_json,
        thoughtline(home, environ, "status"),
        thoughtline(home, environ, "status", run_id, "--json"),
        thoughtline(home, environ, "runs"),
        thoughtline(home, environ, "runs", "--json"),
        thoughtline(home, environ, "trace", run_id),
        thoughtline(home, environ, "trace", run_id, "--json"),
    ]
    shows = mode in ("surface", "surface_and_telemetry")
    assert (f"carried {REDACTED}; I must" in piped.stderr) is shows
    for result in outputs:
        assert result.returncode == 0, (result.args, result.stderr)
        assert CANARY_KEY not in result.stdout + result.stderr, result.args
    assert CANARY_KEY.encode() not in all_bytes_under(home)


def test_a_key_the_model_echoes_never_reaches_the_daemons_sse_stream(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(ECHO)
    modes = ("hidden", "surface", "telemetry_only", "surface_and_telemetry")
    cli_run = json.loads(
        thoughtline(home, environ, "run", "Echo.", "--chain-of-thought", "surface", "--json").stdout
    )
    process = start_process(
        [sys.executable, "-m", "thoughtline.cli", "serve", "--port", "0", "--no-token"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(home, environ),
        cwd=home.parent,
    )
    streams: dict[str, bytes] = {}
    try:
        with httpx2.Client(base_url=daemon_url(process), timeout=30) as client:
            run_ids = {"cli": cli_run["id"]}
            for mode in modes:
                created = client.post(
                    "/v1/runs",
                    json={"request": "Echo.", "provider": "deepseek", "chain_of_thought": mode},
                )
                assert created.status_code == 202, created.text
                run_ids[mode] = created.json()["id"]
            for name, run_id in run_ids.items():
                with client.stream(
                    "GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": "0"}
                ) as response:
                    streams[name] = b"".join(response.iter_bytes())
    finally:
        process.terminate()
        process.communicate(timeout=30)
    for name, body in streams.items():
        assert b"event: run.completed" in body, (name, body[-300:])
        assert b"event: answer.delta" in body
        assert CANARY_KEY.encode() not in body, name
    assert (b"event: reasoning.delta" in streams["surface"]) is True
    assert CANARY_KEY.encode() not in all_bytes_under(home)


# Model and user text that rich would read as markup (or emoji codes) if it were parsed.
MARKUP = "[/INST] [bold]x[/bold] [link=http://x]y[/link] [red on] :smile: \\[z] <script>alert(1)</script>"
MARKUP_REQUEST = "[/INST] [bold]ask[/bold] [link=http://x]q[/link]"


def test_model_and_user_text_is_printed_verbatim_never_as_markup(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(
        Transcript(
            reasoning=(SimReasoning(kind="summary", text=f"Thinking {MARKUP}"),),
            answer=f"Answer {MARKUP}",
        )
    )
    wide = {**environ, "COLUMNS": "400"}  # so tables print each cell on one line
    run = thoughtline(home, wide, "run", MARKUP_REQUEST, "--chain-of-thought", "surface")
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"Answer {MARKUP}\n"
    assert f"Thinking {MARKUP}" in run.stderr
    status = thoughtline(home, wide, "status")
    runs = thoughtline(home, wide, "runs")
    run_id = json.loads(thoughtline(home, wide, "status", "--json").stdout)["id"]
    trace = thoughtline(home, wide, "trace", run_id)
    for result in (status, runs, trace):
        assert result.returncode == 0, (result.args, result.stderr)
        assert "Traceback" not in result.stderr
    assert f"request: {MARKUP_REQUEST}" in status.stdout
    assert f"Answer {MARKUP}" in status.stdout
    assert MARKUP_REQUEST in runs.stdout
    assert json.dumps(MARKUP_REQUEST) in trace.stdout  # the run.started metadata


def test_the_live_view_renders_markup_like_text_as_text() -> None:
    console = text_console(file=io.StringIO(), width=200, record=True)
    view = LiveRunView(console)
    task = {
        "id": "task_1",
        "name": "engineer",
        "provider": "anthropic",
        "model": "[bold]m[/bold]",
        "chain_of_thought": "surface",
        "status": "running",
        "output": None,
        "reasoning_notice": None,
        "error": None,
    }
    events: list[RunEvent] = [
        RunStarted(run_id="run_1", seq=0, at=AT, snapshot={"tasks": [task]}),
        TaskStarted(run_id="run_1", seq=0, at=AT, task_id="task_1", task=task),
        TaskReasoningDelta(
            run_id="run_1", seq=0, at=AT, task_id="task_1", text=f"Thinking {MARKUP}"
        ),
        TaskAnswerDelta(run_id="run_1", seq=0, at=AT, task_id="task_1", text=f"Answer {MARKUP}"),
    ]
    failed = {
        **task,
        "status": "failed",
        "error": {"code": "PROVIDER_ERROR", "message": f"Upstream said {MARKUP}"},
        "reasoning_notice": f"Notice {MARKUP}",
    }
    for event in events:
        view.handle(event)
        if isinstance(event, TaskReasoningDelta):
            console.print(view.render())  # reasoning arriving (folded once the answer streams)
    console.print(view.render())  # while running
    view.handle(TaskCompleted(run_id="run_1", seq=0, at=AT, task_id="task_1", task=failed))
    console.print(view.render())
    shown = console.export_text()
    for text in (
        f"Thinking {MARKUP}",
        f"Answer {MARKUP}",
        f"Upstream said {MARKUP}",
        f"Notice {MARKUP}",
        "[bold]m[/bold]",
    ):
        assert text in shown, text


def test_quiet_leaves_stderr_to_errors(home: Path, sim: Simulator, environ: dict[str, str]) -> None:
    from tests.runtime.test_disclosure_e2e import ANSWER
    from thoughtline.testing import Fault

    sim.script(TRANSCRIPT)
    shown = thoughtline(
        home, environ, "run", "Explain.", "--chain-of-thought", "surface", "--quiet"
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == ANSWER + "\n"
    assert shown.stderr == ""  # not the reasoning (surface), progress or the table
    sim.inject(Fault.http_error(400, "simulated bad request"), profile="anthropic")
    failed = thoughtline(home, environ, "run", "Explain.", "-q")
    assert failed.returncode == 1
    assert failed.stdout == ""
    lines = failed.stderr.splitlines()
    assert lines[0].startswith("thoughtline: task assistant failed: PROVIDER_")
    assert "simulated bad request" in lines[0]
    assert lines[1:] == [f"thoughtline: run {lines[1].split()[2]} failed."]
    assert CANARY not in shown.stderr + failed.stderr


def test_a_failure_is_said_once(home: Path, sim: Simulator, environ: dict[str, str]) -> None:
    from thoughtline.testing import Fault

    sim.inject(Fault.http_error(400, "simulated bad request"), profile="anthropic")
    failed = thoughtline(home, environ, "run", "Explain.")
    assert failed.returncode == 1
    assert failed.stderr.count("simulated bad request") == 1
    assert "task assistant failed: PROVIDER_BAD_REQUEST (below)" in failed.stderr
    assert "not_requested:" not in failed.stderr  # hidden: nothing to say of reasoning


def test_run_help_shows_short_flags_defaults_and_examples_in_80_columns(
    home: Path, environ: dict[str, str]
) -> None:
    shown = thoughtline(home, {**environ, "COLUMNS": "80"}, "run", "--help")
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    for expected in ("-r, --role", "-p, --provider", "-m, --model", "-e, --effort", "-q, --quiet"):
        assert expected in text
    assert "Default: [defaults] role, else none (no system prompt)." in " ".join(text.split())
    assert "--system TEXT" in text
    assert "else hidden." in text
    assert "Examples:" in text
    assert "git diff | thoughtline run -" in text
    assert max(len(line) for line in text.splitlines()) <= 80
