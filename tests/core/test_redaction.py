"""Credential redaction: headers, URLs, key shapes and exact loaded values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from thoughtline.providers.redaction import REDACTED, Redactor, shown_url

CANARY_KEY = "tl-canary-key-6f1d2c9e8b7a"


def test_headers_are_redacted_by_name_and_value() -> None:
    redactor = Redactor([CANARY_KEY])
    headers = redactor.headers(
        {
            "X-Api-Key": CANARY_KEY,
            "Authorization": f"Bearer {CANARY_KEY}",
            "x-goog-api-key": "AIza" + "a" * 35,
            "Cookie": "session=abc",
            "x-custom": f"prefix {CANARY_KEY} suffix",
            "content-type": "application/json",
        }
    )
    assert headers == {
        "X-Api-Key": REDACTED,
        "Authorization": REDACTED,
        "x-goog-api-key": REDACTED,
        "Cookie": REDACTED,
        "x-custom": f"prefix {REDACTED} suffix",
        "content-type": "application/json",
    }


def test_url_query_keys_and_userinfo_are_redacted() -> None:
    redactor = Redactor()
    url = redactor.url("https://user:hunter2secret@example.test/v1?key=abc123&alt=sse&token=zz")
    assert "abc123" not in url and "hunter2secret" not in url and "token=zz" not in url
    assert "alt=sse" in url


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("http://user:pw-1@h:8/mcp", "http://user:***@h:8/mcp"),
        # A lone user name is often the token itself (https://TOKEN@host).
        ("https://ghp_token@h/x", "https://***@h/x"),
        ("http://:pw-1@h/", "http://***@h/"),
        ("http://u:p@ss@h/", "http://u:***@h/"),  # an unencoded "@" in the password
        (
            "postgres://u:p%40ss@[::1]:7/d?sslmode=require",
            "postgres://u:***@[::1]:7/d?sslmode=require",
        ),
        (
            "https://h/v1?Key=abc&alt=sse&X-Amz-Signature=s#f",
            "https://h/v1?Key=***&alt=sse&X-Amz-Signature=***#f",
        ),
        ("https://h/v1?api%5Fkey=abc", "https://h/v1?api%5Fkey=***"),
        ("https://h/v1", "https://h/v1"),
        ("no URL here: key=abc", "no URL here: key=abc"),
        (
            "Cannot reach a at http://u:pw-1@h:1/v1 (refused); see http://t0k@g/?token=z",
            "Cannot reach a at http://u:***@h:1/v1 (refused); see http://***@g/?token=***",
        ),
    ],
)
def test_a_shown_url_masks_its_credentials_and_keeps_the_rest_as_written(
    written: str, shown: str
) -> None:
    assert shown_url(written) == shown


def test_known_key_shapes_in_text() -> None:
    text = (
        '{"k": "sk-ant-api03-' + "A" * 40 + '", "o": "sk-proj-' + "b" * 40 + '", '
        '"r": "sk-or-v1-' + "c" * 40 + '", "g": "AIza' + "d" * 35 + '"}'
    )
    redacted = Redactor().text(text)
    assert redacted.count(REDACTED) == 4
    assert "sk-" not in redacted and "AIza" not in redacted


def test_exact_secret_values_are_removed_everywhere_in_bytes() -> None:
    body = f'{{"echo": "{CANARY_KEY}", "text": "é"}}'.encode()
    assert CANARY_KEY.encode() not in Redactor([CANARY_KEY]).bytes(body)
    assert "é".encode() in Redactor([CANARY_KEY]).bytes(body)


def test_short_values_are_not_treated_as_secrets() -> None:
    assert Redactor(["abc"]).text("abc is fine") == "abc is fine"


def test_ordinary_text_is_left_alone() -> None:
    text = "The model reasoned about sk- prefixes and keys in general."
    assert Redactor().text(text) == text


# -- streaming: loaded values cut across pieces -----------------------------------------

# Secrets that overlap and share prefixes, from the same small alphabet as the text, so
# random texts keep almost completing one of them.
STREAM_SECRETS = ("abcab-cab", "abcabc", "ba-ba-ba-c", "cccccc")


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({cut % (len(text) + 1) for cut in cuts})
    pieces, start = [], 0
    for point in points:
        pieces.append(text[start:point])
        start = point
    pieces.append(text[start:])
    return pieces


def _stream(redactor: Redactor, pieces: list[str]) -> list[str]:
    stream = redactor.stream()
    released = [stream.feed(piece) for piece in pieces]
    released.append(stream.flush())
    return released


fragments = st.one_of(
    st.sampled_from(STREAM_SECRETS),
    st.sampled_from(STREAM_SECRETS).map(lambda secret: secret[: len(secret) // 2 + 1]),
    st.text(alphabet="abc- ", max_size=6),
)


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(fragments, max_size=14),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
    secret_count=st.integers(min_value=1, max_value=len(STREAM_SECRETS)),
)
def test_stream_redaction_equals_whole_text_redaction_for_any_split(
    parts: list[str], cuts: list[int], secret_count: int
) -> None:
    secrets = STREAM_SECRETS[:secret_count]
    redactor = Redactor(secrets)
    whole = "".join(parts)
    released = "".join(_stream(redactor, _split(whole, cuts)))
    assert released == redactor.values(whole) == redactor.text(whole)
    for secret in secrets:
        assert secret not in released


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet="abc- ", max_size=40),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
)
def test_stream_holds_back_only_an_open_prefix_of_a_secret(text: str, cuts: list[int]) -> None:
    redactor = Redactor(STREAM_SECRETS)
    stream = redactor.stream()
    fed = ""
    released = ""
    for piece in _split(text, cuts):
        fed += piece
        released += stream.feed(piece)
        held = fed[len(fed) - len(stream._held) :] if stream._held else ""
        assert stream._held == held
        # What is held could still become a secret, and nothing shorter would do.
        assert held == "" or any(
            len(held) < len(secret) and secret.startswith(held) for secret in STREAM_SECRETS
        )
    assert released + stream.flush() == redactor.values(text)


def test_a_key_split_across_deltas_never_appears_and_nothing_lags_after_it() -> None:
    redactor = Redactor([CANARY_KEY])
    text = f"The key is {CANARY_KEY}, as you asked. Done."
    pieces = [text[i : i + 5] for i in range(0, len(text), 5)]
    released = _stream(redactor, pieces)
    assert "".join(released) == f"The key is {REDACTED}, as you asked. Done."
    assert all(CANARY_KEY[:5] not in piece for piece in released)
    assert released[-1] == ""  # the text ends with no open prefix: nothing left to flush


def test_pieces_that_cannot_start_a_secret_pass_through_unchanged() -> None:
    stream = Redactor(["zq-secret-value"]).stream()
    piece = "plain reasoning text"
    assert stream.feed(piece) is piece
    assert Redactor().stream().feed(piece) is piece
    assert stream.feed("ends with z") == "ends with "  # "z" might start the value
    assert stream.feed("ebra") == "zebra"
    assert stream.flush() == ""


def test_stream_keeps_key_shapes_that_are_not_loaded_values() -> None:
    # A model writing an example key shape is not leaking a credential; Redactor.text
    # (used for raw exchanges and error messages) still removes shapes.
    example = "sk-ant-api03-" + "E" * 30
    stream = Redactor([CANARY_KEY]).stream()
    assert stream.feed(example) + stream.flush() == example
    assert Redactor([CANARY_KEY]).text(example) == REDACTED
