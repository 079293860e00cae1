"""Anthropic Messages: thinking blocks go back unmodified, signature included.

Checked on every request whose ``messages`` hold assistant turns, in this order:

- Every ``thinking`` block's ``signature`` (and ``redacted_thinking`` block's ``data``)
  must be one the simulator handed out; otherwise 400 "messages.I.content.J: Invalid
  `signature` in `thinking` block" (an altered or invented carrier).
- Models that bind a block to its conversation (:data:`PREFIX_BOUND_MODELS`) also demand
  that everything before the block (``system``, ``tools``, every earlier message, the
  earlier blocks of its own message) and the model are the same as when it was made;
  otherwise 400 "… Invalid `signature` in `thinking` block. The block is bound to a
  different conversation. …", ending with what differs (a reminder added to the system
  prompt, tools reordered, an earlier tool result redacted differently, a block sent to
  another model, an earlier block of the same turn missing). With
  ``thinking.block_binding.prefix_mismatch_behavior: "drop_block"`` and the
  ``anthropic-beta`` value :data:`BINDING_BETA`, such a block is dropped instead and the
  response's ``input_transformations`` lists it (``thinking_dropped``, its path, the
  reason).
- In the latest assistant message of a tool loop (thinking on, the turn has
  ``tool_use``), when that turn was made with thinking: the message must start with a
  thinking block (400 "Expected `thinking` or `redacted_thinking`, but found …" when all
  were dropped), and its thinking blocks must stand where they were, with their text
  (400 "`thinking` or `redacted_thinking` blocks in the latest assistant message cannot
  be modified" for one dropped, reordered or blanked block).

Blocks of earlier turns of older models are not compared beyond their signature: the
API strips them from the context. A request that turns thinking on and forces a tool
(``tool_choice`` ``any`` or ``tool``) gets 400 "Thinking may not be enabled when
tool_choice forces tool use."; one whose messages hold a ``tool_use`` or ``tool_result``
block and that defines no ``tools`` gets 400 "Requests which include `tool_use` or
`tool_result` blocks must define tools.".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from thoughtline.testing.renderers.anthropic import AnthropicRenderer
from thoughtline.testing.round_trips import (
    Accepted,
    CarrierBook,
    Rejection,
    digest,
    json_error,
)
from thoughtline.testing.transcript import SimRequest

PREFIX_BOUND_MODELS: Final[tuple[str, ...]] = (
    "claude-fable-5-1",
    "claude-fable-5-2",
    "claude-mythos-5-1",
    "claude-mythos-5-2",
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
)
"""Model prefixes with preserved thinking: a block is bound to everything before it."""
BINDING_BETA: Final = "thinking-binding-controls-2026-08-01"
"""The ``anthropic-beta`` value that ``prefix_mismatch_behavior`` requires."""

_REASONING_TYPES: Final = frozenset({"thinking", "redacted_thinking"})
_DOCS: Final = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


@dataclass(frozen=True, slots=True, kw_only=True)
class _Issued:
    """A block as made, and digests of what came before it."""

    model: str
    block: Mapping[str, Any]
    system: str
    tools: str
    messages: tuple[str, ...]  # one digest per earlier message
    before: tuple[str, ...]  # one digest per earlier block of its own message

    @classmethod
    def made(
        cls,
        model: str,
        block: Mapping[str, Any],
        body: Mapping[str, Any],
        messages: Sequence[Any],
        before: Sequence[Any],
    ) -> _Issued:
        return cls(
            model=model,
            block=block,
            system=digest(body.get("system")),
            tools=digest(body.get("tools")),
            messages=tuple(digest(message) for message in messages),
            before=tuple(digest(earlier) for earlier in before),
        )

    def mismatch(self, other: _Issued) -> str | None:
        """What differs between the conversation this block was made in and ``other``
        (the same block as sent now), in the API's words; ``None`` when nothing does."""
        if other.model != self.model:
            return f"The block was created by `{self.model}`, not `{other.model}`."
        if other.system != self.system:
            return "The `system` prompt differs from the one this block was created with."
        if other.tools != self.tools:
            return "The `tools` list differs from the one this block was created with."
        for index, (made, sent) in enumerate(zip(self.messages, other.messages, strict=False)):
            if made != sent:
                return f"messages.{index} differs from the one this block was created with."
        if len(other.messages) != len(self.messages):
            return "The messages before this block differ from the ones it was created with."
        if other.before != self.before:
            return (
                "The `thinking` block that preceded this one when it was created is "
                "missing from this request."
            )
        return None


def binds_to_prefix(model: str) -> bool:
    """Whether ``model``'s thinking blocks are bound to their conversation."""
    return model.startswith(PREFIX_BOUND_MODELS)


def _carrier(block: Mapping[str, Any]) -> object:
    return block.get("signature") if block.get("type") == "thinking" else block.get("data")


def _forces_a_tool(body: Mapping[str, Any]) -> bool:
    choice = body.get("tool_choice")
    return isinstance(choice, dict) and choice.get("type") in ("any", "tool")


def _holds_tool_blocks(messages: Sequence[object]) -> bool:
    return any(
        isinstance(block, dict) and block.get("type") in ("tool_use", "tool_result")
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for block in message["content"]
    )


def _thinks(body: Mapping[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def _drops_blocks(request: SimRequest) -> bool:
    """``thinking.block_binding.prefix_mismatch_behavior: "drop_block"``, with the beta
    header it requires: a block failing its binding check is dropped, not refused."""
    thinking = (request.body or {}).get("thinking")
    binding = thinking.get("block_binding") if isinstance(thinking, dict) else None
    behaviour = binding.get("prefix_mismatch_behavior") if isinstance(binding, dict) else None
    betas = request.headers.get("anthropic-beta", "").replace(" ", "").split(",")
    return behaviour == "drop_block" and BINDING_BETA in betas


def _error(message: str) -> Rejection:
    return json_error(
        400,
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message},
            "request_id": "req_sim_round_trip",
        },
    )


class AnthropicRoundTrips:
    """:class:`~thoughtline.testing.round_trips.RoundTripRule` for ``/v1/messages``."""

    def __init__(self, renderer: AnthropicRenderer | None = None) -> None:
        self._renderer = renderer or AnthropicRenderer()

    def remember(self, request: SimRequest, response: Mapping[str, Any], book: CarrierBook) -> None:
        body = request.body or {}
        messages = body.get("messages")
        messages = messages if isinstance(messages, list) else []
        content = response.get("content")
        if not isinstance(content, list):
            return
        model = str(response.get("model") or request.model or "")
        for index, block in enumerate(content):
            if block.get("type") in _REASONING_TYPES:
                issued = _Issued.made(model, block, body, messages, content[:index])
                book.issue("anthropic", str(_carrier(block)), issued)
            elif block.get("type") == "tool_use":
                book.issue("anthropic-turn", str(block.get("id")), tuple(content))

    def check(self, request: SimRequest, book: CarrierBook) -> Rejection | Accepted | None:
        body = request.body or {}
        if _forces_a_tool(body) and _thinks(body):
            return _error("Thinking may not be enabled when tool_choice forces tool use.")
        messages = body.get("messages")
        if not isinstance(messages, list):
            return None
        if not body.get("tools") and _holds_tool_blocks(messages):
            return _error(
                "Requests which include `tool_use` or `tool_result` blocks must define tools."
            )
        assistant = [
            (i, m["content"])
            for i, m in enumerate(messages)
            if isinstance(m, dict)
            and m.get("role") == "assistant"
            and isinstance(m.get("content"), list)
        ]
        dropped: list[dict[str, str]] = []
        for i, content in assistant:
            for j, block in enumerate(content):
                if isinstance(block, dict) and block.get("type") in _REASONING_TYPES:
                    verdict = self._check_block(request, messages, i, j, book)
                    if isinstance(verdict, Rejection):
                        return verdict
                    if verdict is not None:
                        dropped.append(verdict)
        if dropped:
            return Accepted(input_transformations=tuple(dropped))
        # The rule binds the final assistant message only (a plain answer of a later
        # turn, sent as a string, ends the tool loop before it).
        final = next(
            (
                i
                for i in range(len(messages) - 1, -1, -1)
                if isinstance(messages[i], dict) and messages[i].get("role") == "assistant"
            ),
            None,
        )
        if not assistant or final != assistant[-1][0]:
            return None
        latest, content = assistant[-1]
        return self._check_latest(request, latest, content, book)

    def _check_block(
        self, request: SimRequest, messages: list[Any], i: int, j: int, book: CarrierBook
    ) -> Rejection | dict[str, str] | None:
        """Block ``j`` of message ``i``: refused, dropped (its ``input_transformations``
        entry), or fine (``None``)."""
        content = messages[i]["content"]
        block = content[j]
        carrier = _carrier(block)
        book.saw(request, "signature" if block["type"] == "thinking" else "redacted_data", carrier)
        issued: list[_Issued] = book.lookup("anthropic", carrier)
        where = f"messages.{i}.content.{j}"
        if not issued:
            return _error(f"{where}: Invalid `signature` in `thinking` block")
        model = request.model or ""
        if not binds_to_prefix(model):
            return None
        sent = _Issued.made(model, block, request.body or {}, messages[:i], content[:j])
        mismatches = [made.mismatch(sent) for made in issued]
        if None in mismatches:
            return None
        if _drops_blocks(request):
            moved = issued[-1].model != model
            reason = "model_binding_mismatch" if moved else "prefix_binding_mismatch"
            return {"type": "thinking_dropped", "path": where, "reason": reason}
        return _error(
            f"{where}: Invalid `signature` in `thinking` block. The block is bound to a "
            "different conversation. Remove the block, or set "
            '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block". That '
            f"setting requires the `{BINDING_BETA}` value in the `anthropic-beta` header. "
            f"{mismatches[-1]}"
        )

    def _check_latest(
        self, request: SimRequest, index: int, content: list[Any], book: CarrierBook
    ) -> Rejection | None:
        """The latest assistant turn of a tool loop keeps its thinking blocks as made."""
        if self._renderer.thinking_display(request) is None:
            return None
        calls = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
        if not calls:
            return None
        turns: list[tuple[Any, ...]] = book.lookup("anthropic-turn", calls[0].get("id"))
        if not turns:
            return None
        made = turns[-1]
        made_reasoning = {k: b for k, b in enumerate(made) if b.get("type") in _REASONING_TYPES}
        if not made_reasoning:
            return None
        first = content[0] if content and isinstance(content[0], dict) else {}
        if first.get("type") not in _REASONING_TYPES:
            return _error(
                f"messages.{index}.content.0.type: Expected `thinking` or "
                f"`redacted_thinking`, but found `{first.get('type')}`. When `thinking` is "
                "enabled, a final `assistant` message must start with a thinking block "
                "(preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
                "recommend you include thinking blocks from previous turns. To avoid this "
                "requirement, disable `thinking`. Please consult our documentation at "
                f"{_DOCS}"
            )
        sent = {
            k: b
            for k, b in enumerate(content)
            if isinstance(b, dict) and b.get("type") in _REASONING_TYPES
        }
        for position in sorted(set(made_reasoning) | set(sent)):
            if made_reasoning.get(position) != sent.get(position):
                return _error(
                    f"messages.{index}.content.{position}: `thinking` or `redacted_thinking` "
                    "blocks in the latest assistant message cannot be modified. These "
                    "blocks must remain as they were in the original response."
                )
        return None
