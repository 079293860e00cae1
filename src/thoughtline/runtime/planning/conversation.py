"""Conversations: a run that continues another carries the earlier turns.

The runs of a conversation share a ``conversation_id``; each names the run it continues.
When a follow-up is planned, :func:`load_continuation` reads the chain of runs it
continues (root first) and their tasks' stored threads (:mod:`thoughtline.model.threads`), and
each task is given its earlier turns (:func:`earlier_turns`): its own role's threads,
or, for a role new to the conversation, the earlier requests and answers as plain text.
When the task runs, :func:`assemble` turns them into the history its first request
sends, by the rules of the provider it calls:

- A carrier goes back only to the endpoint and model that made it; a turn answered by
  another sends its text only.
- Each wire API's rule for earlier turns' reasoning, which its unit answers
  (:meth:`~thoughtline.providers.wire.Wire.earlier_reasoning`): always, never, or, for
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from thoughtline.errors import ThoughtlineError
from thoughtline.model import threads
from thoughtline.model.parts import Part, TextPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message
from thoughtline.model.threads import StoredTurn
from thoughtline.providers.capabilities import ModelCapability
from thoughtline.providers.endpoints import Endpoint
from thoughtline.providers.registry import wire_for
from thoughtline.records import TERMINAL_RUN_STATUSES, HistorySnapshot, Run
from thoughtline.store.base import ConversationTask, Store
from thoughtline.store.run_ids import find_run
from thoughtline.tools.settings import McpServerSettings

BYTES_PER_TOKEN = 3
"""How earlier turns are counted against the context window without a tokenizer: three
bytes of stored JSON a token errs towards keeping fewer turns (English runs near four)."""
LENIENT_BYTES_PER_TOKEN = 4
"""How a turn alone is counted before it is refused: it fails only when it would not
fit even at four bytes of UTF-8 a token (the provider is the judge of closer cases)."""
OUTPUT_RESERVE_TOKENS = 8_192
"""Room kept for the answer when the task sets no ``max_output_tokens``."""


@dataclass(frozen=True, slots=True)
class Continuation:
    """What a follow-up run needs of the runs before it."""

    previous: Run
    chain: tuple[tuple[ConversationTask, ...], ...]
    """The tasks of each run the follow-up continues, root first, ``previous`` last."""
    servers: Mapping[str, McpServerSettings] = field(default_factory=dict)
    """The MCP servers ``previous`` used that are neither configured nor given by the
    front end, started again from its records (:mod:`thoughtline.tools.recorded`)."""

    @property
    def conversation_id(self) -> str:
        return self.previous.conversation_id or self.previous.id


def ended_run(store: Store, run_id: str) -> Run:
    """The run ``run_id``, to be continued; one sentence and a code for a run that does
    not exist (``RUN_NOT_FOUND``) or has not ended (``CONVERSATION_RUN_ACTIVE``).
    ``run_id`` may be any form :func:`~thoughtline.store.run_ids.find_run` takes: a
    short id, a unique start of an id (``RUN_ID_AMBIGUOUS``) or ``latest``."""
    previous = find_run(store, run_id)
    if previous is None:
        raise ThoughtlineError("RUN_NOT_FOUND", f"No run {run_id!r} to continue in this store.")
    if previous.status not in TERMINAL_RUN_STATUSES:
        raise ThoughtlineError(
            "CONVERSATION_RUN_ACTIVE",
            f"Run {run_id} is still {previous.status}; continue it once it has ended "
            "(or cancel it).",
        )
    return previous


def load_continuation(store: Store, run_id: str) -> Continuation:
    """The chain of runs ``run_id`` ends, with their threads; refused as
    :func:`ended_run` refuses it, or when the run keeps no history
    (``CONVERSATION_HISTORY_GONE``)."""
    previous = ended_run(store, run_id)
    by_run: dict[str, list[ConversationTask]] = {}
    for task in store.conversation_tasks(previous.conversation_id or previous.id):
        by_run.setdefault(task.run_id, []).append(task)
    chain: list[tuple[ConversationTask, ...]] = []
    at: str | None = previous.id
    while at is not None and at in by_run and len(chain) < len(by_run):
        tasks = tuple(by_run[at])
        chain.append(tasks)
        at = tasks[0].continues
    chain.reverse()
    # A run whose process died wrote no thread (a task writes it when it ends); what
    # recovery kept of its answers goes on as text. Any other run without one is gone.
    recovered = previous.status == "interrupted" and any(task.output for task in previous.tasks)
    if not chain or not (recovered or any(task.thread is not None for task in chain[-1])):
        raise ThoughtlineError(
            "CONVERSATION_HISTORY_GONE",
            f"Run {run_id} keeps no conversation history (the answer retention removed it, "
            "no task of it reached a model, or it ran before thoughtline kept "
            "conversations); start a new run instead.",
        )
    return Continuation(previous=previous, chain=tuple(chain))


def earlier_turns(continuation: Continuation, task_name: str) -> tuple[StoredTurn, ...]:
    """The earlier turns a task named ``task_name`` is given: in each run of the chain,
    the thread of its task of that name, else that run's request and answers as text."""
    turns: list[StoredTurn] = []
    for tasks in continuation.chain:
        task = next((task for task in tasks if task.name == task_name), None)
        if task is not None and task.thread is not None:
            stored = task.thread
            if _ASSISTANT not in stored.answer_json:
                continue  # its prompt got no answer (the task failed or was stopped)
            turns.append(
                StoredTurn(
                    run_id=task.run_id,
                    provider=task.provider,
                    model=task.model,
                    mode=task.chain_of_thought,
                    answer_json=stored.answer_json,
                    carriers_json=stored.carriers_json,
                    carriers_cleared=stored.carriers_cleared,
                    system_digest=stored.system_digest,
                    tools_digest=stored.tools_digest,
                )
            )
            continue
        plain = _plain_turn(tasks)
        if plain is not None:
            turns.append(plain)
    return tuple(turns)


_ASSISTANT = '{"role":"assistant"'
"""How an assistant message starts in a stored thread (``threads.encode`` writes compact
JSON, role first), so a turn that got no answer is told without decoding it."""


def _plain_turn(tasks: tuple[ConversationTask, ...]) -> StoredTurn | None:
    """A run's request and answers as text, for a task that had no part in it."""
    answers = [(task.name, task.output) for task in tasks if task.output]
    if not answers:
        return None
    text = (
        answers[0][1]
        if len(answers) == 1
        else "\n\n".join(f"[{name}]\n{output}" for name, output in answers)
    )
    messages = (
        Message(role="user", content=tasks[0].request),
        Message(role="assistant", content=text),
    )
    return StoredTurn(
        run_id=tasks[0].run_id,
        provider="",
        model="",
        mode="hidden",
        answer_json=threads.encode(messages),
        plain=True,
    )


@dataclass(frozen=True, slots=True)
class Assembled:
    """A follow-up task's first history and what it says about it."""

    messages: list[Message]
    """The earlier turns, then the prompt (joined to the last earlier message when that
    turn ended on a prompt that had no answer)."""
    history: HistorySnapshot


def context_budget(capability: ModelCapability, max_output_tokens: int | None) -> int | None:
    """The tokens a request may hold on a model, ``None`` when its window is unknown."""
    if capability.context_window is None:
        return None
    return capability.context_window - (max_output_tokens or OUTPUT_RESERVE_TOKENS)


def check_fits(
    *, fixed_bytes: int, capability: ModelCapability, max_output_tokens: int | None, model: str
) -> None:
    """``REQUEST_INVALID`` when ``max_output_tokens`` is more than the model writes in
    one call (:func:`check_output`); ``CONTEXT_WINDOW_EXCEEDED`` when the turn alone
    (persona, tools, prompt: ``fixed_bytes`` of UTF-8) leaves no room in the model's
    context window."""
    check_output(capability, max_output_tokens, model)
    budget = context_budget(capability, max_output_tokens)
    fixed_tokens = math.ceil(fixed_bytes / LENIENT_BYTES_PER_TOKEN)
    if budget is not None and fixed_tokens > budget:
        raise ThoughtlineError(
            "CONTEXT_WINDOW_EXCEEDED",
            f"This turn alone is about {fixed_tokens:,} tokens, more than {model}'s "
            f"{capability.context_window:,}-token context window leaves after "
            f"{(max_output_tokens or OUTPUT_RESERVE_TOKENS):,} for the answer; shorten the "
            "request or start a new conversation.",
        )


def check_output(capability: ModelCapability, max_output_tokens: int | None, model: str) -> None:
    """``REQUEST_INVALID`` when ``max_output_tokens`` is more than the model's max output
    from the capability data: refused before the call, which the provider would refuse
    (lowering it instead would quietly end answers sooner than the task asked)."""
    most = capability.max_output_tokens
    if max_output_tokens is None or most is None or max_output_tokens <= most:
        return
    raise ThoughtlineError(
        "REQUEST_INVALID",
        f"max_output_tokens is {max_output_tokens:,}, more than {model} writes in one call "
        f"({most:,} output tokens at most); set max_output_tokens to {most:,} or less. No "
        "call was made.",
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
    fixed_bytes: int,
    max_output_tokens: int | None,
) -> Assembled:
    """The history a follow-up task sends first: its earlier ``turns`` by the provider's
    rules (module doc), then ``prompt``. ``fixed_bytes``: the persona, tools and prompt
    (UTF-8)."""
    check_fits(
        fixed_bytes=fixed_bytes,
        capability=capability,
        max_output_tokens=max_output_tokens,
        model=model,
    )
    rule = wire_for(endpoint.wire_api).earlier_reasoning(endpoint, capability)
    dropped = _trim(
        turns,
        context_budget(capability, max_output_tokens),
        math.ceil(fixed_bytes / BYTES_PER_TOKEN),
    )
    kept = turns[dropped:]
    try:
        return _assembled(
            kept,
            dropped,
            prompt,
            rule,
            requests_reasoning,
            system_digest,
            tools_digest,
            capability,
            model,
            endpoint.name,
        )
    except threads.ThreadDecodeError as exc:
        raise ThoughtlineError(
            "CONVERSATION_HISTORY_GONE",
            f"A stored turn of this conversation does not read back ({exc}); continue an "
            "earlier run or start a new conversation.",
        ) from exc


def _assembled(
    kept: Sequence[StoredTurn],
    dropped: int,
    prompt: Message,
    rule: str,
    requests_reasoning: bool,
    system_digest: str,
    tools_digest: str,
    capability: ModelCapability,
    model: str,
    provider: str,
) -> Assembled:
    notes = Notes(numbers=dropped)
    intact = dropped == 0  # the prefix every kept block was made on is unchanged
    sent = 0
    chosen: list[tuple[Message, ...]] = []
    for offset, turn in enumerate(kept):
        if requests_reasoning and rule != "never" and not turn.plain:
            number = dropped + offset + 1
            carriers, intact = _carriers_to_send(
                turn, number, notes, intact=intact, prefix=rule == "prefix",
                system_digest=system_digest, tools_digest=tools_digest,
                provider=provider, model=model,
            )  # fmt: skip
            if carriers is not None:
                chosen.append(_answered(carriers))
                sent += 1
                continue
        chosen.append(_answered(turn.answer))
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


def _carriers_to_send(
    turn: StoredTurn,
    number: int,
    notes: Notes,
    *,
    intact: bool,
    prefix: bool,
    system_digest: str,
    tools_digest: str,
    provider: str,
    model: str,
) -> tuple[tuple[Message, ...] | None, bool]:
    """Turn ``number``'s messages with their carriers when they may go back (``None``
    when only its text does, with the reason noted), and whether the prefix of the
    turns after it is still as it was when they were made."""
    if turn.provider != provider or turn.model != model:
        # Never sent to this model, so leaving them out changes no prefix it saw.
        if turn.carriers_json is not None or turn.carriers_cleared:
            notes.add(number, "answered by another model")
        return None, intact
    if turn.carriers_json is None:
        notes.add(number, "cleared" if turn.carriers_cleared else f"ran {turn.mode}")
        # Cleared blocks were in the prefix of later ones; a hidden turn never had any.
        return None, intact and not turn.carriers_cleared
    if prefix:
        if turn.system_digest != system_digest or turn.tools_digest != tools_digest:
            notes.add(number, "changed persona or tools")
            return None, False
        if not intact:
            notes.add(number, "changed prefix")
            return None, False
    return turn.carriers, intact


def _trim(turns: Sequence[StoredTurn], budget: int | None, fixed_tokens: int) -> int:
    """How many of the oldest turns to leave out so the rest fit ``budget`` (each turn
    counted by its stored bytes: nothing is decoded to measure it)."""
    if budget is None:
        return 0
    room = budget - fixed_tokens
    sizes = [math.ceil(turn.size / BYTES_PER_TOKEN) for turn in turns]
    total = sum(sizes)
    dropped = 0
    while dropped < len(sizes) and total > room:
        total -= sizes[dropped]
        dropped += 1
    return dropped


def _answered(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """A turn's messages as a follow-up sends them: without a call that was never
    answered (a turn cut short by a limit, a failure or a stop), which no provider
    takes."""
    answered = {
        part.tool_call_id
        for message in messages
        for part in message.parts
        if isinstance(part, ToolResultPart)
    }
    out: list[Message] = []
    for message in messages:
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
            left_out = (
                "The oldest turn of the conversation was"
                if self.numbers == 1
                else f"The oldest {self.numbers} turns of the conversation were"
            )
            said.append(
                f"{left_out} left out to fit {model}'s "
                f"{capability.context_window:,}-token context window."
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


def _turns(numbers: list[int]) -> str:
    if len(numbers) == 1:
        return f"turn {numbers[0]}"
    listed = ", ".join(str(number) for number in numbers[:-1])
    return f"turns {listed} and {numbers[-1]}"
