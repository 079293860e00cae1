"""``thoughtline mcp``: the run API as an MCP server over stdio (needs the ``mcp`` extra).

Two tools, both with typed output schemas:

- ``orchestration_run`` starts a run. With ``wait`` (the default) it returns the final
  ``thoughtline.run/v1`` snapshot and sends a progress notification per task started and
  completed when the client asked for progress; with ``timeout_s`` exceeded it returns
  the current snapshot (status ``running``) and the run goes on. With ``wait=false`` it
  returns at once (status ``planned``/``running``) and this process keeps running it.
  With ``continues`` (the id of an ended run) the run follows up on that run: it joins
  its conversation and runs its tasks again, each sent the earlier turns.
- ``orchestration_status`` returns a run's snapshot (the latest when no id is given) and
  the most recent runs.

Bad input (unknown mode, role or provider, a missing key, an unknown run id, a run to
continue that has not ended or keeps no history) comes back as a tool error whose text
starts with the stable error code. Like every surface, this
one renders the snapshot and contains no disclosure logic: reasoning is in the snapshot
exactly when the run's gate attached it to a task.

Every ``mcp`` import of thoughtline lives in this package: ``schema`` (the tools' input
and output schemas), ``tools`` (the tools and the runs they start) and ``server`` (the
MCP server on stdio). stdout carries the protocol; logs go to stderr.
"""

from thoughtline.integrations.mcp.server import build_server, serve_stdio
from thoughtline.integrations.mcp.tools import ThoughtlineMCP

__all__ = ["ThoughtlineMCP", "build_server", "serve_stdio"]
