"""``thoughtline run -m ID`` with an id that could move the request (and the endpoint's
key) off the wire's model path: one sentence, exit 2, nothing stored or sent; the same
id in a plan file or the config names the file and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_run_cli import thoughtline
from tests.support import HOSTILE_MODEL_IDS
from thoughtline.model.requests import model_id_problem
from thoughtline.testing import Simulator

pytestmark = pytest.mark.slow  # the command line as a user runs it: one process per command


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def stored_run_ids(home: Path, environ: dict[str, str]) -> list[str]:
    listed = thoughtline(home, environ, "runs", "--json")
    assert listed.returncode == 0, listed.stderr
    return [run["id"] for run in json.loads(listed.stdout)]


@pytest.mark.parametrize("model", HOSTILE_MODEL_IDS)
def test_a_model_id_that_is_not_one_is_one_sentence_and_exit_2(
    home: Path, sim: Simulator, environ: dict[str, str], model: str
) -> None:
    result = thoughtline(home, environ, "run", "x", "-p", "gemini", "-m", model)
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"thoughtline: {model_id_problem(model)}\n"
    assert result.stdout == ""
    assert stored_run_ids(home, environ) == []
    assert sim.requests == []
    assert sim.unrouted == []


def test_a_follow_up_a_plan_and_the_config_refuse_it_too(
    home: Path, sim: Simulator, environ: dict[str, str]
) -> None:
    earlier = thoughtline(home, environ, "run", "x", "-p", "gemini", "--json")
    assert earlier.returncode == 0, earlier.stderr
    earlier_id = json.loads(earlier.stdout)["id"]
    sent = list(sim.requests)

    follow_up = thoughtline(home, environ, "run", "more", "-c", "-m", "m:other#frag")
    assert (follow_up.returncode, follow_up.stderr) == (
        2,
        f"thoughtline: {model_id_problem('m:other#frag')}\n",
    )

    plan = home.parent / "plan.toml"
    plan.write_text(
        'request = "x"\n[[task]]\nrole = "architect"\nprovider = "gemini"\n'
        'model = "../../../evil"\n',
        encoding="utf-8",
    )
    planned = thoughtline(home, environ, "run", "--plan", str(plan))
    assert (planned.returncode, planned.stderr) == (
        2,
        f"thoughtline: {plan}: task[0].model: {model_id_problem('../../../evil')}\n",
    )

    config = home.parent / "thoughtline.toml"  # the working directory's config
    config.write_text('[defaults]\nprovider = "gemini"\nmodel = "x/../../v1/files?q="\n')
    configured = thoughtline(home, environ, "run", "x")
    assert (configured.returncode, configured.stderr) == (
        2,
        f"thoughtline: {config}: defaults.model: {model_id_problem('x/../../v1/files?q=')}\n",
    )
    config.unlink()

    assert stored_run_ids(home, environ) == [earlier_id]
    assert sim.requests == sent
    assert sim.unrouted == []
