"""A gateway client's runs through the command line: ``runs --client NAME`` lists them,
``usage --by client`` sums their tasks, both read from the store the daemon wrote."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_run_cli import thoughtline
from tests.gateway.conftest import StartGateway
from thoughtline.testing import Simulator, Transcript


@pytest.mark.slow  # a daemon, then the command line in processes
def test_runs_and_usage_by_client(
    start_gateway: StartGateway, sim: Simulator, environ: dict[str, str]
) -> None:
    gateway = start_gateway(clients={"editor": {}, "bot": {}})
    sim.script(Transcript(answer="Hi.", input_tokens=40, output_tokens=7), times=3)
    for name in ("editor", "editor", "bot"):
        gateway.openai(name).chat.completions.create(
            model="deepseek/deepseek-v4-pro", messages=[{"role": "user", "content": name}]
        )
    home = gateway.daemon.home
    gateway.daemon.close()
    listed = thoughtline(home, environ, "runs", "--client", "editor", "--json")
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)
    assert [(run["client"], run["source"], run["request"]) for run in runs] == [
        ("editor", "gateway", "editor")
    ] * 2
    nobody = thoughtline(home, environ, "runs", "--client", "nobody", "--json")
    assert json.loads(nobody.stdout) == []
    usage = thoughtline(home, environ, "usage", "--by", "client", "--json")
    assert usage.returncode == 0, usage.stderr
    groups = {group["key"]: group for group in json.loads(usage.stdout)["groups"]}
    assert (groups["editor"]["tasks"], groups["bot"]["tasks"]) == (2, 1)
    assert groups["editor"]["tokens"]["output_tokens"] == 14
