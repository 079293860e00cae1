"""Credential redaction: headers, URLs, key shapes and exact loaded values."""

from __future__ import annotations

from thoughtline.providers.redaction import REDACTED, Redactor

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
