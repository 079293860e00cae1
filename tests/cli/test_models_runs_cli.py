"""``thoughtline models``, "did you mean" on a model the provider does not know, and
``thoughtline runs`` filters, as a user runs them: real subprocesses against the
simulator, a real store under a temporary THOUGHTLINE_HOME."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.cli.test_run_cli import home, thoughtline
from tests.conftest import CANARY_KEY
from tests.runtime.test_disclosure_e2e import CANARY, TRANSCRIPT, all_bytes_under
from thoughtline.cli.runs_command import since_timestamp
from thoughtline.providers.capabilities import builtin_capabilities
from thoughtline.providers.discovery import CachedCapabilityTable
from thoughtline.records import short_run_id
from thoughtline.testing import Fault, Simulator

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command

__all__ = ["home"]  # the fixture, shared with test_run_cli


def test_models_lists_each_known_id_with_what_it_returns(
    home: Path, environ: dict[str, str]
) -> None:
    listed = thoughtline(home, environ, "models")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "  claude-sonnet-4-6  summary, redacted, encrypted  effort: yes" in lines
    assert "  claude-3-7-sonnet  raw, redacted, encrypted      effort: yes" in lines
    [gpt4] = [line for line in lines if line.startswith("  gpt-4.1 ")]
    assert gpt4.split()[1:] == ["none", "effort:", "no"]
    assert "deepseek-reasoner" in listed.stdout and "gemini-2.5-flash" in listed.stdout
    # Every configured provider has a heading, including those the data names no ids for.
    for provider in ("anthropic", "openai", "openrouter", "gemini", "deepseek", "vllm"):
        assert provider in lines

    one = thoughtline(home, environ, "models", "openai", "--json")
    assert one.returncode == 0, one.stderr
    report = json.loads(one.stdout)
    [openai] = report["providers"]
    assert openai["name"] == "openai"
    ids = [model["id"] for model in openai["models"]]
    assert ids == builtin_capabilities().model_ids("openai")
    by_id = {model["id"]: model for model in openai["models"]}
    assert by_id["gpt-5.5"]["returns"] == ["summary", "encrypted"]
    assert by_id["gpt-5.5"]["effort"] is True
    assert by_id["gpt-4o"] | {"returns": [], "effort": False} == by_id["gpt-4o"]
    assert openai["other_models"]["family"] == "openai-gpt-5-x"


def test_models_names_the_known_providers_for_an_unknown_one(
    home: Path, environ: dict[str, str]
) -> None:
    unknown = thoughtline(home, environ, "models", "antropic")
    assert unknown.returncode == 2
    assert unknown.stdout == ""
    assert unknown.stderr == (
        "thoughtline: No provider 'antropic'; known providers: anthropic, openai, "
        "openrouter, gemini, deepseek, ollama, vllm, llamacpp.\n"
    )


def test_every_listed_id_is_taken_for_its_own_family() -> None:
    """A ``models`` entry that matched another family would list the wrong reasoning."""
    table = builtin_capabilities()
    for family in table.families:
        for model in family.models:
            for endpoint in family.endpoints:
                if endpoint != "*":
                    assert table.lookup(endpoint, model).family == family.family, model


def test_a_model_the_provider_does_not_know_gets_a_did_you_mean(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.inject(Fault.http_error(404, "model: claude-sonet-4-6"), profile="anthropic")
    failed = thoughtline(
        home,
        environ,
        "run",
        "x",
        "--provider",
        "anthropic",
        "--model",
        "claude-sonet-4-6",
        "--json",
    )
    assert failed.returncode != 0
    [task] = json.loads(failed.stdout)["tasks"]
    assert task["error"]["code"] == "PROVIDER_NOT_FOUND"
    assert task["error"]["message"].endswith("Did you mean claude-sonnet-4-6?")
    assert "Did you mean claude-sonnet-4-6?" in failed.stderr
    assert len(sim.requests) == 1  # the typo was sent: the data does not refuse ids

    # An id nothing is close to: the provider's answer alone, no guess.
    sim.inject(Fault.http_error(404, "model: banana"), profile="anthropic")
    far = thoughtline(
        home, environ, "run", "x", "--provider", "anthropic", "--model", "banana", "--json"
    )
    [task] = json.loads(far.stdout)["tasks"]
    assert task["error"]["code"] == "PROVIDER_NOT_FOUND"
    assert "Did you mean" not in task["error"]["message"] + far.stderr

    # An unknown id the provider accepts runs as usual.
    sim.script(TRANSCRIPT)
    fine = thoughtline(
        home, environ, "run", "x", "--provider", "anthropic", "--model", "claude-sonet-9"
    )
    assert fine.returncode == 0, fine.stderr
    assert "Did you mean" not in fine.stderr


def _run(home: Path, environ: dict[str, str], *args: str) -> str:
    result = thoughtline(home, environ, "run", *args, "--json")
    assert result.returncode == 0, result.stderr
    return str(json.loads(result.stdout)["id"])


def _at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _listed(home: Path, environ: dict[str, str], *args: str) -> list[str]:
    result = thoughtline(home, environ, "runs", *args, "--json")
    assert result.returncode == 0, result.stderr
    return [run["id"] for run in json.loads(result.stdout)]


def test_runs_filters_combine_and_the_table_shows_model_time_and_tokens(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    sim.script(TRANSCRIPT)
    review = _run(home, environ, "Review the PATCH please", "--provider", "deepseek")
    summary = _run(
        home, environ, "summarise the log", "--provider", "anthropic", "--role", "reviewer"
    )
    sim.inject(Fault.http_error(400, "bad request (simulated)"), profile="openai")
    failed = thoughtline(home, environ, "run", "review it", "--provider", "openai", "--json")
    broken = json.loads(failed.stdout)["id"]
    assert json.loads(failed.stdout)["status"] == "failed"

    assert _listed(home, environ) == [broken, summary, review]
    assert _listed(home, environ, "--status", "completed") == [summary, review]
    assert _listed(home, environ, "--status", "failed") == [broken]
    assert _listed(home, environ, "--model", "deepseek-reasoner") == [review]
    assert _listed(home, environ, "--role", "reviewer") == [summary]
    assert _listed(home, environ, "--search", "REVIEW") == [broken, review]
    assert _listed(home, environ, "--search", "review", "--status", "completed") == [review]
    assert _listed(home, environ, "--since", "1h") == [broken, summary, review]
    assert _listed(home, environ, "--since", "2999-01-01") == []
    assert _listed(home, environ, "--since", "2000-01-01T00:00:00+02:00", "--limit", "1") == [
        broken
    ]
    # The JSON keeps its shape: run snapshots, each task with its model and usage.
    [snapshot] = json.loads(
        thoughtline(home, environ, "runs", "--model", "deepseek-reasoner", "--json").stdout
    )
    assert snapshot["schema"] == "thoughtline.run/v1"
    tokens = (
        snapshot["tasks"][0]["usage"]["input_tokens"]
        + snapshot["tasks"][0]["usage"]["output_tokens"]
    )

    table = thoughtline(home, {**environ, "COLUMNS": "80"}, "runs")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert lines[0].split() == ["run", "status", "model", "time", "cost", "tokens", "request"]
    [row] = [line for line in lines if line.startswith(short_run_id(review))]
    cells = row.split()
    assert cells[1] == "completed"
    assert cells[2].startswith("deepsee")
    # The time is the task's own, not the process's start-up before it.
    timings = snapshot["tasks"][0]["timings"]
    ran = (_at(timings["finished_at"]) - _at(timings["started_at"])).total_seconds()
    assert cells[3] == (f"{ran * 1000:.0f}ms" if ran < 0.1 else f"{ran:.1f}s")
    assert cells[4] == f"${snapshot['cost']['amount']:.4f}"
    assert cells[5] == str(tokens)
    [failed_row] = [line for line in lines if line.startswith(short_run_id(broken))]
    assert failed_row.split()[4] in ("?", "$0.0000")
    wide = thoughtline(home, {**environ, "COLUMNS": "200"}, "runs")
    assert "deepseek-reasoner" in wide.stdout and "Review the PATCH please" in wide.stdout
    assert "chain_of_thought" in wide.stdout.splitlines()[0]

    # Hidden (the default): the canary went nowhere.
    assert CANARY not in table.stdout + wide.stdout
    assert CANARY.encode() not in all_bytes_under(home)
    assert CANARY_KEY not in table.stdout + wide.stdout


def test_runs_refuses_a_since_it_cannot_read(home: Path, environ: dict[str, str]) -> None:
    for bad in ("yesterday", "7x", "2026-13-01", "-3d"):
        refused = thoughtline(home, environ, "runs", "--since", bad)
        assert refused.returncode == 2, bad
        assert refused.stdout == ""
        assert refused.stderr == (
            f"thoughtline: --since '{bad}' is neither an age (30m, 12h, 7d, 2w) nor an ISO "
            "date or time (2026-12-01, 2026-12-01T09:30).\n"
        )
    mixed = thoughtline(home, environ, "runs", "--conversation", "latest", "--status", "failed")
    assert mixed.returncode == 2
    assert mixed.stderr == (
        "thoughtline: --conversation lists a whole conversation; give it alone.\n"
    )


def test_since_reads_ages_and_iso_times_as_utc_timestamps() -> None:
    now = datetime(2026, 12, 2, 10, 0, 0, tzinfo=UTC)
    assert since_timestamp("30m", now=now) == "2026-12-02T09:30:00.000Z"
    assert since_timestamp("12h", now=now) == "2026-12-01T22:00:00.000Z"
    assert since_timestamp("7d", now=now) == "2026-11-25T10:00:00.000Z"
    assert since_timestamp("2w", now=now) == "2026-11-18T10:00:00.000Z"
    assert since_timestamp("2026-12-01", now=now) == "2026-12-01T00:00:00.000Z"
    assert since_timestamp("2026-12-01T09:30+02:00", now=now) == "2026-12-01T07:30:00.000Z"
    assert since_timestamp("2026-12-01T09:30:00Z", now=now) == "2026-12-01T09:30:00.000Z"


def test_ids_the_provider_model_api_listed_are_known_too() -> None:
    table = CachedCapabilityTable(
        builtin_capabilities(),
        {"anthropic": {"claude-novel-7": {"thinking_control": "adaptive", "efforts": []}}},
    )
    assert table.model_ids("anthropic")[-1] == "claude-novel-7"
    assert table.did_you_mean("anthropic", "claude-novle-7") == "claude-novel-7"
    assert table.did_you_mean("anthropic", "claude-novel-7") is None  # known: no guess


def test_models_says_what_hidden_mode_asks_each_server_for(
    home: Path, environ: dict[str, str]
) -> None:
    listed = thoughtline(home, environ, "models")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    sections = "\n".join(lines).split("\n\n")
    by_provider = {section.splitlines()[0]: section for section in sections}
    assert "  hidden: think: false, for qwen3, any other id" in by_provider["ollama"]
    assert (
        "  hidden: nothing (no request turns its reasoning off), for gpt-oss"
        in (by_provider["ollama"])
    )
    assert (
        "  hidden: thinking.type: disabled; nothing with tools (the loop needs"
        in (by_provider["deepseek"])
    )
    assert "deepseek-reasoner" in by_provider["deepseek"].split("hidden: nothing")[1]
    for server in ("vllm", "llamacpp"):
        assert "  hidden: chat_template_kwargs.enable_thinking: false" in by_provider[server]
    assert "  hidden: reasoning.exclude: true; nothing with tools" in by_provider["openrouter"]

    as_json = thoughtline(home, environ, "models", "deepseek", "--json")
    assert as_json.returncode == 0, as_json.stderr
    [deepseek] = json.loads(as_json.stdout)["providers"]
    by_id = {model["id"]: model for model in deepseek["models"]}
    assert by_id["deepseek-chat"]["hidden"]["sends"] == {"thinking": {"type": "disabled"}}
    assert by_id["deepseek-chat"]["hidden_with_tools"]["sends"] == {}
    assert by_id["deepseek-reasoner"]["hidden"]["sends"] == {}
    assert by_id["deepseek-reasoner"]["always_reasons"] is True
