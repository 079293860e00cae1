// The live view of one run: header, tabs (tasks / trace), one card per task, fed by
// the run's SSE stream (snapshot, task and delta events, terminal event).

import { api } from "./api.js";
import { ConversationThread } from "./conversation.js";
import { costElement, costSoFar, h, statusBadge, timeElement } from "./dom.js";
import { ServerStarts, withServerStart } from "./servers.js";
import { followRun } from "./sse.js";
import { TaskCard } from "./tasks.js";
import { TraceView } from "./trace.js";

const TERMINAL_EVENTS = new Set(["run.completed", "run.failed", "run.cancelled", "run.interrupted"]);
const UNFINISHED = new Set(["queued", "running"]);
const TERMINAL_RUN = new Set([
  "completed",
  "completed_with_failures",
  "completed_prepare_only",
  "failed",
  "cancelled",
  "interrupted",
]);
const CANCELLABLE = new Set(["planned", "running"]);
const TICK_MS = 1000;
// A request can be megabytes: the header shows its start, the whole text on demand.
const REQUEST_PREVIEW_CHARS = 1000;
const REQUEST_PREVIEW_LINES = 10;
const TITLE_CHARS = 80;

/**
 * The start of a request: at most `chars` characters in `lines` lines.
 * @param {string} request
 */
export function requestPreview(request, chars = REQUEST_PREVIEW_CHARS, lines = REQUEST_PREVIEW_LINES) {
  return request.slice(0, chars).split("\n").slice(0, lines).join("\n");
}
const STREAM_LABELS = {
  connecting: "connecting…",
  live: "live",
  reconnecting: "reconnecting…",
  ended: "final",
  error: "stream unavailable",
};

export class RunView {
  /**
   * @param {string} runId the run's id, or any form the daemon resolves (a short id, the
   *   start of an id, `latest`): the view takes the whole id from the first snapshot
   * @param {{onFinished: () => void, onFollowUp: (runId: string) => void, onWholeId?: (runId: string) => void}} hooks
   */
  constructor(runId, hooks) {
    this.runId = runId;
    // The short id people type; the whole id on hover. Filled in from the snapshot.
    this.idElement = h("code", { class: "run-id", testid: "run-id", title: runId }, runId);
    this.hooks = hooks;
    /** @type {Record<string, any> | null} */
    this.run = null;
    /** task id -> TaskCard */
    this.cards = new Map();
    /** task ids that received reasoning.delta events */
    this.reasoningStreamed = new Set();
    this.tab = "tasks";
    this.threadLoaded = false;

    this.heading = h("h2", { class: "run-request", testid: "run-request" }, "Loading run…");
    /** the request the heading shows (or shows the start of), and whether whole */
    this.request = null;
    this.requestWhole = false;
    this.requestMore = h("p", { class: "run-request-more", testid: "run-request-more", hidden: true });
    this.statusSlot = h("span", { class: "run-status-slot", role: "status", "aria-live": "polite" });
    this.streamState = h("span", { class: "stream-state", testid: "stream-state" });
    this.meta = h("dl", { class: "run-meta", testid: "run-meta" });
    this.cancelButton = h(
      "button",
      { type: "button", class: "button danger small", testid: "cancel-run", hidden: true, onclick: () => this.cancel() },
      "Cancel run",
    );
    this.message = h("p", { class: "note error", testid: "run-error", role: "alert", hidden: true });
    this.tabButtons = {
      tasks: this.tabButton("tasks", "Tasks"),
      trace: this.tabButton("trace", "Trace"),
    };
    this.taskGrid = h("div", { class: "task-grid", testid: "task-grid" });
    // Its tool servers while they start, then how their starts went.
    this.servers = new ServerStarts();
    // Its conversation's other turns around the task cards, and the follow-up box.
    this.thread = new ConversationThread(runId, { onFollowUp: (id) => hooks.onFollowUp(id) });
    this.tasksPanel = h(
      "section",
      { class: "tab-panel", testid: "tasks-panel", role: "tabpanel" },
      this.thread.before,
      this.thread.currentTurn,
      this.servers.element,
      this.taskGrid,
      this.thread.after,
      this.thread.followUp,
    );
    this.trace = new TraceView(runId, (taskId) => this.taskLabel(taskId), () => this.run);
    this.ticker = window.setInterval(() => this.tick(), TICK_MS);
    this.tracePanel = h("section", { class: "tab-panel", testid: "trace-panel", role: "tabpanel", hidden: true }, this.trace.element);

    this.element = h(
      "div",
      { class: "run-view", testid: "run-view", "data-run-id": runId },
      h(
        "header",
        { class: "run-head" },
        h("div", { class: "run-title-row" }, this.heading, this.statusSlot),
        this.requestMore,
        h("div", { class: "run-subline" }, this.idElement, this.streamState, this.cancelButton),
        this.meta,
      ),
      this.message,
      h("div", { class: "tabs", role: "tablist", "aria-label": "Run view" }, this.tabButtons.tasks, this.tabButtons.trace),
      this.tasksPanel,
      this.tracePanel,
    );
    this.selectTab("tasks");
    this.stream = followRun(() => this.runId, {
      onEvent: (event) => this.handle(event),
      onState: (state, error) => this.streamStateChanged(state, error),
      isFinished: () => this.run !== null && TERMINAL_RUN.has(this.run.status),
    });
  }

  tabButton(tab, label) {
    return h(
      "a",
      { href: tabAddress(this.runId, tab), role: "tab", class: "tab", testid: `tab-${tab}` },
      label,
    );
  }

  /** The run was named by another form of its id: from now on its stream, trace, thread,
   * cancel button and tabs use the whole id (`latest` stays this run when others start). */
  adopt(runId) {
    this.runId = runId;
    this.element.dataset.runId = runId;
    this.thread.runId = runId;
    this.trace.runId = runId;
    for (const [tab, button] of Object.entries(this.tabButtons)) button.setAttribute("href", tabAddress(runId, tab));
    this.hooks.onWholeId?.(runId);
  }

  selectTab(tab) {
    this.tab = tab;
    for (const [name, button] of Object.entries(this.tabButtons)) {
      button.setAttribute("aria-selected", String(name === tab));
    }
    this.tasksPanel.hidden = tab !== "tasks";
    this.tracePanel.hidden = tab !== "trace";
    if (tab === "trace") this.trace.activate();
  }

  close() {
    this.stream.close();
    clearInterval(this.ticker);
  }

  /** "engineer" or "engineer · review" for a task id (the trace shows names, not ids). */
  taskLabel(taskId) {
    const task = this.run?.tasks.find((candidate) => candidate.id === taskId);
    if (!task) return null;
    return task.name && task.name !== task.role ? `${task.role} · ${task.name}` : task.role;
  }

  tick() {
    for (const card of this.cards.values()) card.tick();
    this.servers.tick();
    if (this.run && TERMINAL_RUN.has(this.run.status)) clearInterval(this.ticker);
  }

  /** Mark the tasks whose answer was cut off at the output token limit. */
  checkFinishes() {
    if (!this.run) return;
    for (const task of this.run.tasks) {
      const card = this.cards.get(task.id);
      if (card) card.setTruncated(task.finish_reason === "length");
    }
  }

  /** @returns {boolean} true for the terminal event */
  handle(event) {
    return this.keepingPlace(() => this.apply(event));
  }

  /** Run `change`; a reader scrolled into an answer keeps it where it was on the screen
   * (notices, errors and buttons above it come and go as the run goes on). */
  keepingPlace(change) {
    const anchor = this.readingAnswer();
    const before = anchor?.getBoundingClientRect().top ?? 0;
    const result = change();
    if (anchor?.isConnected) {
      const moved = anchor.getBoundingClientRect().top - before;
      if (Math.abs(moved) >= 1) window.scrollBy(0, moved);
    }
    return result;
  }

  /** The answer whose start is above the top of the screen and whose rest is on it. */
  readingAnswer() {
    if (window.scrollY <= 0 || this.tab !== "tasks") return null;
    for (const card of this.cards.values()) {
      const box = card.answer.getBoundingClientRect();
      if (box.top < 0 && box.bottom > 0) return card.answer;
    }
    return null;
  }

  /** @returns {boolean} true for the terminal event */
  apply(event) {
    let data;
    try {
      data = JSON.parse(event.data);
    } catch {
      return false;
    }
    switch (event.type) {
      case "snapshot":
      case "resync":
        this.applySnapshot(data);
        return false;
      case "task.started":
        this.upsertTask(data);
        return false;
      case "task.completed":
        this.upsertTask(data);
        this.checkFinishes();
        return false;
      case "answer.delta":
        this.appendText(data.task_id, "output", data.text);
        return false;
      case "reasoning.delta":
        this.reasoningStreamed.add(data.task_id);
        this.appendText(data.task_id, "reasoning", data.text);
        return false;
      case "task.tool_call.started":
      case "task.tool_call.completed":
        this.upsertToolCall(data.task_id, data.call);
        return false;
      case "task.step.priced":
        this.priceStep(data.task_id, data.cost);
        return false;
      case "tool_server.start":
        this.serverStarted(data);
        return false;
      default:
        if (TERMINAL_EVENTS.has(event.type)) {
          this.applySnapshot(data);
          this.thread.load(); // the follow-up box waits for the latest turn to end
          this.hooks.onFinished();
          return true;
        }
        return false; // unknown events are ignored: newer daemons may send more
    }
  }

  applySnapshot(snapshot) {
    if (!snapshot || typeof snapshot !== "object") return;
    if (this.run === null && typeof snapshot.id === "string" && snapshot.id !== this.runId) this.adopt(snapshot.id);
    this.run = { ...snapshot, tasks: Array.isArray(snapshot.tasks) ? snapshot.tasks.map((task) => ({ ...task })) : [] };
    this.renderHead();
    this.servers.update(this.run.tool_server_starts);
    this.trace.runChanged();
    this.thread.setCurrent(this.run);
    if (!this.threadLoaded) {
      this.threadLoaded = true;
      this.thread.load();
    }
    const seen = new Set();
    for (const task of this.run.tasks) {
      seen.add(task.id);
      this.renderTask(task);
    }
    for (const [id, card] of this.cards) {
      if (!seen.has(id)) {
        card.element.remove();
        this.cards.delete(id);
      }
    }
    this.checkFinishes();
  }

  /** A tool server's start began, or ended: folded into the run as the daemon does. */
  serverStarted(data) {
    if (!this.run) return;
    const starts = Array.isArray(this.run.tool_server_starts) ? this.run.tool_server_starts : [];
    this.run.tool_server_starts = withServerStart(starts, data);
    this.servers.update(this.run.tool_server_starts);
  }

  upsertTask(incoming) {
    if (!this.run || !incoming || !incoming.id) return;
    const index = this.run.tasks.findIndex((task) => task.id === incoming.id);
    const previous = index === -1 ? null : this.run.tasks[index];
    const task = { ...incoming };
    // A task dict without text keeps what already streamed in.
    if (previous) {
      if (task.output == null && previous.output != null) task.output = previous.output;
      if (task.reasoning == null && previous.reasoning != null) task.reasoning = previous.reasoning;
      if (!Array.isArray(task.tool_calls) && Array.isArray(previous.tool_calls)) task.tool_calls = previous.tool_calls;
    }
    if (index === -1) this.run.tasks.push(task);
    else this.run.tasks[index] = task;
    this.renderTask(task);
  }

  /** A tool call as last told replaces the one with its id, or joins the task's list. */
  /** A running task's step was priced: its cost so far, and the run's, shown at once. */
  priceStep(taskId, cost) {
    if (!this.run || !cost || typeof cost !== "object") return;
    const task = this.run.tasks.find((candidate) => candidate.id === taskId);
    if (!task) return;
    task.cost = cost;
    this.renderTask(task);
    this.renderHead();
  }

  upsertToolCall(taskId, call) {
    if (!this.run || !call || typeof call !== "object" || !call.id) return;
    const task = this.run.tasks.find((candidate) => candidate.id === taskId);
    if (!task) return;
    const calls = Array.isArray(task.tool_calls) ? [...task.tool_calls] : [];
    const index = calls.findIndex((known) => known.id === call.id);
    if (index === -1) calls.push(call);
    else calls[index] = call;
    task.tool_calls = calls;
    this.renderTask(task);
  }

  appendText(taskId, field, text) {
    if (!this.run || typeof text !== "string") return;
    const task = this.run.tasks.find((candidate) => candidate.id === taskId);
    if (!task) return;
    task[field] = (task[field] ?? "") + text;
    this.renderTask(task);
  }

  renderTask(task) {
    let card = this.cards.get(task.id);
    if (!card) {
      card = new TaskCard(task);
      this.cards.set(task.id, card);
      this.taskGrid.append(card.element);
    }
    card.update(task, this.reasoningStreamed.has(task.id));
  }

  /** The request's start in the heading; when cut, its size and a button for all of it. */
  renderRequest() {
    const request = this.request ?? "";
    const preview = requestPreview(request);
    const cut = preview.length < request.length;
    const whole = cut && this.requestWhole;
    this.heading.textContent = whole ? request : preview;
    this.heading.classList.toggle("whole", whole);
    this.requestMore.hidden = !cut;
    if (!cut) {
      this.requestMore.replaceChildren();
      return;
    }
    const size = request.length.toLocaleString();
    this.requestMore.replaceChildren(
      whole ? `The whole request, ${size} characters. ` : `The start of a request of ${size} characters. `,
      h(
        "button",
        {
          type: "button",
          class: "button small",
          testid: "request-toggle",
          onclick: () => {
            this.requestWhole = !whole;
            this.renderRequest();
          },
        },
        whole ? "Show the start only" : "Show the whole request",
      ),
    );
  }

  renderHead() {
    const run = this.run;
    if (!run) return;
    const request = String(run.request ?? "");
    if (request !== this.request) {
      this.request = request;
      this.renderRequest();
    }
    const title = requestPreview(request, TITLE_CHARS, 1);
    const shortId = run.short_id ?? run.id;
    if (this.idElement.textContent !== shortId) {
      this.idElement.textContent = shortId;
      this.idElement.title = run.id;
    }
    document.title = `${run.status} · ${title || shortId}${title.length < request.length ? "…" : ""} — thoughtline`;
    this.statusSlot.replaceChildren(statusBadge(run.status, "run-status"));
    this.element.dataset.status = run.status ?? "";
    const modes = [...new Set([run.chain_of_thought, ...run.tasks.map((task) => task.chain_of_thought)].filter(Boolean))];
    const rows = [
      ["chain of thought", modes.join(", ") + (run.chain_of_thought_source ? ` (${run.chain_of_thought_source})` : "")],
      ["worker backend", run.worker_backend],
      ["tasks", String(run.tasks.length)],
      ["created", timeElement(run.created_at)],
      ["finished", timeElement(run.finished_at)],
      ["cost", TERMINAL_RUN.has(run.status) ? costElement(run.cost, "run-cost") : costSoFar(run.tasks, "run-cost")],
    ];
    this.meta.replaceChildren(
      ...rows
        .filter(([, value]) => value)
        .map(([label, value]) => h("div", { "data-field": label }, h("dt", {}, label), h("dd", {}, value))),
    );
    this.cancelButton.hidden = !CANCELLABLE.has(run.status);
  }

  streamStateChanged(state, error) {
    this.streamState.textContent = STREAM_LABELS[state] ?? state;
    this.streamState.dataset.state = state;
    if (state === "error" && error) {
      this.showMessage(`${error.message} (${error.code})`);
      if (!this.run) this.heading.textContent = "Run unavailable";
    } else if (state === "live") {
      this.showMessage(null);
    }
  }

  showMessage(text) {
    this.message.hidden = !text;
    this.message.textContent = text ?? "";
  }

  async cancel() {
    this.cancelButton.disabled = true;
    try {
      await api.cancelRun(this.runId);
    } catch (error) {
      this.showMessage(`Could not cancel: ${error.message}`);
    } finally {
      this.cancelButton.disabled = false;
    }
  }
}

function tabAddress(runId, tab) {
  return `#/runs/${encodeURIComponent(runId)}${tab === "trace" ? "/trace" : ""}`;
}
