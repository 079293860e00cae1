// The operator's trace view: the answer, reasoning and provider_raw layers as event lists
// with expandable metadata. A layer the daemon refuses (403) shows the daemon's message.
// Tasks are named by role (their id in the tooltip); request and response bodies, which
// the trace keeps as the text that crossed the wire, are shown as formatted JSON.

import { api } from "./api.js";
import { h, timeElement } from "./dom.js";

const LAYERS = [
  ["answer", "Answer"],
  ["reasoning", "Reasoning"],
  ["provider_raw", "Provider raw"],
];

export class TraceView {
  /**
   * @param {string} runId
   * @param {(taskId: string) => string | null} [taskLabel] a task's role name, when known
   */
  constructor(runId, taskLabel = () => null) {
    this.runId = runId;
    this.taskLabel = taskLabel;
    this.layer = "answer";
    this.loaded = false;
    this.generation = 0;
    this.buttons = new Map();
    const tabs = h("div", { class: "layer-tabs", role: "tablist", "aria-label": "Trace layer" });
    for (const [layer, label] of LAYERS) {
      const button = h(
        "button",
        {
          type: "button",
          role: "tab",
          class: "layer-tab",
          testid: `trace-layer-${layer}`,
          "data-layer": layer,
          onclick: () => this.show(layer),
        },
        label,
      );
      this.buttons.set(layer, button);
      tabs.append(button);
    }
    this.body = h("div", { class: "trace-body", testid: "trace-body", role: "tabpanel" });
    this.element = h(
      "section",
      { class: "trace", testid: "trace-view" },
      h(
        "div",
        { class: "trace-toolbar" },
        tabs,
        h("button", { type: "button", class: "button subtle small", testid: "trace-refresh", onclick: () => this.load() }, "Refresh"),
      ),
      this.body,
    );
  }

  /** Load the current layer the first time the tab is opened. */
  activate() {
    if (!this.loaded) this.show(this.layer);
  }

  show(layer) {
    this.layer = layer;
    for (const [name, button] of this.buttons) button.setAttribute("aria-selected", String(name === layer));
    this.load();
  }

  async load() {
    this.loaded = true;
    const generation = ++this.generation;
    const layer = this.layer;
    this.body.setAttribute("aria-busy", "true");
    this.body.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    try {
      const events = await api.trace(this.runId, layer);
      if (generation !== this.generation) return;
      this.render(layer, Array.isArray(events) ? events : []);
    } catch (error) {
      if (generation !== this.generation) return;
      const forbidden = error.status === 403;
      this.body.replaceChildren(
        h(
          "p",
          { class: forbidden ? "note locked" : "note error", testid: forbidden ? "trace-forbidden" : "trace-error" },
          forbidden ? "Operator access required. " : "",
          String(error.message ?? error),
          error.code ? h("code", { class: "code-tag" }, String(error.code)) : null,
        ),
      );
    } finally {
      if (generation === this.generation) this.body.removeAttribute("aria-busy");
    }
  }

  render(layer, events) {
    if (events.length === 0) {
      this.body.replaceChildren(
        h("p", { class: "muted", testid: "trace-empty" }, `No events in the ${layer} layer for this run.`),
      );
      return;
    }
    const list = h("ol", { class: "trace-events", testid: "trace-events", "data-layer": layer });
    for (const event of events) {
      const metadata = JSON.stringify(readableMetadata(event.metadata ?? {}), null, 2);
      const label = event.task_id ? this.taskLabel(String(event.task_id)) : null;
      list.append(
        h(
          "li",
          { testid: "trace-event", "data-type": String(event.type ?? "") },
          h(
            "details",
            {},
            h(
              "summary",
              {},
              timeElement(event.at, { class: "trace-time" }) ?? "",
              h("span", { class: "trace-type" }, String(event.type ?? "")),
              event.task_id
                ? h("span", { class: "trace-task", testid: "trace-task", title: String(event.task_id) }, label ?? String(event.task_id))
                : null,
            ),
            h("pre", { class: "trace-metadata", testid: "trace-metadata" }, metadata),
          ),
        ),
      );
    }
    this.body.replaceChildren(
      h("p", { class: "muted small" }, `${events.length} event${events.length === 1 ? "" : "s"}`),
      list,
    );
  }
}

const BODY_FIELDS = ["request_body", "response_body"];

/** The metadata with wire bodies (JSON text, SSE or NDJSON streams) parsed for display. */
export function readableMetadata(metadata) {
  if (!metadata || typeof metadata !== "object") return metadata;
  const copy = { ...metadata };
  for (const field of BODY_FIELDS) {
    if (typeof copy[field] === "string") copy[field] = parseBody(copy[field]);
  }
  return copy;
}

/** A body as JSON; a stream as its frames (each data line parsed); otherwise the text. */
function parseBody(text) {
  const whole = tryJson(text);
  if (whole !== undefined) return whole;
  const lines = text.split(/\r?\n/).filter((line) => line.trim());
  if (lines.length === 0) return text;
  if (lines.every((line) => tryJson(line) !== undefined)) return lines.map((line) => tryJson(line)); // NDJSON
  if (!lines.some((line) => line.startsWith("data:"))) return text;
  const frames = [];
  let frame = {};
  for (const line of text.split(/\r?\n/)) {
    if (!line.trim()) {
      if (Object.keys(frame).length) frames.push(frame);
      frame = {};
    } else if (line.startsWith("event:")) {
      frame.event = line.slice(6).trim();
    } else if (line.startsWith("data:")) {
      const data = line.slice(5).trim();
      const parsed = tryJson(data);
      frame.data = parsed === undefined ? data : parsed;
    } else if (!line.startsWith(":")) {
      frame.text = line;
    }
  }
  if (Object.keys(frame).length) frames.push(frame);
  return frames;
}

function tryJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
