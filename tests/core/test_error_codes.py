"""The error codes are one closed set: every code docs/contracts.md documents is in
``ErrorCode`` and every ``ErrorCode`` is documented, so a new code cannot ship unseen."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from thoughtline.errors import ErrorCode

CONTRACTS = Path(__file__).resolve().parents[2] / "docs" / "contracts.md"


def documented_codes() -> set[str]:
    text = CONTRACTS.read_text(encoding="utf-8")
    section = text.split("\n## Error codes\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([A-Z][A-Z_]+)` \|", section, flags=re.MULTILINE))


def test_every_documented_code_is_an_error_code_and_every_error_code_is_documented() -> None:
    codes = set(get_args(ErrorCode))
    documented = documented_codes()
    assert len(documented) > 60  # the tables were read
    assert documented - codes == set(), "documented but not in ErrorCode"
    assert codes - documented == set(), "in ErrorCode but not documented"
