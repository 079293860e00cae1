"""What OpenRouter's ``reasoning_details`` say, as both its readers take them: the Chat
Completions wire's decoder and the gateway's Chat Completions dialect, which reads the
same details back from a client's history."""

from __future__ import annotations

from typing import Final

SUMMARY_FORMATS: Final[frozenset[str]] = frozenset(
    {"anthropic-claude-v1", "google-gemini-v1", "openai-responses-v1"}
)
"""OpenRouter ``format`` values whose upstream only ever returns reasoning summaries."""
