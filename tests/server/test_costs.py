"""What a run cost, as the daemon's snapshot says it: a model without a price is
``unknown`` with its reason, a priced one its amount (figures from genai-prices 0.2.3)."""

from __future__ import annotations

import pytest

from tests.cli.test_cost_cli import OLLAMA_REASON, USAGE
from tests.server.conftest import StartDaemon
from tests.server.support import start_run, wait_for_status
from thoughtline.testing import Simulator


def test_the_daemon_snapshot_shows_unknown_and_known_costs(
    start_daemon: StartDaemon, sim: Simulator
) -> None:
    sim.script(USAGE)
    daemon = start_daemon()
    with daemon.client() as client:
        unknown_id = start_run(client, provider="ollama", model="qwen3:8b")
        known_id = start_run(client, provider="openai", model="o4-mini")
        unknown = wait_for_status(client, unknown_id, {"completed"})
        known = wait_for_status(client, known_id, {"completed"})
    assert unknown["tasks"][0]["cost"]["amount"] is None
    assert unknown["tasks"][0]["cost"]["unknown_reason"] == OLLAMA_REASON
    assert unknown["cost"]["amount"] is None
    # o4-mini: 10,000 x $1.10 + 2,000 x $4.40 per million = $0.0198.
    assert known["tasks"][0]["cost"]["amount"] == pytest.approx(0.0198, abs=1e-12)
    assert known["cost"]["amount"] == pytest.approx(0.0198, abs=1e-12)
