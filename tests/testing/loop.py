"""A two-step tool loop against the running simulator, through the project's own client:
step 1 answers with a tool call, step 2 sends the history back (built by the wire's
``_history`` from ``ModelResponse.to_message()``), optionally broken on purpose."""

from __future__ import annotations

import dataclasses
import json
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from thoughtline import EndpointRegistry, ModelRequest, ProviderClient, ReasoningRequest
from thoughtline.model.accumulator import ModelResponse
from thoughtline.model.parts import Part, ReasoningPart, ToolCallPart, ToolResultPart
from thoughtline.model.requests import Message, ToolSpec
from thoughtline.providers.retry import RetryPolicy
from thoughtline.testing import SimReasoning, SimToolCall, Simulator, SimulatorServer, Transcript

WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
CLOCK = ToolSpec(
    name="get_time",
    description="The time in a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)
CALL = SimToolCall(call_id="call_w1", name="get_weather", arguments='{"city":"Zürich"}')
SECOND_CALL = SimToolCall(call_id="call_w2", name="get_weather", arguments='{"city":"Bern"}')
TOOL_STEP = Transcript(
    reasoning=(SimReasoning(kind="summary", text="I need the weather, so I call the tool."),),
    tool_calls=(CALL,),
    finish="tool_calls",
    response_id="step_1",
)
FINAL_STEP = Transcript(answer="12 °C in Zürich.", response_id="step_2")
SYSTEM = "Answer briefly."

PartEdit = Callable[[tuple[Part, ...]], Sequence[Part]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Loop:
    """One endpoint and model, driven step by step through :class:`ProviderClient`."""

    environ: dict[str, str]
    endpoint: str
    model: str
    reasoning: ReasoningRequest = dataclasses.field(
        default_factory=lambda: ReasoningRequest(enabled=True)
    )
    stream: bool = True

    def request(
        self,
        messages: Sequence[Message],
        *,
        system: str = SYSTEM,
        tools: Sequence[ToolSpec] = (WEATHER, CLOCK),
    ) -> ModelRequest:
        return ModelRequest(
            model=self.model,
            system=system,
            messages=tuple(messages),
            tools=tuple(tools),
            reasoning=self.reasoning,
            stream=self.stream,
        )

    async def call(self, request: ModelRequest) -> ModelResponse:
        endpoint = EndpointRegistry(environ=self.environ).resolve(self.endpoint)
        client = ProviderClient(endpoint, retry=RetryPolicy(max_retries=0))
        async with client, client.call(request) as call:
            async for _event in call:
                pass
        return call.response

    async def first(self, sim: Simulator, first: Transcript = TOOL_STEP) -> ModelResponse:
        """Script both steps and run step 1 (it must succeed and call the tool)."""
        sim.script_turns(first, FINAL_STEP, profile=self.endpoint)
        response = await self.call(self.request([Message(role="user", content="Weather?")]))
        assert response.error is None, response.error
        assert response.tool_calls
        return response

    def history(self, response: ModelResponse, edit: PartEdit | None = None) -> tuple[Message, ...]:
        """user → the step-1 assistant turn (edited by ``edit``) → its tool results."""
        parts = response.to_message().parts
        assistant = Message(role="assistant", parts=edit(parts) if edit else parts)
        results = [
            ToolResultPart(tool_call_id=call.tool_call_id, name=call.name, content="12 °C")
            for call in response.tool_calls
        ]
        return (
            Message(role="user", content="Weather?"),
            assistant,
            Message(role="user", parts=results),
        )

    async def second(
        self,
        response: ModelResponse,
        edit: PartEdit | None = None,
        *,
        system: str = SYSTEM,
        tools: Sequence[ToolSpec] = (WEATHER, CLOCK),
    ) -> ModelResponse:
        """Step 2: the history back to the simulator."""
        history = self.history(response, edit)
        return await self.call(self.request(history, system=system, tools=tools))


def reasoning_of(parts: Sequence[Part]) -> list[ReasoningPart]:
    return [part for part in parts if isinstance(part, ReasoningPart)]


def without_reasoning(parts: tuple[Part, ...]) -> list[Part]:
    """Every reasoning part dropped."""
    return [part for part in parts if not isinstance(part, ReasoningPart)]


def calls_first(parts: tuple[Part, ...]) -> list[Part]:
    """The tool calls moved before everything else (reasoning after its call)."""
    calls = [part for part in parts if isinstance(part, ToolCallPart)]
    return calls + [part for part in parts if not isinstance(part, ToolCallPart)]


def with_metadata(key: str, value: object, *, kinds: type = ReasoningPart) -> PartEdit:
    """Every part of type ``kinds`` carrying ``key`` gets ``value`` instead (``None``
    removes the key)."""

    def edit(parts: tuple[Part, ...]) -> list[Part]:
        out: list[Part] = []
        for part in parts:
            metadata = getattr(part, "provider_metadata", {})
            if isinstance(part, kinds) and key in metadata:
                changed = {k: v for k, v in metadata.items() if k != key}
                if value is not None:
                    changed[key] = value
                part = dataclasses.replace(part, provider_metadata=changed)  # type: ignore[type-var]
            out.append(part)
        return out

    return edit


def with_reasoning_text(text: str) -> PartEdit:
    """Every reasoning part's text replaced by ``text`` (``""`` blanks it)."""

    def edit(parts: tuple[Part, ...]) -> list[Part]:
        return [
            dataclasses.replace(part, text=text) if isinstance(part, ReasoningPart) else part
            for part in parts
        ]

    return edit


def assert_refused(response: ModelResponse, status: int, *needles: str) -> None:
    """The provider's refusal, mapped by the client, its message kept."""
    error = response.error
    assert error is not None, "the broken round trip was answered"
    assert error.status == status
    if status == 400:
        assert error.code == "PROVIDER_BAD_REQUEST"
    for needle in needles:
        assert needle in error.message, error.message


def post_raw(
    server: SimulatorServer,
    path: str,
    body: Mapping[str, Any],
    headers: Mapping[str, str] | None = None,
) -> tuple[int, Any]:
    """POST a hand-made body (answered whole, not streamed) to the simulator: for
    histories the project's own history code never builds. Returns the status and the
    decoded JSON answer."""
    data = json.dumps({**body, "stream": False}).encode()
    request = urllib.request.Request(
        server.url + path,
        data=data,
        headers={"content-type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())
