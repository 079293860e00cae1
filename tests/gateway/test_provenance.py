"""The gateway's provenance of handed-out carriers, on its own: bound to the client,
endpoint and model (and a signature to its text), shared by daemons on one home, bounded
on disk, and never holding a carrier."""

from __future__ import annotations

from pathlib import Path

from thoughtline.model.parts import ReasoningPart
from thoughtline.server.gateway.provenance import DIGEST_BYTES, DIGESTS_FILE, Provenance


def signed(text: str, signature: str) -> ReasoningPart:
    return ReasoningPart(kind="summary", text=text, provider_metadata={"signature": signature})


def test_a_carrier_is_accepted_only_as_handed_out(tmp_path: Path) -> None:
    provenance = Provenance(tmp_path, max_digests=100)
    part = signed("I think.", "sig-1")
    provenance.vouch("app", "anthropic", "claude-sonnet-4-6", [part])
    assert provenance.accepts("app", "anthropic", "claude-sonnet-4-6", part)
    assert not provenance.accepts("app", "anthropic", "claude-opus-4-6", part)
    assert not provenance.accepts("other", "anthropic", "claude-sonnet-4-6", part)
    assert not provenance.accepts(
        "app", "anthropic", "claude-sonnet-4-6", signed("Edited.", "sig-1")
    )
    assert not provenance.accepts("app", "anthropic", "claude-sonnet-4-6", signed("I think.", "x"))


def test_a_part_the_gate_changed_is_never_vouched_for(tmp_path: Path) -> None:
    provenance = Provenance(tmp_path, max_digests=100)
    redacted = ReasoningPart(
        kind="summary", text="[REDACTED]", provider_metadata={"signature": "s"}, withheld="key"
    )
    provenance.vouch("app", "anthropic", "claude-sonnet-4-6", [redacted])
    assert not provenance.accepts("app", "anthropic", "claude-sonnet-4-6", redacted)


def test_daemons_on_one_home_share_what_they_handed_out(tmp_path: Path) -> None:
    first = Provenance(tmp_path, max_digests=100)
    second = Provenance(tmp_path, max_digests=100)  # started before the first vouched
    part = ReasoningPart(kind="raw", text="DeepSeek's own reasoning.")
    first.vouch("app", "deepseek", "deepseek-v4-pro", [part])
    assert second.accepts("app", "deepseek", "deepseek-v4-pro", part)


def test_the_file_keeps_the_latest_digests_and_no_carrier(tmp_path: Path) -> None:
    provenance = Provenance(tmp_path, max_digests=10)
    parts = [signed(f"thought {n}", f"sig-{n}") for n in range(25)]
    for part in parts:
        provenance.vouch("app", "anthropic", "claude-sonnet-4-6", [part])
    data = (tmp_path / DIGESTS_FILE).read_bytes()
    assert len(data) <= 2 * 10 * DIGEST_BYTES and len(data) % DIGEST_BYTES == 0
    assert b"sig-" not in data and b"thought" not in data
    restarted = Provenance(tmp_path, max_digests=10)
    assert restarted.accepts("app", "anthropic", "claude-sonnet-4-6", parts[-1])
    assert not restarted.accepts("app", "anthropic", "claude-sonnet-4-6", parts[0])
