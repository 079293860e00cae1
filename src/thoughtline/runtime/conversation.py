"""Conversations: a run that continues another carries the earlier turns.

The runs of a conversation share a ``conversation_id``; each names the run it continues.
When a follow-up is planned, :func:`load_continuation` reads the chain of runs it
continues (root first) and their tasks' stored threads (:mod:`thoughtline.threads`), and
each task is given its earlier turns (:func:`earlier_turns`): its own role's threads,
or, for a role new to the conversation, the earlier requests and answers as plain text.
When the task runs, :func:`assemble` turns them into the history its first request
sends, by the rules of the provider it calls:

- A carrier goes back only to the endpoint and model that made it; a turn answered by
  another sends its text only.
- Each wire API's rule for earlier turns' reasoning
  (:func:`~thoughtline.providers.turn_rules.earlier_reasoning`): always, never, or, for
  Claude models with preserved thinking, only on an unchanged prefix (same persona,
  tools and earlier turns): after any change every later turn's blocks are dropped, by
  thoughtline, before the API would refuse them.
- A ``hidden`` turn's carriers were never stored, and a turn whose carriers the
  retention removed has none left: its reasoning is dropped, never reconstructed.
- A task that does not request reasoning sends none back.
- Turns are cut to the model's context window, oldest first and whole.

Everything dropped is counted in the task's ``history`` and said in one sentence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from thoughtline import threads
from thoughtline.errors import ThoughtlineError
from thoughtline.parts import Part, TextPart, ToolCallPart, ToolResultPart
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.turn_rules import earlier_reasoning
from thoughtline.records import TERMINAL_RUN_STATUSES, HistorySnapshot, Run
from thoughtline.requests import Message
from thoughtline.store.base import Store, StoredThread
from thoughtline.threads import StoredTurn

BYTES_PER_TOKEN = 3
"""How a turn's size is counted against the context window without a tokenizer: three
bytes of UTF-8 JSON a token errs towards fewer tokens fitting (English runs near four)."""
OUTPUT_RESERVE_TOKENS = 8_192
"""Room kept for the answer when the task sets no ``max_output_tokens``."""


@dataclass(frozen=True, slots=True)
class Continuation:
    """What a follow-up run needs of the runs before it."""

    previous: Run
    chain: tuple[Run, ...]
    """The runs of the conversation this one follows, root first, ``previous`` last."""
    threads: dict[str, StoredThread]

    @property
    def conversation_id(self) -> str:
        return self.previous.conversation_id or self.previous.id


def load_continuation(store: Store, run_id: str) -> Continuation:
    """The chain of runs ``run_id`` ends, with their threads; one sentence and a code for
    a run that does not exist (``RUN_NOT_FOUND``), has not ended
    (``CONVERSATION_RUN_ACTIVE``), or keeps no history (``CONVERSATION_HISTORY_GONE``)."""
    previous = store.get_run(run_id)
    if previous is None:
        raise ThoughtlineError(
            "RUN_NOT_FOUND",
            f"No run {run_id!r} to continue; `thoughtline runs` lists the stored runs.",
        )
    if previous.status not in TERMINAL_RUN_STATUSES:
        raise ThoughtlineError(
            "CONVERSATION_RUN_ACTIVE",
            f"Run {run_id} is still {previous.status}; continue it once it has ended "
            f"(`thoughtline cancel {run_id}` stops it).",
        )
    runs = {run.id: run for run in store.conversation_runs(previous.conversation_id)}
    runs[previous.id] = previous
    chain: list[Run] = []
    at: Run | None = previous
    while at is not None and at not in chain and len(chain) <= len(runs):
        chain.append(at)
        at = runs.get(at.continues) if at.continues else None
    chain.reverse()
    stored = store.task_threads([run.id for run in chain])
    if not any(task.id in stored for task in previous.tasks):
        raise ThoughtlineError(
            "CONVERSATION_HISTORY_GONE",
            f"Run {run_id} keeps no conversation history (the answer retention removed it, "
            "no task of it reached a model, or it ran before thoughtline kept "
            "conversations); start a new run instead.",
        )
    return Continuation(previous=previous, chain=tuple(chain), threads=stored)


def _answers(run: Run) -> list[tuple[str, str]]:
    return [(task.name, task.output) for task in run.tasks if task.output]


def earlier_turns(continuation: Continuation, task_name: str) -> tuple[StoredTurn, ...]:
    """The earlier turns a task named ``task_name`` is given: in each run of the chain,
    the thread of its task of that name, else that run's request and answers as text."""
    turns: list[StoredTurn] = []
    for run in continuation.chain:
        task = next((task for task in run.tasks if task.name == task_name), None)
        stored = None if task is None else continuation.threads.get(task.id)
        if task is not None and stored is not None:
            try:
                answer = threads.decode(stored.answer_json)
                carriers = (
                    None if stored.carriers_json is None else threads.decode(stored.carriers_json)
                )
            except threads.ThreadDecodeError:
                answer, carriers = (), None  # told as plain text below
            if answer:
                turns.append(
                    StoredTurn(
                        run_id=run.id,
                        provider=task.provider,
                        model=task.model,
                        mode=task.chain_of_thought,
                        answer=answer,
                        carriers=carriers,
                        carriers_cleared=stored.carriers_cleared,
                        system_digest=stored.system_digest,
                        tools_digest=stored.tools_digest,
                    )
                )
                continue
        plain = _plain_turn(run)
        if plain is not None:
            turns.append(plain)
    return tuple(turns)


def _plain_turn(run: Run) -> StoredTurn | None:
    """``run``'s request and answers as text, for a task that had no part in it."""
    answers = _answers(run)
    if not answers:
        return None
    text = (
        answers[0][1]
        if len(answers) == 1
        else "\n\n".join(f"[{name}]\n{output}" for name, output in answers)
    )
    return StoredTurn(
        run_id=run.id,
        provider="",
        model="",
        mode="hidden",
        answer=(Message(role="user", content=run.request), Message(role="assistant", content=text)),
        carriers=None,
        plain=True,
    )


@dataclass(frozen=True, slots=True)
class Assembled:
    """A follow-up task's first history and what it says about it."""

    messages: list[Message]
    """The earlier turns, then the prompt (joined to the last earlier message when that
    turn ended on a prompt that had no answer)."""
    history: HistorySnapshot


def message_tokens(messages: Sequence[Message]) -> int:
    """The estimated tokens of ``messages`` (:data:`BYTES_PER_TOKEN`)."""
    return math.ceil(len(threads.encode(messages).encode()) / BYTES_PER_TOKEN)


def context_budget(capability: ModelCapability, max_output_tokens: int | None) -> int | None:
    """The tokens a request may hold on a model, ``None`` when its window is unknown."""
    if capability.context_window is None:
        return None
    return capability.context_window - (max_output_tokens or OUTPUT_RESERVE_TOKENS)


def check_fits(
    *, fixed_tokens: int, capability: ModelCapability, max_output_tokens: int | None, model: str
) -> None:
    """``CONTEXT_WINDOW_EXCEEDED`` when the turn alone (persona, tools, prompt) leaves no
    room in the model's context window."""
    budget = context_budget(capability, max_output_tokens)
    if budget is not None and fixed_tokens > budget:
        raise ThoughtlineError(
            "CONTEXT_WINDOW_EXCEEDED",
            f"This turn alone is about {fixed_tokens:,} tokens, more than {model}'s "
            f"{capability.context_window:,}-token context window leaves after "
            f"{(max_output_tokens or OUTPUT_RESERVE_TOKENS):,} for the answer; shorten the "
            "request or start a new conversation.",
        )


def assemble(
    turns: Sequence[StoredTurn],
    prompt: Message,
    *,
    endpoint: Endpoint,
    capability: ModelCapability,
    model: str,
    system_digest: str,
    tools_digest: str,
    requests_reasoning: bool,
    fixed_tokens: int,
    max_output_tokens: int | None,
) -> Assembled:
    """The history a follow-up task sends first: its earlier ``turns`` by the provider's
    rules (module doc), then ``prompt``. ``fixed_tokens``: the persona, tools and prompt."""
    check_fits(
        fixed_tokens=fixed_tokens,
        capability=capability,
        max_output_tokens=max_output_tokens,
        model=model,
    )
    rule = earlier_reasoning(endpoint, capability)
    forms = [_answer_only(turn.answer) for turn in turns]
    dropped = _trim(forms, context_budget(capability, max_output_tokens), fixed_tokens)
    kept = turns[dropped:]
    notes = Notes(numbers=dropped)
    intact = dropped == 0
    sent = 0
    chosen: list[tuple[Message, ...]] = []
    for offset, turn in enumerate(kept):
        number = dropped + offset + 1
        same_model = turn.provider == endpoint.name and turn.model == model
        messages = forms[dropped + offset]
        if not requests_reasoning or rule == "never" or turn.plain:
            chosen.append(messages)
            continue
        if not same_model:
            if turn.carriers is not None or turn.carriers_cleared:
                notes.add(number, "answered by another model")
            chosen.append(messages)
            continue
        if turn.carriers is None:
            notes.add(number, "cleared" if turn.carriers_cleared else f"ran {turn.mode}")
            if turn.carriers_cleared:
                intact = False  # later blocks were made on a prefix that held these
            chosen.append(messages)
            continue
        if rule == "prefix":
            if turn.system_digest != system_digest or turn.tools_digest != tools_digest:
                intact = False
                notes.add(number, "changed persona or tools")
            elif not intact:
                notes.add(number, "changed prefix")
            if not intact:
                chosen.append(messages)
                continue
        chosen.append(_answer_only(turn.carriers, keep_reasoning=True))
        sent += 1
    earlier = [message for messages in chosen for message in messages]
    if earlier and earlier[-1].role == "user":
        # The last turn's prompt got no answer: the new prompt joins it (two user
        # messages in a row are refused by some APIs).
        last = earlier.pop()
        earlier.append(Message(role="user", parts=(*last.parts, *prompt.parts)))
    else:
        earlier.append(prompt)
    return Assembled(
        messages=earlier,
        history={
            "turns": len(kept),
            "dropped_turns": dropped,
            "reasoning_turns": sent,
            "note": notes.sentence(capability, model),
        },
    )


def _trim(forms: list[tuple[Message, ...]], budget: int | None, fixed_tokens: int) -> int:
    """How many of the oldest turns to leave out so the rest fit ``budget``."""
    if budget is None:
        return 0
    room = budget - fixed_tokens
    sizes = [message_tokens(messages) for messages in forms]
    total = sum(sizes)
    dropped = 0
    while dropped < len(sizes) and total > room:
        total -= sizes[dropped]
        dropped += 1
    return dropped


def _answer_only(
    messages: tuple[Message, ...], *, keep_reasoning: bool = False
) -> tuple[Message, ...]:
    """A turn's messages as a follow-up sends them: without reasoning (unless
    ``keep_reasoning``), and without a last call that was never answered (a turn cut
    short by a limit, a failure or a stop), which no provider takes."""
    kept = messages if keep_reasoning else threads.answer_layer(messages)
    answered = {
        part.tool_call_id
        for message in kept
        for part in message.parts
        if isinstance(part, ToolResultPart)
    }
    out: list[Message] = []
    for message in kept:
        if message.role == "assistant" and any(
            isinstance(part, ToolCallPart) and part.tool_call_id not in answered
            for part in message.parts
        ):
            parts: list[Part] = [
                part
                for part in message.parts
                if not (isinstance(part, ToolCallPart) and part.tool_call_id not in answered)
            ]
            if not any(isinstance(part, TextPart) and part.text for part in parts):
                continue
            message = Message(role="assistant", parts=parts)
        out.append(message)
    # A tool exchange the model never answered (the turn stopped after its results) is
    # left out: the API would take its call message as the final one of a tool loop.
    while len(out) > 1 and all(isinstance(part, ToolResultPart) for part in out[-1].parts):
        out.pop()
        calls = out.pop()
        text = [part for part in calls.parts if isinstance(part, TextPart) and part.text]
        if text:
            out.append(Message(role="assistant", parts=text))
    return tuple(out)


@dataclass(slots=True)
class Notes:
    """What of the earlier turns' reasoning was not sent, for one sentence."""

    numbers: int
    """How many of the oldest turns were left out."""
    reasons: dict[str, list[int]] | None = None

    def add(self, turn: int, reason: str) -> None:
        if self.reasons is None:
            self.reasons = {}
        self.reasons.setdefault(reason, []).append(turn)

    def sentence(self, capability: ModelCapability, model: str) -> str | None:
        said: list[str] = []
        if self.numbers:
            said.append(
                f"The oldest {_count(self.numbers, 'turn')} of the conversation were left "
                f"out to fit {model}'s {capability.context_window:,}-token context window."
            )
        for reason, turns in (self.reasons or {}).items():
            which = _turns(turns)
            was = "was" if len(turns) == 1 else "were"
            if reason == "answered by another model":
                said.append(
                    f"{which.capitalize()} {was} answered by another provider or model, so "
                    "only the text is sent (a reasoning carrier goes back only to the model "
                    "that made it)."
                )
            elif reason == "cleared":
                said.append(
                    f"The reasoning of {which} was removed by the reasoning retention, so "
                    "it is not sent back."
                )
            elif reason == "changed persona or tools":
                said.append(
                    f"The reasoning of {which} is not sent back: the persona or the tools "
                    "changed since, and the model binds reasoning to them."
                )
            elif reason == "changed prefix":
                said.append(
                    f"The reasoning of {which} is not sent back: a turn before it changed "
                    "or was left out, and the model binds reasoning to everything before it."
                )
            else:  # "ran hidden"
                mode = reason.removeprefix("ran ")
                said.append(
                    f"{which.capitalize()} ran with chain_of_thought {mode}, so its reasoning "
                    "was never kept and is not sent back (nor reconstructed)."
                )
        return " ".join(said) or None


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _turns(numbers: list[int]) -> str:
    if len(numbers) == 1:
        return f"turn {numbers[0]}"
    listed = ", ".join(str(number) for number in numbers[:-1])
    return f"turns {listed} and {numbers[-1]}"
