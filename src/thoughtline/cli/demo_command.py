"""``thoughtline demo``: every endpoint, offline, against the provider simulator.

Starts the simulator on 127.0.0.1, sends one request through each built-in endpoint with
reasoning requested and with nothing requested, and prints what each provider returned:
reasoning parts by kind, the reasoning token count, and timings. The providers are
simulated; the wire protocols, adapters and transport are the real ones.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from thoughtline.accumulator import ModelResponse
from thoughtline.providers.client import ProviderClient
from thoughtline.providers.endpoints import EndpointRegistry
from thoughtline.requests import ModelRequest, ReasoningRequest

DEMO_ENDPOINTS: tuple[tuple[str, str, str], ...] = (
    ("anthropic", "claude-sonnet-4-6", "adaptive thinking, summarized"),
    ("anthropic", "claude-sonnet-4-5", "budget thinking"),
    ("openai", "gpt-5.5", "Responses API"),
    ("openrouter", "anthropic/claude-sonnet-4.6", "reasoning_details"),
    ("gemini", "gemini-3-pro", "thought parts"),
    ("deepseek", "deepseek-reasoner", "raw reasoning_content"),
    ("vllm", "qwen3-32b", "raw reasoning"),
    ("ollama", "qwen3:8b", "native NDJSON"),
)
DEMO_KEY = "demo-key-not-a-real-credential"
DEMO_PROMPT = "In one sentence: why do we keep reasoning separate from the answer?"


@dataclass(frozen=True, slots=True)
class DemoRow:
    endpoint: str
    model: str
    note: str
    requested: bool
    wire_api: str
    response: ModelResponse
    first_reasoning_ms: float | None
    total_ms: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "model": self.model,
            "wire_api": self.wire_api,
            "reasoning_requested": self.requested,
            "reasoning_parts": [
                {
                    "kind": part.kind,
                    "chars": len(part.text),
                    "opaque": sorted(part.provider_metadata),
                }
                for part in self.response.reasoning_parts
            ],
            "reasoning_tokens": self.response.usage.reasoning_tokens,
            "answer_chars": len(self.response.text),
            "error": self.response.error.code if self.response.error else None,
            "first_reasoning_ms": self.first_reasoning_ms,
            "total_ms": self.total_ms,
        }


async def run_demo(environ: dict[str, str]) -> list[DemoRow]:
    registry = EndpointRegistry(environ=environ)
    rows: list[DemoRow] = []
    for name, model, note in DEMO_ENDPOINTS:
        endpoint = registry.resolve(name)
        async with ProviderClient(endpoint) as client:
            for requested in (True, False):
                request = ModelRequest.simple(
                    model, DEMO_PROMPT, reasoning=ReasoningRequest(enabled=requested)
                )
                call = await client.complete(request)
                timings = call.exchange.timings if call.exchange else None
                rows.append(
                    DemoRow(
                        endpoint=name,
                        model=model,
                        note=note,
                        requested=requested,
                        wire_api=endpoint.wire_api,
                        response=call.response,
                        first_reasoning_ms=timings.first_reasoning_ms if timings else None,
                        total_ms=timings.total_ms if timings else None,
                    )
                )
    return rows


def _describe(row: DemoRow) -> str:
    if row.response.error is not None:
        return f"[red]{row.response.error.code}[/]"
    if not row.response.reasoning_parts:
        return "[dim]none[/]"
    described = []
    for part in row.response.reasoning_parts:
        if part.text:
            described.append(f"{part.kind} ({len(part.text)} chars)")
        else:
            described.append(f"{part.kind} (opaque: {', '.join(sorted(part.provider_metadata))})")
    return "\n".join(described)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


@click.command("demo")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def demo_command(as_json: bool) -> None:
    """Every endpoint, offline, against the built-in provider simulator."""
    from thoughtline.testing import SimulatorServer  # needs the [testing] extra

    with SimulatorServer() as server:
        environ = server.environ()
        for variable in ("ANTHROPIC", "OPENAI", "OPENROUTER", "GEMINI", "DEEPSEEK"):
            environ[f"{variable}_API_KEY"] = DEMO_KEY
        rows = asyncio.run(run_demo(environ))
    if as_json:
        click.echo(json.dumps([row.to_dict() for row in rows], indent=2))
        return
    console = Console(width=None if Console().is_terminal else 150)
    console.print(
        "[bold]thoughtline demo[/] — the providers are [bold]simulated[/] on "
        f"{server.url}; the wire protocols, adapters and transport are the real ones.\n"
        f"Prompt: {DEMO_PROMPT!r}\n"
    )
    table = Table(title="What each provider returns", title_justify="left", show_lines=True)
    table.add_column("endpoint / model")
    table.add_column("wire API")
    table.add_column("reasoning requested: returned")
    table.add_column("nothing requested: returned anyway")
    table.add_column("reasoning tokens", justify="right")
    table.add_column("first reasoning / total", justify="right")
    for requested, unrequested in zip(rows[::2], rows[1::2], strict=True):
        tokens = requested.response.usage.reasoning_tokens
        table.add_row(
            f"{requested.endpoint}\n[dim]{requested.model}\n{requested.note}[/]",
            requested.wire_api,
            _describe(requested),
            _describe(unrequested),
            "-" if tokens is None else str(tokens),
            f"{_ms(requested.first_reasoning_ms)} / {_ms(requested.total_ms)}",
        )
    console.print(table)
    console.print(
        "[dim]'none' with reasoning tokens means the model reasoned but the provider did "
        "not return the text. Reasoning that arrives although nothing was requested "
        "(DeepSeek, Ollama, Gemini signatures) is what a provider sends by default; "
        "disclosure modes decide whether it is kept.[/]"
    )
