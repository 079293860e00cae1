"""Fixtures shared by the suites: one provider simulator server for the whole session;
each test starts from a clean script. Tests that cost seconds are marked ``slow`` here,
so ``pytest -m "not slow"`` is a quick loop and a plain ``pytest`` runs everything."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from thoughtline.testing import DEFAULT_TRANSCRIPT, Simulator, SimulatorServer

CANARY_KEY = "tl-canary-key-0c4f9e27d1b8a653"
KEY_VARIABLES = (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "DEEPSEEK_API_KEY",
    "VLLM_API_KEY",
    "LLAMACPP_API_KEY",
)


# Whole files and folders whose every test starts a process, a browser or a fuzzer.
SLOW_PATHS = (
    "tests/acp/test_acp_agent.py",  # the ACP agent as a child process over stdio
    "tests/cli/",  # the command line as a user runs it: one process per command
    "tests/e2e/test_bounded_memory.py",  # children reading 300 MB endless lines
    "tests/e2e/test_soak_postgres.py",  # three daemons on one PostgreSQL, faults injected
    "tests/mcp/test_inspector_cli.py",  # the MCP inspector (node) driving a server process
    "tests/mcp/test_mcp_conversations.py",  # the MCP server as a child process over stdio
    "tests/mcp/test_mcp_server.py",  # the MCP server as a child process over stdio
    "tests/server/test_connections.py",  # timeouts waited out, a daemon under a low ulimit
    "tests/server/test_openapi_fuzz.py",  # schemathesis against the OpenAPI document
    "tests/server/test_processes.py",  # daemons in child processes, signals
    "tests/server/web/",  # chromium driving the daemon's page
    "tests/store/test_concurrency.py",  # many processes opening one database
    "tests/store/test_damage.py",  # every command, as a process, on a damaged file
    "tests/store/test_files.py",  # file modes read from a process under another umask
    "tests/tools/test_server_processes.py",  # thoughtline and tool servers, killed mid-call
)

# Single tests ("path::name", parameters left out) that start processes or stream long.
SLOW_TESTS = frozenset(
    {
        "tests/api/test_conversations.py::test_ctrl_c_during_a_send_cancels_that_run_and_the_conversation_stays_put",
        "tests/api/test_conversations.py::test_the_example_script_holds_a_two_turn_conversation",
        "tests/api/test_orchestrator.py::test_example_script_prints_both_specialists_with_their_reasoning",
        "tests/api/test_orchestrator.py::test_status_runs_trace_and_purge_return_what_the_cli_shows",
        "tests/api/test_public_surface.py::test_importing_thoughtline_loads_neither_the_http_client_nor_asyncio",
        "tests/core/test_accumulator.py::test_million_deltas_join_linearly",
        "tests/server/test_disconnects.py::test_many_subscribers_dropping_mid_stream_leave_a_quiet_log",
        "tests/server/test_daemon_token.py::test_a_reused_token_is_shown_whole_on_a_terminal",
        "tests/server/test_daemon_token.py::test_off_loopback_a_strong_token_serves",
        "tests/server/test_daemon_token.py::test_off_loopback_a_weak_token_is_refused_in_one_sentence",
        "tests/server/test_guard.py::test_serve_refuses_an_allowed_host_that_is_not_a_name",
        "tests/server/test_guard.py::test_serve_takes_allowed_hosts_from_flags_and_the_environment",
        "tests/server/test_limits.py::test_a_bad_task_cap_in_the_config_names_the_key",
        "tests/server/test_limits.py::test_the_cli_applies_the_configured_cap_to_plan_files",
        "tests/store/test_purge.py::test_a_reader_of_another_process_keeps_purged_bytes_and_purge_says_so",
        "tests/store/test_purge.py::test_thoughtline_purge_says_when_bytes_are_still_on_disk",
        "tests/store/test_recovery.py::test_rebuilt_reasoning_ages_with_its_log_and_is_not_resurrected",
        "tests/store/test_recovery.py::test_run_of_a_killed_process_is_interrupted",
        "tests/store/test_recovery.py::test_run_of_a_live_process_is_not_touched",
        "tests/store/test_recovery.py::test_what_reached_the_event_log_is_kept_per_mode",
        "tests/runtime/test_hidden_switches.py::test_a_hidden_tool_loop_switches_off_or_keeps_the_carriers_it_needs",
        "tests/telemetry/test_otlp_export.py::test_thoughtline_run_delivers_spans_before_it_exits",
        "tests/tools/test_demo_tools.py::test_a_root_that_is_not_a_directory_is_one_sentence",
        "tests/tools/test_demo_tools.py::test_the_server_over_stdio_offers_three_read_only_tools_and_refuses_as_tool_errors",
        "tests/tools/test_demo_tools.py::test_without_a_root_the_server_offers_no_file_reader",
        "tests/telemetry/test_settings.py::test_without_the_otel_extra_the_guard_names_it",
    }
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests listed above ``slow`` (before ``-m`` selects by marker)."""
    for item in items:
        path, _, name = item.nodeid.partition("::")
        if path.startswith(SLOW_PATHS) or f"{path}::{name.split('[')[0]}" in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def sim_server() -> Iterator[SimulatorServer]:
    # One fixed answer for the library's own tests; the default model has tests of its own.
    with SimulatorServer(Simulator(default_transcript=DEFAULT_TRANSCRIPT)) as server:
        yield server


@pytest.fixture
def sim(sim_server: SimulatorServer) -> Iterator[Simulator]:
    simulator = sim_server.simulator
    default_transcript = simulator.default_transcript  # a test may set its own
    simulator.reset()
    simulator.pace_s = 0.0
    yield simulator
    simulator.reset()
    simulator.pace_s = 0.0
    simulator.strict_round_trips = True
    simulator.default_transcript = default_transcript


@pytest.fixture
def environ(sim_server: SimulatorServer) -> dict[str, str]:
    """Base URLs pointing at the simulator and the same canary key for every provider."""
    env = sim_server.environ()
    for variable in KEY_VARIABLES:
        env[variable] = CANARY_KEY
    return env
