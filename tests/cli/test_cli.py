"""The command line as a user runs it: a real subprocess, real output, real exit codes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

CANARY_KEY = "sk-ant-canary-cli-0123456789abcdef"


def thoughtline(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "thoughtline.cli", *args],
        stdin=subprocess.DEVNULL,  # not the runner's: a run reads a piped stdin
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=60,
        check=False,
    )


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    return {"THOUGHTLINE_HOME": str(tmp_path / "home"), "ANTHROPIC_API_KEY": CANARY_KEY}


def test_providers_json_lists_endpoints_and_families_without_secrets(
    home: dict[str, str], tmp_path: Path
) -> None:
    result = thoughtline("providers", "--json", env=home, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    names = [endpoint["name"] for endpoint in report["endpoints"]]
    assert names == [
        "anthropic",
        "openai",
        "openrouter",
        "gemini",
        "deepseek",
        "ollama",
        "vllm",
        "llamacpp",
    ]
    anthropic = report["endpoints"][0]
    assert anthropic["api_key"] == "set"
    assert CANARY_KEY not in result.stdout
    families = {family["family"]: family for family in report["families"]}
    assert families["claude-4-6"]["thinking_control"] == "adaptive"
    assert families["claude-legacy-budget"]["thinking_control"] == "budget"
    assert families["openai-gpt-5-x"]["returns"] == ["summary", "encrypted"]


def test_providers_shows_user_endpoint_from_config(home: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "thoughtline.toml").write_text(
        '[providers.my-vllm]\nwire_api = "openai-chat"\nbase_url = "http://127.0.0.1:8000/v1"\n'
    )
    result = thoughtline("providers", "--json", env=home, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    mine = [e for e in json.loads(result.stdout)["endpoints"] if e["name"] == "my-vllm"]
    assert mine == [
        {
            "name": "my-vllm",
            "wire_api": "openai-chat",
            "dialect": "raw-reasoning",
            "base_url": "http://127.0.0.1:8000/v1",
            "base_url_source": "config",
            "api_key_env": None,
            "api_key": "not needed",
            "families": ["openai-compatible-raw"],
        }
    ]


def test_bad_config_is_one_clear_line_and_non_zero_exit(
    home: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "thoughtline.toml").write_text('[orchestration]\nchain_of_thought = "loud"\n')
    result = thoughtline("providers", env=home, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("thoughtline: ")
    assert (
        "thoughtline.toml: orchestration.chain_of_thought: 'loud' is not allowed" in result.stderr
    )
    assert "Traceback" not in result.stderr


def test_demo_runs_every_mode_on_every_endpoint_offline(
    home: dict[str, str], tmp_path: Path
) -> None:
    result = thoughtline("demo", "--json", env=home, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) == 7 * 4 + 1  # and one tool loop
    assert all(row["status"] == "done" and row["error"] is None for row in rows)
    cell = {(row["task"], row["mode"]): row for row in rows}
    assert cell[("anthropic-adaptive", "hidden")]["reasoning_status"] == "not_requested"
    assert cell[("anthropic-adaptive", "hidden")]["shown_chars"] == 0
    assert cell[("anthropic-adaptive", "hidden")]["recorded_chars"] is None
    assert cell[("anthropic-budget", "surface")]["reasoning_status"] == "shown"
    assert cell[("anthropic-budget", "surface")]["recorded_chars"] is None
    assert cell[("openai-responses", "telemetry_only")]["reasoning_status"] == "recorded"
    assert cell[("openai-responses", "telemetry_only")]["shown_chars"] == 0
    assert cell[("openai-responses", "telemetry_only")]["recorded_chars"] > 0
    assert cell[("openai-chat", "surface")]["reasoning_status"] == "unsupported"
    assert (
        cell[("deepseek", "surface_and_telemetry")]["shown_chars"]
        == cell[("deepseek", "surface_and_telemetry")]["recorded_chars"]
        > 0
    )
    # The tool loop: the simulated model called the demo MCP server's clock, then quoted it.
    loop = cell[("tool-loop", "surface")]
    (call,) = loop["tool_calls"]
    assert (call["server"], call["name"], json.loads(call["arguments"]), call["status"]) == (
        "demo",
        "now",
        {"timezone": "Asia/Tokyo"},
        "done",
    )
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+09:00 \(Asia/Tokyo, \w+day\)", call["result"]
    )
    assert loop["answer"] == (
        "(simulated claude-sonnet-4-6) On 'What time is it in Tokyo?': demo__now returned: "
        f"{call['result']}."
    )
    # The demo uses a throwaway store: the user's THOUGHTLINE_HOME stays untouched.
    assert not Path(home["THOUGHTLINE_HOME"]).exists()


NOT_UTF8 = os.fsdecode(b"\xff\xfe")  # what Python makes of those bytes in argv on POSIX
OVER_1_MIB = b"# padding\n" * (1024 * 1024 // 10) + b"#" * 7  # 1 MiB + 1 byte of TOML comments

# (files to write under the working directory, extra environment, arguments after "run",
#  the start of the one sentence on stderr after "thoughtline: ")
BAD_INPUT: dict[str, tuple[dict[str, bytes], dict[str, str], list[str], str]] = {
    "config-not-utf8": (
        {"thoughtline.toml": b'[orchestration]\nchain_of_thought = "\xff"\n'},
        {},
        ["x"],
        "{cwd}/thoughtline.toml: the config file is not UTF-8 text (byte 0xff on line 2)",
    ),
    "plan-not-utf8": (
        {"plan.toml": b'request = "x"\n[[task]]\nrole = "\xfe"\n'},
        {},
        ["--plan", "plan.toml"],
        "plan.toml: the plan file is not UTF-8 text (byte 0xfe on line 3)",
    ),
    "role-file-not-utf8": (
        {"specialists/poet.md": b"You write \xff verse."},
        {},
        ["x", "--role", "poet"],
        "{cwd}/specialists/poet.md: the role prompt file is not UTF-8 text (byte 0xff on line 1)",
    ),
    "argument-not-utf8": (
        {},
        {},
        [NOT_UTF8],
        "command-line argument 2 ('\\xff\\xfe') is not valid UTF-8 text",
    ),
    "option-value-not-utf8": (
        {},
        {},
        ["x", f"--role={NOT_UTF8}"],
        "the value of --role ('\\xff\\xfe') is not valid UTF-8 text",
    ),
    "config-variable-is-a-directory": (
        {"conf.d/.keep": b""},
        {"THOUGHTLINE_CONFIG": "conf.d"},
        ["x"],
        "THOUGHTLINE_CONFIG points to conf.d, which is a directory, not a file.",
    ),
    "config-variable-is-a-device": (
        {},
        {"THOUGHTLINE_CONFIG": "/dev/zero"},
        ["x"],
        "THOUGHTLINE_CONFIG points to /dev/zero, which is a character device, not a regular "
        "file. Point it at a TOML file or unset it.",
    ),
    "config-too-large": (
        {"thoughtline.toml": OVER_1_MIB},
        {},
        ["x"],
        "{cwd}/thoughtline.toml: the config file is 1,048,577 bytes, more than the 1 MiB a "
        "config file may hold.",
    ),
    "config-is-a-directory": (
        {"thoughtline.toml/.keep": b""},
        {},
        ["x"],
        "{cwd}/thoughtline.toml: the config file is a directory, not a file.",
    ),
    "plan-is-a-device": (
        {},
        {},
        ["--plan", "/dev/zero"],
        "/dev/zero: the plan file is a character device, not a regular file; give a regular "
        "file of at most 1 MiB.",
    ),
    "plan-is-a-directory": (
        {"plans/.keep": b""},
        {},
        ["--plan", "plans"],
        "plans: the plan file is a directory, not a file.",
    ),
    "plan-too-large": (
        {"plan.toml": OVER_1_MIB},
        {},
        ["--plan", "plan.toml"],
        "plan.toml: the plan file is 1,048,577 bytes, more than the 1 MiB a plan file may hold.",
    ),
    "role-file-too-large": (
        {"specialists/poet.md": OVER_1_MIB},
        {},
        ["x", "--role", "poet"],
        "{cwd}/specialists/poet.md: the role prompt file is 1,048,577 bytes, more than the "
        "1 MiB a role prompt file may hold.",
    ),
    "config-request-limit-out-of-range": (
        {"thoughtline.toml": b"[orchestration]\nmax_request_bytes = 0\n"},
        {},
        ["x"],
        "{cwd}/thoughtline.toml: orchestration.max_request_bytes: must be an integer from 1 "
        "to 67108864 bytes (64 MiB), got 0",
    ),
    "config-request-limit-wrong-type": (
        {"thoughtline.toml": b'[orchestration]\nmax_request_bytes = "256 KiB"\n'},
        {},
        ["x"],
        "{cwd}/thoughtline.toml: orchestration.max_request_bytes: wrong type: must be an "
        "integer from 1 to 67108864 bytes (64 MiB), got a string ('256 KiB')",
    ),
    "config-wrong-type-choice": (
        {"thoughtline.toml": b"[orchestration]\nchain_of_thought = 5\n"},
        {},
        ["x"],
        "{cwd}/thoughtline.toml: orchestration.chain_of_thought: wrong type: must be a "
        "string, one of hidden, surface, telemetry_only, surface_and_telemetry; "
        "got an integer (5)",
    ),
    "config-wrong-type-string": (
        {"thoughtline.toml": b"[roles.poet]\nprompt = 3\n"},
        {},
        ["x"],
        "{cwd}/thoughtline.toml: roles.poet.prompt: wrong type: must be a string, "
        "got an integer (3)",
    ),
    "config-wrong-type-duration": (
        {"thoughtline.toml": b"[trace.retention]\nreasoning = 7\n"},
        {},
        ["x"],
        "{cwd}/thoughtline.toml: trace.retention.reasoning: wrong type: must be a string "
        'such as "7d" or "forever", got an integer (7)',
    ),
    "config-wrong-type-integer": (
        {"thoughtline.toml": b'[orchestration]\nmax_concurrency = "8"\n'},
        {},
        ["x"],
        "{cwd}/thoughtline.toml: orchestration.max_concurrency: wrong type: must be an "
        "integer from 1 to 256, got a string ('8')",
    ),
    "config-integer-out-of-range": (
        {"thoughtline.toml": b"[orchestration]\nmax_tasks_per_run = 0\n"},
        {},
        ["x"],
        "{cwd}/thoughtline.toml: orchestration.max_tasks_per_run: must be an integer from 1 "
        "to 1000, got 0",
    ),
    "config-invalid-role-name": (
        {"thoughtline.toml": b'[roles."bad name"]\nprompt = "x"\n'},
        {},
        ["x"],
        "{cwd}/thoughtline.toml: roles.bad name: 'bad name' is not a valid role name: "
        "use lowercase letters, digits, '-' and '_'",
    ),
    "argument-invalid-role-name": (
        {},
        {},
        ["x", "--role", "../x"],
        "Invalid role name '../x': use lowercase letters, digits, '-' and '_'",
    ),
    "role-file-invalid-name": (
        {"specialists/My Role.md": b"You are mine."},
        {},
        ["x", "--role", "My Role"],
        "Invalid role name 'My Role': use lowercase letters, digits, '-' and '_', starting "
        "with a letter or digit ({cwd}/specialists/My Role.md is ignored for that reason).",
    ),
    "plan-wrong-type-request": (
        {"plan.toml": b'request = 5\n[[task]]\nrole = "engineer"\n'},
        {},
        ["--plan", "plan.toml"],
        "plan.toml: request: wrong type: must be a string, got an integer (5)",
    ),
    "plan-wrong-type-role": (
        {"plan.toml": b'request = "x"\n[[task]]\nrole = ["engineer"]\n'},
        {},
        ["--plan", "plan.toml"],
        "plan.toml: task[0].role: wrong type: must be a string, got an array",
    ),
    "plan-invalid-role-name": (
        {"plan.toml": b'request = "x"\n[[task]]\nrole = "a/b"\n'},
        {},
        ["--plan", "plan.toml"],
        "plan.toml: task[0].role: 'a/b' is not a valid role name",
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_is_one_sentence_naming_what_is_wrong(
    home: dict[str, str], tmp_path: Path, case: str
) -> None:
    files, extra_env, args, expected = BAD_INPUT[case]
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(content)
    # Nothing may get as far as a provider; if it did, it would find nothing listening.
    env = {
        **home,
        "THOUGHTLINE_CONFIG": "",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        **extra_env,
    }
    result = thoughtline("run", *args, env=env, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("thoughtline: " + expected.format(cwd=tmp_path)), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize(
    ("fifo", "extra_env", "args", "expected"),
    [
        ("plan.fifo", {}, ["--plan", "plan.fifo"], "plan.fifo: the plan file is a FIFO"),
        (
            "thoughtline.toml",
            {},
            ["x"],
            "{cwd}/thoughtline.toml: the config file is a FIFO",
        ),
        (
            "conf.fifo",
            {"THOUGHTLINE_CONFIG": "conf.fifo"},
            ["x"],
            "THOUGHTLINE_CONFIG points to conf.fifo, which is a FIFO",
        ),
        (
            "specialists/poet.md",
            {},
            ["x", "--role", "poet"],
            "{cwd}/specialists/poet.md: the role prompt file is a FIFO",
        ),
    ],
)
def test_a_fifo_given_as_a_file_is_refused_not_waited_on(
    home: dict[str, str],
    tmp_path: Path,
    fifo: str,
    extra_env: dict[str, str],
    args: list[str],
    expected: str,
) -> None:
    """Nobody writes to the FIFO: reading it would wait forever (or, for a
    ./thoughtline.toml, it was skipped as if there were no config)."""
    (tmp_path / fifo).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(tmp_path / fifo)
    env = {**home, "THOUGHTLINE_CONFIG": "", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}
    result = thoughtline("run", *args, env={**env, **extra_env}, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("thoughtline: " + expected.format(cwd=tmp_path))
    assert "not a regular file" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
