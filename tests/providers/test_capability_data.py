"""The capability data's token counts are checked where the file is read: a bad
``context_window`` or ``max_output_tokens`` names the file, the family and the key."""

from __future__ import annotations

import pytest

from thoughtline.providers.capabilities import builtin_capabilities, capabilities_from_toml

FAMILY = """
[[family]]
id = "claude-test"
label = "Test"
endpoints = ["anthropic"]
match = ["claude-test"]
thinking_control = "adaptive"
efforts = ["low"]
returns = ["summary"]
reasoning_by_default = false
context_window = 200000
"""


def test_a_family_says_its_models_max_output() -> None:
    table = capabilities_from_toml(FAMILY + "max_output_tokens = 64000\n")
    found = table.lookup("anthropic", "claude-test-1")
    assert (found.context_window, found.max_output_tokens) == (200_000, 64_000)
    assert (
        capabilities_from_toml(FAMILY).lookup("anthropic", "claude-test").max_output_tokens is None
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "max_output_tokens = 0",
            "capabilities.toml family claude-test: max_output_tokens must be a whole number "
            "of tokens from 1 up, got 0",
        ),
        (
            'max_output_tokens = "64k"',
            "capabilities.toml family claude-test: max_output_tokens must be a whole number "
            "of tokens from 1 up, got '64k'",
        ),
        (
            "max_output_tokens = true",
            "capabilities.toml family claude-test: max_output_tokens must be a whole number "
            "of tokens from 1 up, got True",
        ),
        (
            "max_output_tokens = 300000",
            "capabilities.toml family claude-test: max_output_tokens = 300000 is more than "
            "its context_window (200000); a call cannot write more than its context holds",
        ),
    ],
)
def test_a_bad_max_output_names_the_file_the_family_and_the_key(line: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        capabilities_from_toml(FAMILY + line + "\n")
    assert str(raised.value) == message


def test_a_bad_context_window_names_the_file_the_family_and_the_key() -> None:
    with pytest.raises(ValueError) as raised:
        capabilities_from_toml(FAMILY.replace("200000", "-1"))
    assert str(raised.value) == (
        "capabilities.toml family claude-test: context_window must be a whole number of "
        "tokens from 1 up, got -1"
    )


def test_a_model_that_falls_back_to_a_family_has_no_max_output_of_its_own() -> None:
    # The family's figure is its models'; a model the data does not know may write more.
    table = builtin_capabilities()
    assert table.lookup("gemini", "gemini-3-pro").max_output_tokens == 65_536
    unknown = table.lookup("gemini", "gemma-9-it")
    assert unknown.source == "fallback" and unknown.family == "gemini-3"
    assert unknown.max_output_tokens is None
