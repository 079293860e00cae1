// A run's tool servers starting, as the terminal shows them: a line per server still
// starting (with the time since its start began) or failed (with its error), and one
// note for those ready (each with its start time and tool count). Fed by the snapshot's
// `tool_server_starts` and the `tool_server.start` events; names and messages are
// untrusted text (never parsed as HTML).

import { h } from "./dom.js";
import { formatElapsed } from "./tasks.js";

/**
 * `starts` (the snapshot's `tool_server_starts`) with one `tool_server.start` event's
 * server as it tells, as the daemon folds it: a server keeps its place and when its start
 * began; a `starting` told with `duration_ms` (a start under way) began that long ago.
 * @param {Array<Record<string, any>>} starts
 * @param {Record<string, any>} data
 */
export function withServerStart(starts, data) {
  if (!data || typeof data !== "object" || typeof data.server !== "string") return starts;
  const entry = { server: data.server, state: String(data.state ?? "failed") };
  const known = starts.find((start) => start.server === data.server);
  if (entry.state !== "starting" && known) entry.started_at = known.started_at;
  else {
    const ago = Number.isFinite(data.duration_ms) ? data.duration_ms : 0;
    entry.started_at = new Date(Date.now() - ago).toISOString();
  }
  if (entry.state !== "starting" && Number.isFinite(data.duration_ms)) entry.duration_ms = data.duration_ms;
  if (Number.isFinite(data.tools)) entry.tools = data.tools;
  if (data.error && typeof data.error === "object") entry.error = data.error;
  return known ? starts.map((start) => (start === known ? entry : start)) : [...starts, entry];
}

function tools(count) {
  return Number.isFinite(count) ? ` (${count} ${count === 1 ? "tool" : "tools"})` : "";
}

export class ServerStarts {
  constructor() {
    this.element = h("div", { class: "server-starts", testid: "server-starts", role: "status", hidden: true });
    /** @type {Array<Record<string, any>>} */
    this.starts = [];
    /** server name -> the element whose text ticks while it starts */
    this.clocks = new Map();
  }

  /** @param {unknown} starts the snapshot's `tool_server_starts` */
  update(starts) {
    this.starts = Array.isArray(starts) ? starts.filter((start) => start && typeof start === "object") : [];
    this.render();
  }

  get starting() {
    return this.starts.some((start) => start.state === "starting");
  }

  render() {
    this.clocks.clear();
    const lines = [];
    const ready = [];
    for (const start of this.starts) {
      const name = String(start.server);
      if (start.state === "starting") {
        const line = h("p", { class: "server-start", testid: "server-starting", "data-server": name });
        this.clocks.set(name, { line, start });
        lines.push(line);
      } else if (start.state === "ready") {
        ready.push(`${name} ${formatElapsed(start.duration_ms)}${tools(start.tools)}`);
      } else {
        const error = start.error && typeof start.error === "object" ? start.error : {};
        const after = Number.isFinite(start.duration_ms) ? ` after ${formatElapsed(start.duration_ms)}` : "";
        lines.push(
          h(
            "p",
            { class: "server-start failed", testid: "server-failed", "data-server": name },
            `✗ MCP server ${name} did not start${after}: ${String(error.code ?? "TOOL_SERVER_UNAVAILABLE")}: ${String(error.message ?? "")}`,
          ),
        );
      }
    }
    if (ready.length) {
      lines.push(h("p", { class: "server-start ready", testid: "servers-ready" }, `MCP servers ready: ${ready.join(", ")}`));
    }
    this.element.replaceChildren(...lines);
    this.element.hidden = lines.length === 0;
    this.tick();
  }

  /** The time each server still starting has been starting; called every second. */
  tick() {
    for (const [name, { line, start }] of this.clocks) {
      const began = Date.parse(start.started_at ?? "");
      const elapsed = Number.isNaN(began) ? "" : ` ${formatElapsed(Math.max(0, Date.now() - began))}`;
      line.textContent = `starting MCP server ${name}…${elapsed}`;
    }
  }
}
