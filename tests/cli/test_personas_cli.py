"""No persona unless one is asked for: ``thoughtline run`` as a user runs it (a real
subprocess against the simulator), and what each wire received as its system prompt."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_run_cli import thoughtline
from tests.conftest import CANARY_KEY
from tests.support import files_under
from thoughtline.runtime.planning.roles import BUILTIN_ROLES
from thoughtline.testing import Simulator

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def system_sent(wire: str, body: Mapping[str, Any]) -> str | None:
    """The system prompt a request body carries, by the rules of its wire; ``None``: none."""
    if wire == "anthropic":
        return body.get("system")
    if wire == "openai-responses":
        return body.get("instructions")
    if wire == "gemini":
        instruction = body.get("systemInstruction")
        return None if instruction is None else instruction["parts"][0]["text"]
    messages = body.get("messages") or []
    system = [message["content"] for message in messages if message.get("role") == "system"]
    assert len(system) <= 1
    return system[0] if system else None


WIRES = {
    "anthropic": "anthropic",
    "openai": "openai-responses",
    "deepseek": "openai-chat",
    "gemini": "gemini",
    "ollama": "ollama",
}


def one_run(
    home: Path, environ: dict[str, str], sim: Simulator, *args: str
) -> tuple[dict[str, Any], str | None, str]:
    """The run's snapshot, the system prompt its one request carried, and its wire."""
    provider = args[args.index("--provider") + 1] if "--provider" in args else "anthropic"
    result = thoughtline(home, environ, "run", *args, "--json")
    assert result.returncode == 0, result.stderr
    snapshot = json.loads(result.stdout)
    assert len(sim.requests) == 1
    body = sim.requests[0].body
    assert body is not None
    return snapshot, system_sent(WIRES[provider], body), provider


@pytest.mark.parametrize("provider", sorted(WIRES))
def test_a_run_with_no_role_sends_no_system_prompt_on_any_wire(
    home: Path, sim: Simulator, environ: dict[str, str], provider: str
) -> None:
    snapshot, system, _wire = one_run(home, environ, sim, "Summarize this", "--provider", provider)
    assert system is None
    body = sim.requests[0].body
    assert body is not None
    assert "senior software engineer" not in json.dumps(body)
    task = snapshot["tasks"][0]
    assert task["role"] == "assistant"
    assert task["name"] == "assistant"
    assert task["persona"] == {"role": "assistant", "source": "default"}


@pytest.mark.parametrize("provider", ["anthropic", "openai", "deepseek"])
def test_system_sends_exactly_the_text_given(
    home: Path, sim: Simulator, environ: dict[str, str], provider: str
) -> None:
    snapshot, system, _wire = one_run(
        home, environ, sim, "Summarize this", "--system", "You are terse.", "--provider", provider
    )
    assert system == "You are terse."
    assert snapshot["tasks"][0]["persona"] == {
        "role": "assistant",
        "source": "system",
        "system": "You are terse.",
    }


def test_a_role_asked_for_sends_its_prompt(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    snapshot, system, _wire = one_run(home, environ, sim, "Review it", "--role", "reviewer")
    assert system == BUILTIN_ROLES["reviewer"]
    assert snapshot["tasks"][0]["persona"] == {"role": "reviewer", "source": "explicit"}


def test_the_configured_default_role_restores_the_engineer(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    (home.parent / "thoughtline.toml").write_text('[defaults]\nrole = "engineer"\n')
    snapshot, system, _wire = one_run(home, environ, sim, "Summarize this")
    assert system == BUILTIN_ROLES["engineer"]
    task = snapshot["tasks"][0]
    assert task["name"] == "engineer"
    assert task["persona"] == {"role": "engineer", "source": "config"}
    shown = thoughtline(home, environ, "config", "--json")
    settings = {entry["key"]: entry for entry in json.loads(shown.stdout)["settings"]}
    assert settings["defaults.role"] == {
        "key": "defaults.role",
        "value": "engineer",
        "source": str(home.parent / "thoughtline.toml"),
    }
    # --system wins over the configured default: it was asked for.
    sim.reset()
    snapshot, system, _wire = one_run(home, environ, sim, "Summarize this", "--system", "Be brief.")
    assert system == "Be brief."
    assert snapshot["tasks"][0]["persona"]["source"] == "system"


def test_status_says_which_persona_and_where_it_came_from(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    plain = thoughtline(home, environ, "run", "Summarize this", "--json")
    assert plain.returncode == 0, plain.stderr
    status = thoughtline(home, environ, "status")
    assert "assistant persona: none, no system prompt\n" in status.stdout
    inline = thoughtline(home, environ, "run", "Summarize this", "--system", "Be brief.")
    assert inline.returncode == 0, inline.stderr
    status = thoughtline(home, environ, "status")
    assert "assistant persona: inline system prompt\n" in status.stdout
    (home.parent / "thoughtline.toml").write_text('[defaults]\nrole = "architect"\n')
    configured = thoughtline(home, environ, "run", "Summarize this")
    assert configured.returncode == 0, configured.stderr
    status = thoughtline(home, environ, "status")
    assert "architect persona: architect ([defaults] role)" in status.stdout


def test_an_unknown_default_role_names_the_file_and_key(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    config = home.parent / "thoughtline.toml"
    config.write_text('[defaults]\nrole = "enginer"\n')
    result = thoughtline(home, environ, "run", "Summarize this")
    assert result.returncode == 2
    assert result.stderr.startswith(f"thoughtline: {config}: defaults.role: Unknown role 'enginer'")
    assert sim.requests == []
    config.write_text('[defaults]\nrole = "Senior Engineer"\n')
    result = thoughtline(home, environ, "run", "Summarize this")
    assert result.returncode == 2
    assert f"{config}: defaults.role: 'Senior Engineer' is not a valid role name" in result.stderr
    assert sim.requests == []


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (
            ("--system", "Be brief.", "--role", "reviewer"),
            "--system gives every task its persona; do not combine it with --role or --plan.",
        ),
        (("--system", "  "), "The system prompt (--system) is empty."),
    ],
)
def test_system_with_a_role_or_empty_is_a_usage_error(
    home: Path, sim: Simulator, environ: dict[str, str], args: tuple[str, ...], sentence: str
) -> None:
    result = thoughtline(home, environ, "run", "Summarize this", *args)
    assert result.returncode == 2
    assert sentence in result.stderr
    assert sim.requests == []


def test_a_follow_up_keeps_the_conversations_persona(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    first = thoughtline(home, environ, "run", "Summarize this", "--system", "You are terse.")
    assert first.returncode == 0, first.stderr
    # A default set later does not change a conversation that had no persona either.
    plain = thoughtline(home, environ, "run", "Summarize that")
    assert plain.returncode == 0, plain.stderr
    (home.parent / "thoughtline.toml").write_text('[defaults]\nrole = "engineer"\n')
    again = thoughtline(home, environ, "run", "-c", "Shorter.", "--json")
    assert again.returncode == 0, again.stderr
    task = json.loads(again.stdout)["tasks"][0]
    assert (task["name"], task["persona"]) == (
        "assistant",
        {"role": "assistant", "source": "default"},
    )
    body = sim.requests[-1].body
    assert body is not None and "system" not in body
    assert len(body["messages"]) == 3  # the earlier request and answer went with it
    first_id = thoughtline(home, environ, "runs", "--json")
    ids = [run["id"] for run in json.loads(first_id.stdout)]
    follow = thoughtline(home, environ, "run", "--continues", ids[-1], "Again.", "--json")
    assert follow.returncode == 0, follow.stderr
    assert json.loads(follow.stdout)["tasks"][0]["persona"]["source"] == "system"
    body = sim.requests[-1].body
    assert body is not None and body["system"] == "You are terse."


def test_a_key_pasted_into_the_system_text_is_redacted_everywhere_the_request_included(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    # A configured key in a persona is a paste gone wrong far more often than an intent:
    # the model is not given it (nor could repeat it), and nothing thoughtline writes
    # holds it: the snapshot, the store, what status prints.
    system = f"You are terse. The deploy key is {CANARY_KEY}."
    snapshot, sent, _wire = one_run(home, environ, sim, "Hi", "--system", system)
    redacted = "You are terse. The deploy key is [REDACTED]."
    assert sent == redacted
    assert CANARY_KEY not in json.dumps(snapshot)
    assert snapshot["tasks"][0]["persona"]["system"] == redacted
    shown = thoughtline(home, environ, "status", "latest")
    assert shown.returncode == 0, shown.stderr
    assert CANARY_KEY not in shown.stdout + shown.stderr
    written = list(files_under(home))
    assert written  # the store, at least
    for path, data in written:
        assert CANARY_KEY.encode() not in data, path
