"""``thoughtline export RUN --format md|json`` as a user runs it: a real subprocess
against the simulator, a real store; the record holds the reasoning the mode allows and
nothing else, and hostile text cannot break its structure."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli.test_run_cli import thoughtline
from tests.runtime.test_disclosure_e2e import CANARY, TRANSCRIPT
from thoughtline.testing import SimReasoning, Simulator, Transcript

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.mark.parametrize("mode", ["hidden", "surface", "telemetry_only", "surface_and_telemetry"])
def test_export_writes_the_record_with_the_reasoning_the_mode_allows(
    home: Path, sim: Simulator, environ: dict[str, str], mode: str
) -> None:
    sim.default_transcript = TRANSCRIPT
    started = thoughtline(
        home, environ, "run", "Design a cache", "--chain-of-thought", mode, "--json"
    )
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["id"]

    record = thoughtline(home, environ, "export", run_id)
    assert record.returncode == 0, record.stderr
    text = record.stdout
    assert text.startswith(f"# Run {run_id}\n")
    assert "## Request\n\n```\nDesign a cache\n```" in text
    assert f"### Answer\n\n{TRANSCRIPT.answer}" in text
    assert f"- chain of thought: {mode} (from explicit)" in text
    assert "Tokens: input " in text
    # The default model is priced from the pinned data, the run and each task.
    assert re.search(
        r"^- cost \$[0-9.]+(, reasoning \$[0-9.]+ of it)? \(genai-prices 0\.2\.3\)$", text, re.M
    )
    assert re.search(r"^Cost \$[0-9.]+.* \(genai-prices 0\.2\.3\)\.$", text, re.M)
    shows_reasoning = mode in ("surface", "surface_and_telemetry")
    assert (CANARY in text) is shows_reasoning
    assert ("### Reasoning" in text) is shows_reasoning
    if not shows_reasoning:
        assert "\n> " in text  # the notice says what happened to the reasoning

    as_json = thoughtline(home, environ, "export", run_id[:12], "--format", "json")
    assert as_json.returncode == 0, as_json.stderr
    snapshot = json.loads(as_json.stdout)
    assert snapshot["id"] == run_id
    assert (CANARY in as_json.stdout) is shows_reasoning


def test_export_to_a_file_replaces_it_whole_and_hostile_text_stays_inside_its_fence(
    home: Path, sim: Simulator, environ: dict[str, str], tmp_path: Path
) -> None:
    hostile = "```\n# Not a heading\n````` and \x1b[31mred\x1b[0m"
    sim.default_transcript = Transcript(
        answer="Fine.", reasoning=(SimReasoning(kind="summary", text=hostile, signature="s"),)
    )
    started = thoughtline(home, environ, "run", hostile, "--chain-of-thought", "surface", "--json")
    assert started.returncode == 0, started.stderr
    target = tmp_path / "record.md"
    target.write_text("an older record", encoding="utf-8")
    written = thoughtline(home, environ, "export", "latest", "-o", str(target))
    assert written.returncode == 0, written.stderr
    assert written.stdout == ""
    assert f"wrote {target}" in written.stderr
    text = target.read_text(encoding="utf-8")
    assert "an older record" not in text
    # The request and the reasoning each sit in a fence of six backticks (their longest
    # run is five), exactly as written: none of their lines is a heading of the record.
    assert text.count(f"\n``````\n{hostile}\n``````\n") == 2
    outside = re.sub(r"\n(`{3,})\n.*?\n\1\n", "\n", text, flags=re.DOTALL)
    headings = [line for line in outside.splitlines() if line.startswith("#")]
    run_id = json.loads(started.stdout)["id"]
    assert headings == [
        f"# Run {run_id}", "## Request", "## assistant (done)", "### Reasoning", "### Answer",
    ]  # fmt: skip
    assert list(tmp_path.glob(".record.md.*")) == []


def test_export_of_an_unknown_run_says_so_and_writes_nothing(
    home: Path, sim: Simulator, environ: dict[str, str], tmp_path: Path
) -> None:
    target = tmp_path / "record.md"
    missing = thoughtline(home, environ, "export", "run_nope", "-o", str(target))
    assert missing.returncode != 0
    assert "No run 'run_nope'" in missing.stderr or "No runs yet" in missing.stderr
    assert "Traceback" not in missing.stderr
    assert not target.exists()


def test_export_on_a_terminal_shows_control_characters_instead_of_sending_them(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    from tests.cli.test_terminal import run_on_pty

    sim.default_transcript = Transcript(answer="Fine \x1b[31mred\x1b[0m.")
    started = thoughtline(home, environ, "run", "x", "--json")
    assert started.returncode == 0, started.stderr
    code, shown = run_on_pty(home, environ, "export", "latest")
    assert code == 0, shown
    assert "Fine \u241b[31mred\u241b[0m." in shown
    assert "\x1b[31m" not in shown
