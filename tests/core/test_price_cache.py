"""The price data's prices kept under the home (``config/price_cache.py``): a second run
in a home prices its call without loading the data, at the same figure; a kept price
is used only for the data it came from and the dates it holds for; a price that changes
within a day is never kept; a damaged file is ignored and replaced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from thoughtline.config.price_cache import CACHE_FILE, FORMAT, PriceCache, data_identity
from thoughtline.config.pricing import Pricer
from thoughtline.records import TaskUsage

USAGE = TaskUsage(input_tokens=10_000, output_tokens=2_000, reasoning_tokens=640)
# claude-sonnet-4-5: $3 input, $15 output per million tokens: 0.03 + 0.03.
SONNET_COST = 0.06

CHILD = """
import json, sys
from thoughtline.cli import main
sys.argv = ["thoughtline", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps(sorted(name for name in sys.modules if "." not in name)), file=sys.stderr)
"""


def bogus_entry(*, until: str | None = None) -> dict[str, object]:
    """A kept price no data holds ($1,000 in and out), to see whether it is used."""
    rate = {"base": "1000", "tiers": []}
    return {
        "since": None,
        "until": until,
        "prices": {
            "rates": {
                "input": rate,
                "output": rate,
                "cached_input": None,
                "cache_write": None,
                "reasoning": None,
            },
            "source": "genai-prices 0.2.3",
            "model_ref": "claude-sonnet-4-5",
        },
    }


def write_cache(home: Path, entries: dict[str, object], *, data: str | None = None) -> Path:
    path = home / CACHE_FILE
    body = {"format": FORMAT, "data": data or data_identity(), "entries": entries}
    path.write_text(json.dumps(body), encoding="utf-8")
    return path


def priced(home: Path, model: str = "claude-sonnet-4-5") -> float | None:
    """A call to ``model`` priced by a fresh pricer with the home's cache, as a new
    process's runtime prices it."""
    return Pricer(cache=PriceCache.under(home)).price("anthropic", model, USAGE).amount


@pytest.mark.slow
def test_a_second_run_in_a_home_prices_its_call_without_loading_the_price_data(
    tmp_path: Path, environ: dict[str, str]
) -> None:
    child_environ = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("THOUGHTLINE_", "OTEL_"))
    }
    child_environ |= environ | {"THOUGHTLINE_HOME": str(tmp_path)}
    arguments = ["run", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--json", "x"]
    costs, imported = [], []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", CHILD, json.dumps(arguments)],
            cwd=tmp_path,
            env=child_environ,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        costs.append(json.loads(done.stdout)["tasks"][0]["cost"])
        imported.append(set(json.loads(done.stderr.strip().splitlines()[-1])))
    assert "genai_prices" in imported[0]  # the first run looked the price up
    assert "genai_prices" not in imported[1], "the second run loaded the price data again"
    assert costs[1] == costs[0] and costs[0]["amount"] is not None
    assert costs[0]["source"] == "genai-prices 0.2.3"


def test_a_kept_price_is_what_the_data_gave(tmp_path: Path) -> None:
    assert priced(tmp_path) == SONNET_COST  # looked up, kept
    kept = json.loads((tmp_path / CACHE_FILE).read_text(encoding="utf-8"))
    assert set(kept["entries"]) == {"anthropic/claude-sonnet-4-5"}
    assert priced(tmp_path) == SONNET_COST  # read back


def test_a_kept_price_is_used_while_it_holds(tmp_path: Path) -> None:
    # The control for the two tests below: the same file, for this data and today.
    write_cache(tmp_path, {"anthropic/claude-sonnet-4-5": bogus_entry()})
    assert priced(tmp_path) == 12.0  # 12,000 tokens at $1,000 a million: the kept price


def test_a_price_kept_for_other_data_is_not_used(tmp_path: Path) -> None:
    path = write_cache(
        tmp_path, {"anthropic/claude-sonnet-4-5": bogus_entry()}, data="/elsewhere/data.py:1:2"
    )
    assert priced(tmp_path) == SONNET_COST
    assert json.loads(path.read_text(encoding="utf-8"))["data"] == data_identity()


def test_a_price_kept_until_a_date_passed_is_not_used(tmp_path: Path) -> None:
    today = datetime.now(UTC).date()
    until = today - timedelta(days=1)
    write_cache(tmp_path, {"anthropic/claude-sonnet-4-5": bogus_entry(until=until.isoformat())})
    assert priced(tmp_path) == SONNET_COST


def test_a_price_that_changes_within_a_day_is_never_kept(tmp_path: Path) -> None:
    # deepseek-reasoner costs less at night (16:30-00:30 UTC): kept, a run at 16:29
    # would price the next one, at 16:31, at the day's prices.
    cost = Pricer(cache=PriceCache.under(tmp_path)).price("deepseek", "deepseek-reasoner", USAGE)
    assert cost.amount is not None
    assert not (tmp_path / CACHE_FILE).exists()


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        json.dumps({"format": FORMAT + 1, "entries": {}}),
        json.dumps({"format": FORMAT, "data": None, "entries": []}),
        "",
    ],
)
def test_a_damaged_cache_is_ignored_and_replaced(tmp_path: Path, content: str) -> None:
    path = tmp_path / CACHE_FILE
    path.write_text(content, encoding="utf-8")
    assert priced(tmp_path) == SONNET_COST
    kept = json.loads(path.read_text(encoding="utf-8"))
    assert kept["format"] == FORMAT and "anthropic/claude-sonnet-4-5" in kept["entries"]


def test_a_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    entry = bogus_entry()
    entry["prices"] = {"rates": {"input": {"base": "lots", "tiers": []}}}
    write_cache(tmp_path, {"anthropic/claude-sonnet-4-5": entry})
    assert priced(tmp_path) == SONNET_COST


def test_the_cache_file_is_private(tmp_path: Path) -> None:
    priced(tmp_path)
    assert (tmp_path / CACHE_FILE).stat().st_mode & 0o777 == 0o600


def test_a_cache_that_cannot_be_written_leaves_the_price_right(tmp_path: Path) -> None:
    (tmp_path / CACHE_FILE).mkdir()  # a folder where the file goes
    assert priced(tmp_path) == SONNET_COST
    assert priced(tmp_path) == SONNET_COST
    assert [path.name for path in tmp_path.iterdir()] == [CACHE_FILE]  # no file left over
