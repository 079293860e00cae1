"""A scripted conversation the simulator replays: ``thoughtline simulate --script FILE``.

The file is TOML, one ``[[turn]]`` table per model turn, in order::

    [[turn]]
    reasoning = "The user wants the time in Tokyo; the clock tool has it."
    tool_calls = [{ name = "demo__now", arguments = { timezone = "Asia/Tokyo" } }]

    [[turn]]
    reasoning = [{ kind = "summary", text = "The clock answered; I quote it." }]
    answer = "It is evening in Tokyo."

A turn's keys:

- ``answer``: the answer text;
- ``reasoning``: a string (one block of the provider's kind of reasoning, as the
  default model sends), or an array of tables ``{kind, text, signature}``: ``kind`` one
  of ``summary``, ``raw``, ``redacted``, ``encrypted`` (a :class:`SimReasoning`);
- ``tool_calls``: an array of tables ``{name, arguments, id}``: the tool's name as the
  request offers it (``demo__now``; ``demo.now`` is taken for it), its arguments as a
  table, and an optional call id;
- ``model``: the turn answers only requests naming this model id (which the simulator
  then serves); turns without one answer every model;
- ``input_tokens``, ``output_tokens``, ``reasoning_tokens``: what the usage reports
  (derived from the text when left out).

A turn needs an answer or tool calls. Turns are matched per conversation, the way the
default model counts them: a request whose history holds N model turns gets the script's
turn N+1 (of those for its model), so two roles each get turn 1, and a follow-up goes on
where its conversation stopped. A request past the last turn gets a 400 in the
provider's own error shape saying so.

Each turn is a :class:`~thoughtline.testing.transcript.Transcript`; its response and
call ids are derived from the request, so carriers stay unique per conversation.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, get_args

from thoughtline.errors import ThoughtlineError
from thoughtline.model.events import ReasoningKind
from thoughtline.testing.conversation import SimConversation
from thoughtline.testing.transcript import SimReasoning, SimToolCall, Transcript

__all__ = ["ScriptedTurn", "SimScript", "load_script"]

_TURN_KEYS: Final = (
    "answer",
    "reasoning",
    "tool_calls",
    "model",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
)
_REASONING_KEYS: Final = ("kind", "text", "signature")
_CALL_KEYS: Final = ("name", "arguments", "id")
_KINDS: Final[tuple[str, ...]] = get_args(ReasoningKind)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedTurn:
    """One model turn of a script, for every model or for ``model`` only."""

    transcript: Transcript
    model: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SimScript:
    """A scripted conversation: its turns in order, and the file they came from."""

    turns: tuple[ScriptedTurn, ...]
    source: str = "the script"

    @property
    def models(self) -> frozenset[str]:
        """The model ids its turns name (the simulator serves them)."""
        return frozenset(turn.model for turn in self.turns if turn.model is not None)

    def respond(self, conversation: SimConversation, model: str | None) -> Transcript | str:
        """The turn that answers ``conversation``, or why there is none (a sentence)."""
        turns = [turn for turn in self.turns if turn.model in (None, model)]
        number = conversation.model_turns + 1
        if number > len(turns):
            which = f" for model {model}" if any(turn.model for turn in self.turns) else ""
            return (
                f"The simulator's script {self.source} has no turn {number}{which}: its "
                f"{len(turns)} turn{'' if len(turns) == 1 else 's'} were used up by this "
                "conversation; add a [[turn]] to the script, or start a new conversation."
            )
        transcript = turns[number - 1].transcript
        seed = _seed(model, conversation)
        offered = {tool.name for tool in conversation.tools}
        calls = tuple(
            dataclasses.replace(
                call,
                call_id=call.call_id or f"call_{seed}_{index}",
                name=_offered_name(call.name, offered),
            )
            for index, call in enumerate(transcript.tool_calls)
        )
        return dataclasses.replace(transcript, tool_calls=calls, response_id=f"sim_{seed}")


def load_script(path: Path) -> SimScript:
    """The script in ``path``; a file that cannot be read or a bad key is
    ``SIMULATOR_SCRIPT_INVALID``, one sentence naming the file and the key."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise _invalid(f"Cannot read the script {path}: {exc.strerror or exc}.") from None
    except UnicodeDecodeError:
        raise _invalid(f"The script {path} is not UTF-8 text.") from None
    except tomllib.TOMLDecodeError as exc:
        raise _invalid(f"The script {path} is not valid TOML: {exc}.") from None
    unknown = sorted(set(data) - {"turn"})
    if unknown:
        raise _invalid(
            f"The script {path} has an unknown key {unknown[0]!r}; it holds only [[turn]] tables."
        )
    turns = data.get("turn")
    if not isinstance(turns, list) or not turns:
        raise _invalid(
            f"The script {path} has no turns: add one [[turn]] table per model turn "
            "(with answer, reasoning or tool_calls)."
        )
    return SimScript(
        turns=tuple(_turn(path, number, turn) for number, turn in enumerate(turns, start=1)),
        source=str(path),
    )


def _invalid(message: str) -> ThoughtlineError:
    return ThoughtlineError("SIMULATOR_SCRIPT_INVALID", message)


def _turn(path: Path, number: int, turn: Any) -> ScriptedTurn:
    where = f"The script {path}, turn {number}"
    if not isinstance(turn, Mapping):
        raise _invalid(f"{where}: each turn must be a [[turn]] table.")
    for key in turn:
        if key not in _TURN_KEYS:
            raise _invalid(f"{where}: unknown key {key!r}; a turn takes {', '.join(_TURN_KEYS)}.")
    answer = turn.get("answer", "")
    if not isinstance(answer, str):
        raise _invalid(f"{where}: answer must be a string.")
    model = turn.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise _invalid(f"{where}: model must be a non-empty model id.")
    reasoning = _reasoning(where, turn.get("reasoning", []))
    calls = _calls(where, turn.get("tool_calls", []))
    if not answer and not calls:
        raise _invalid(f"{where}: a turn needs an answer or tool_calls.")
    tokens = {
        key: _tokens(where, key, turn.get(key))
        for key in ("input_tokens", "output_tokens", "reasoning_tokens")
    }
    transcript = Transcript(
        answer=answer,
        reasoning=reasoning,
        tool_calls=calls,
        finish="tool_calls" if calls else "stop",
        output_tokens=tokens["output_tokens"],
        reasoning_tokens=tokens["reasoning_tokens"],
    )
    if tokens["input_tokens"] is not None:
        transcript = dataclasses.replace(transcript, input_tokens=tokens["input_tokens"])
    return ScriptedTurn(transcript=transcript, model=model)


def _tokens(where: str, key: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _invalid(f"{where}: {key} must be a whole number of tokens, 0 or more.")
    return value


def _reasoning(where: str, value: Any) -> tuple[SimReasoning, ...]:
    if isinstance(value, str):
        return (SimReasoning(kind="summary", text=value),) if value else ()
    if not isinstance(value, list):
        raise _invalid(f"{where}: reasoning must be a string or an array of {{kind, text}} tables.")
    blocks: list[SimReasoning] = []
    for index, block in enumerate(value):
        at = f"{where}: reasoning[{index}]"
        if not isinstance(block, Mapping):
            raise _invalid(f"{at} must be a table {{kind, text, signature}}.")
        for key in block:
            if key not in _REASONING_KEYS:
                raise _invalid(f"{at}: unknown key {key!r}; it takes kind, text, signature.")
        kind = block.get("kind", "summary")
        if kind not in _KINDS:
            raise _invalid(f"{at}: kind must be one of {', '.join(_KINDS)}, got {kind!r}.")
        text = block.get("text", "")
        signature = block.get("signature")
        if not isinstance(text, str):
            raise _invalid(f"{at}: text must be a string.")
        if signature is not None and not isinstance(signature, str):
            raise _invalid(f"{at}: signature must be a string.")
        blocks.append(SimReasoning(kind=kind, text=text, signature=signature))
    return tuple(blocks)


def _calls(where: str, value: Any) -> tuple[SimToolCall, ...]:
    if not isinstance(value, list):
        raise _invalid(f"{where}: tool_calls must be an array of {{name, arguments}} tables.")
    calls: list[SimToolCall] = []
    for index, call in enumerate(value):
        at = f"{where}: tool_calls[{index}]"
        if not isinstance(call, Mapping):
            raise _invalid(f"{at} must be a table {{name, arguments}}.")
        for key in call:
            if key not in _CALL_KEYS:
                raise _invalid(f"{at}: unknown key {key!r}; it takes name, arguments, id.")
        name = call.get("name")
        if not isinstance(name, str) or not name.strip():
            raise _invalid(f"{at}: name must be the tool's name (e.g. demo__now).")
        arguments = call.get("arguments", {})
        if not isinstance(arguments, Mapping):
            raise _invalid(f'{at}: arguments must be a table, e.g. {{ timezone = "UTC" }}.')
        call_id = call.get("id", "")
        if not isinstance(call_id, str):
            raise _invalid(f"{at}: id must be a string.")
        calls.append(
            SimToolCall(
                call_id=call_id,
                name=name,
                arguments=json.dumps(arguments, ensure_ascii=False, default=str),
            )
        )
    return tuple(calls)


def _offered_name(name: str, offered: set[str]) -> str:
    """``name``, or the offered tool it stands for (``demo.now`` for ``demo__now``)."""
    if name in offered or "." not in name:
        return name
    server, _, tool = name.partition(".")
    wire_name = f"{server}__{tool}"
    return wire_name if wire_name in offered else name


def _seed(model: str | None, conversation: SimConversation) -> str:
    seen = json.dumps(
        [
            model,
            conversation.system,
            conversation.prompt,
            conversation.model_turns,
            [[result.call_id, result.content] for result in conversation.results],
        ],
        ensure_ascii=False,
    )
    return hashlib.sha256(seen.encode("utf-8")).hexdigest()[:16]
