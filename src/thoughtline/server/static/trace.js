// The operator's trace view: the answer, reasoning and provider_raw layers, one readable
// line per event (its time, kind, task and a short summary), recorded reasoning as text
// once, and each event's raw JSON behind a toggle (built when opened). A layer the daemon
// refuses (403) shows the daemon's message; an empty layer says why, as far as the run
// tells. Tasks are named by role (their id in the tooltip); request and response bodies,
// which the trace keeps as the text that crossed the wire, are shown as formatted JSON.

import { api } from "./api.js";
import { h } from "./dom.js";
import { emptyLayerReason, eventSummary } from "./tracelines.js";

const LAYERS = [
  ["answer", "Answer"],
  ["reasoning", "Reasoning"],
  ["provider_raw", "Provider raw"],
];

export class TraceView {
  /**
   * @param {string} runId
   * @param {(taskId: string) => string | null} [taskLabel] a task's role name, when known
   * @param {() => Record<string, any> | null} [currentRun] the run's snapshot, when known
   */
  constructor(runId, taskLabel = () => null, currentRun = () => null) {
    this.runId = runId;
    this.taskLabel = taskLabel;
    this.currentRun = currentRun;
    /** @type {HTMLElement | null} the note of an empty layer, while one is shown */
    this.emptyNote = null;
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
    this.emptyNote = null;
    if (events.length === 0) {
      this.emptyNote = h("p", { class: "muted", testid: "trace-empty", "data-layer": layer }, emptyLayerReason(layer, this.currentRun()));
      this.body.replaceChildren(this.emptyNote);
      return;
    }
    const list = h("ol", { class: "trace-events", testid: "trace-events", "data-layer": layer });
    for (const event of events) list.append(this.eventItem(event));
    this.body.replaceChildren(
      h("p", { class: "muted small" }, `${events.length} event${events.length === 1 ? "" : "s"}`),
      list,
    );
  }

  /** The run's snapshot arrived or changed: an empty layer's note may say more now. */
  runChanged() {
    if (this.emptyNote) this.emptyNote.textContent = emptyLayerReason(this.emptyNote.dataset.layer, this.currentRun());
  }

  /** One event: its line, its recorded reasoning as text, its raw JSON on request. */
  eventItem(event) {
    const metadata = event.metadata && typeof event.metadata === "object" ? event.metadata : {};
    const label = event.task_id ? this.taskLabel(String(event.task_id)) : null;
    const raw = h("pre", { class: "trace-metadata", testid: "trace-metadata" });
    // Built when first opened (the click comes before the toggle), so the page holds the
    // reasoning once until the reader asks for the raw event.
    const build = () => {
      if (!raw.textContent) raw.textContent = JSON.stringify(readableMetadata(metadata), null, 2);
    };
    const toggle = h("details", { class: "trace-raw", testid: "trace-raw" }, h("summary", { onclick: build }, "Raw JSON"), raw);
    toggle.addEventListener("toggle", () => {
      if (toggle.open) build();
    });
    const reasoning = event.type === "worker.reasoning" && typeof metadata.reasoning === "string" && metadata.reasoning
      ? h("div", { class: "trace-reasoning", testid: "trace-reasoning" }, metadata.reasoning)
      : null;
    return h(
      "li",
      { testid: "trace-event", "data-type": String(event.type ?? ""), "data-layer": String(event.layer ?? "") },
      h(
        "div",
        { class: "trace-line", testid: "trace-line" },
        h("time", { class: "trace-time", testid: "trace-time", datetime: String(event.at ?? ""), title: String(event.at ?? "") }, clock(event.at)),
        h("span", { class: "trace-type", testid: "trace-type" }, String(event.type ?? "")),
        event.task_id
          ? h("span", { class: "trace-task", testid: "trace-task", title: String(event.task_id) }, label ?? String(event.task_id))
          : null,
        h("span", { class: "trace-summary", testid: "trace-summary" }, eventSummary(event)),
      ),
      reasoning,
      toggle,
    );
  }
}

/** "12:53:01.528" in the reader's time zone (the whole timestamp in the tooltip). */
function clock(at) {
  const date = new Date(String(at ?? ""));
  if (Number.isNaN(date.getTime())) return String(at ?? "");
  const pad = (value, size = 2) => String(value).padStart(size, "0");
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
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
