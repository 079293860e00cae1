// A run's conversation as one thread: the turns before and after the run on view (each
// turn's request and answers as its snapshot holds them; reasoning only where the
// snapshot carries it, the task's notice otherwise) and, under the latest turn once it
// has ended, a box that sends a follow-up continuing it. What a follow-up is sent of
// earlier turns, and in which mode it runs, is the daemon's business: no mode logic here.

import { api } from "./api.js";
import { h, statusBadge, timeElement } from "./dom.js";
import { renderMarkdown } from "./markdown.js";
import { reasoningBySteps } from "./tasks.js";

const ENDED = new Set([
  "completed",
  "completed_with_failures",
  "completed_prepare_only",
  "failed",
  "cancelled",
  "interrupted",
]);
// Earlier turns show the start of a long request; the turn's own view shows all of it.
const TURN_REQUEST_CHARS = 1000;

export class ConversationThread {
  /**
   * @param {string} runId the run on view
   * @param {{onFollowUp: (runId: string) => void}} hooks
   */
  constructor(runId, hooks) {
    this.runId = runId;
    this.hooks = hooks;
    /** @type {Record<string, any> | null} the run on view, as last told */
    this.current = null;
    /** @type {Record<string, any>[]} the conversation's runs, oldest first */
    this.runs = [];
    this.latestId = null;
    this.loads = 0;

    this.before = h("div", { class: "thread-turns", testid: "thread-before" });
    this.currentTurn = h("div", { class: "thread-current", testid: "thread-current", hidden: true });
    this.after = h("div", { class: "thread-turns", testid: "thread-after" });

    this.followUpText = /** @type {HTMLTextAreaElement} */ (
      h("textarea", {
        name: "request",
        rows: "3",
        testid: "follow-up-request",
        placeholder: "Ask a follow-up…",
        onkeydown: (event) => {
          if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
            event.preventDefault();
            this.followUp.requestSubmit();
          }
        },
      })
    );
    this.followUpNote = h("span", { class: "follow-up-note", testid: "follow-up-note" });
    this.followUpError = h("p", { class: "form-error", testid: "follow-up-error", role: "alert", hidden: true });
    this.followUpButton = /** @type {HTMLButtonElement} */ (
      h("button", { type: "submit", class: "button primary", testid: "follow-up-submit" }, "Send follow-up")
    );
    this.followUp = /** @type {HTMLFormElement} */ (
      h(
        "form",
        { class: "follow-up", testid: "follow-up", novalidate: true, hidden: true, onsubmit: (event) => this.send(event) },
        h("label", { class: "field" }, h("span", {}, "Follow-up"), this.followUpText),
        this.followUpError,
        h("div", { class: "follow-up-actions" }, this.followUpNote, this.followUpButton),
      )
    );
  }

  /** The run on view changed (a snapshot or a terminal event); the box follows its status. */
  setCurrent(run) {
    this.current = run;
    if (this.runs.length) this.render();
  }

  /** Read the conversation again (the run on view started or ended). */
  async load() {
    const run = this.current;
    if (!run || typeof run.conversation_id !== "string") return; // a daemon without conversations
    const load = ++this.loads;
    let runs;
    try {
      runs = await api.conversation(this.runId);
    } catch {
      return; // the thread is an extra: the run's own view stands without it
    }
    if (load !== this.loads) return; // a later load answers instead
    const ours = runs.filter((other) => other && other.conversation_id === run.conversation_id);
    this.runs = ours.some((other) => other.id === this.runId) ? ours : [...ours, run];
    this.render();
  }

  /**
   * The recent runs were read (every few seconds): read the conversation again when they
   * show one of its other runs new or changed, so the box moves under a turn another
   * client added and appears once it has ended.
   * @param {Record<string, any>[]} recent
   */
  noticeRuns(recent) {
    const id = this.current?.conversation_id;
    if (typeof id !== "string" || this.runs.length === 0) return;
    const known = new Map(this.runs.map((run) => [run.id, run.status]));
    const changed = recent.some(
      (run) => run && run.conversation_id === id && run.id !== this.runId && known.get(run.id) !== run.status,
    );
    if (changed) this.load();
  }

  render() {
    const runs = this.runs;
    const index = runs.findIndex((run) => run.id === this.runId);
    const thread = runs.length > 1;
    this.before.replaceChildren(...runs.slice(0, index).map((run, at) => this.turn(run, at + 1)));
    this.after.replaceChildren(...runs.slice(index + 1).map((run, at) => this.turn(run, index + at + 2)));
    this.currentTurn.hidden = !thread;
    if (thread) {
      this.currentTurn.replaceChildren(
        h("span", { class: "turn-number" }, `Turn ${index + 1} of ${runs.length}`),
        h("p", { class: "turn-request", testid: "current-turn-request" }, clipped(this.current?.request)),
      );
    }
    const latest = runs[runs.length - 1];
    const latestStatus = latest.id === this.runId ? this.current?.status : latest.status;
    this.latestId = latest.id;
    this.followUp.hidden = !ENDED.has(latestStatus);
    this.followUp.dataset.continues = latest.id;
    this.followUpNote.textContent = thread ? `Continues turn ${runs.length}.` : "Continues this run.";
  }

  /** An earlier or later turn: its request, then each task's answer. */
  turn(run, number) {
    const tasks = Array.isArray(run.tasks) ? run.tasks : [];
    return h(
      "article",
      { class: "turn", testid: "thread-turn", "data-run-id": run.id, "data-turn": String(number) },
      h(
        "header",
        { class: "turn-head" },
        h("a", { href: `#/runs/${encodeURIComponent(run.id)}`, class: "turn-number", testid: "turn-link" }, `Turn ${number}`),
        statusBadge(run.status),
        timeElement(run.created_at, { class: "turn-time" }),
      ),
      h("p", { class: "turn-request", testid: "turn-request" }, clipped(run.request)),
      ...tasks.map((task) => this.reply(task, tasks.length > 1)),
    );
  }

  reply(task, named) {
    const label = task.name && task.name !== task.role ? `${task.role} · ${task.name}` : task.role;
    let body;
    if (task.output) body = h("div", { class: "answer turn-answer", testid: "turn-answer" }, renderMarkdown(String(task.output)));
    else if (task.error) {
      body = h("p", { class: "task-error", testid: "turn-error" }, h("code", {}, String(task.error.code ?? "ERROR")), " ", String(task.error.message ?? ""));
    } else body = h("p", { class: "muted small", testid: "turn-no-answer" }, ENDED.has(task.status) ? "No answer." : "No answer yet.");
    let reasoning = null;
    if (typeof task.reasoning === "string") {
      reasoning = h(
        "details",
        { class: "reasoning", testid: "turn-reasoning" },
        h("summary", {}, "Reasoning"),
        h("div", { class: "reasoning-text", testid: "turn-reasoning-text" }, ...turnReasoning(task)),
      );
    } else if (task.reasoning_notice) {
      reasoning = h("p", { class: "note small", testid: "turn-reasoning-notice" }, String(task.reasoning_notice));
    }
    return h(
      "section",
      { class: "turn-reply", "data-task-id": task.id ?? "" },
      named ? h("h4", { class: "turn-role" }, label ?? "task") : null,
      body,
      reasoning,
    );
  }

  async send(event) {
    event.preventDefault();
    const request = this.followUpText.value.trim();
    if (!request) {
      this.showError("Write a follow-up first.");
      return;
    }
    if (!this.latestId) return;
    this.followUpButton.disabled = true;
    this.showError(null);
    try {
      // Continue the turn the reader sees as the latest: one added meanwhile is shown
      // first, rather than branching the conversation from an older turn.
      const shown = this.latestId;
      await this.load();
      if (this.latestId !== shown) {
        this.showError("Another turn was added meanwhile (shown above); send again to continue it.");
        return;
      }
      const created = await api.startRun({ request, continues: this.latestId });
      this.followUpText.value = "";
      this.hooks.onFollowUp(created.id);
    } catch (error) {
      this.showError(`${error.message}${error.code ? ` (${error.code})` : ""}`);
    } finally {
      this.followUpButton.disabled = false;
    }
  }

  showError(message) {
    this.followUpError.hidden = !message;
    this.followUpError.textContent = message ?? "";
  }
}

function clipped(request) {
  const text = String(request ?? "");
  return text.length > TURN_REQUEST_CHARS ? `${text.slice(0, TURN_REQUEST_CHARS)}…` : text;
}

/** A turn's reasoning: settled parts of several steps each under its step's label, as in a task's card. */
function turnReasoning(task) {
  const steps = reasoningBySteps(task);
  if (!steps) return [task.reasoning];
  return steps.map(([step, text]) =>
    h(
      "section",
      { class: "reasoning-step", testid: "reasoning-step", "data-step": String(step) },
      h("h5", { class: "reasoning-step-label", testid: "reasoning-step-label" }, `step ${step}`),
      h("div", { class: "reasoning-step-text" }, text),
    ),
  );
}
