// One card per task. Renders what the task dict contains, in the order it happened: a
// failed task's error first, then a collapsed "Reasoning" section only when the task
// carries reasoning (or reasoning deltas arrived), otherwise the task's reasoning notice,
// then its tool calls, then the answer (Markdown, built as DOM nodes, never HTML). The
// answer and reasoning grow with the page (no box of their own to scroll). No disclosure
// logic lives here.

import { timingChart, tokenChart } from "./chart.js";
import { costElement, h, setGrowingText, statusBadge } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

const UNFINISHED_TASK = new Set(["queued", "running"]);
/** Ended without an answer: with no call timed, no model call was made. */
const STOPPED_TASK = new Set(["failed", "cancelled", "interrupted"]);
// What the answer area says when a finished task has no answer text.
const NO_ANSWER = {
  done: "The model returned an empty answer.",
  prepared: "Prepared only: no model was called.",
  cancelled: "Cancelled before the model answered.",
  interrupted: "Interrupted before the model answered.",
};
const CHARS_PER_TOKEN = 4; // a rough estimate, labelled as one, until usage is reported

/**
 * A task's reasoning as `[step, text]` pairs, in step order, when it has several steps
 * and every displayed part says its step (the snapshot's `reasoning_parts[].step`) and
 * they join to the reasoning shown; otherwise null (one step, or reasoning still
 * streaming in as deltas), and the reasoning is one text.
 */
export function reasoningBySteps(task) {
  const parts = Array.isArray(task.reasoning_parts) ? task.reasoning_parts : [];
  if (!(task.steps > 1) || !parts.length || !parts.every((part) => Number.isInteger(part.step))) return null;
  const texts = parts.map((part) => String(part.text ?? "")).filter(Boolean);
  if (texts.join("\n\n") !== (task.reasoning ?? "")) return null;
  const steps = new Map();
  for (const part of parts) {
    if (!part.text) continue;
    steps.set(part.step, [...(steps.get(part.step) ?? []), String(part.text)]);
  }
  return [...steps].map(([step, joined]) => [step, joined.join("\n\n")]);
}

/** "1.2 s", "3 min 05 s" */
export function formatElapsed(ms) {
  if (!Number.isFinite(ms) || ms < 0) return "";
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, "0")} s`;
}

const PERSONA_SOURCES = {
  explicit: "asked for",
  plan: "from the plan",
  config: "[defaults] role",
  unrecorded: "source not recorded",
};

/**
 * A task's persona for people: the role, or that there was none, and its source.
 * @param {Record<string, any> | undefined} persona
 */
function personaLabel(persona) {
  if (!persona) return null;
  if (persona.source === "system") return "inline system prompt";
  if (persona.source === "default") return "none, no system prompt";
  const source = PERSONA_SOURCES[persona.source] ?? persona.source;
  return `${persona.role} (${source})`;
}

export class TaskCard {
  constructor(task) {
    this.id = task.id;
    this.chartKey = "";
    this.title = h("h3", { class: "task-title", testid: "task-role" });
    this.status = h("span", { class: "task-status" });
    this.meta = h("dl", { class: "task-meta", testid: "task-meta" });
    this.answer = h("div", {
      class: "answer",
      testid: "task-answer",
      "data-placeholder": "Waiting for the answer…",
      "aria-label": "Answer",
      tabindex: "0",
    });
    this.renderedAnswer = "";
    this.pendingAnswer = "";
    this.frame = 0;
    /** @type {Record<string, any>} */
    this.task = task;
    this.stats = h("span", { class: "task-stats", testid: "task-stats", "aria-live": "off" });
    this.truncated = h(
      "span",
      { class: "truncated", testid: "task-truncated", hidden: true, title: "The provider stopped at the output token limit (finish reason: length)." },
      "truncated",
    );
    this.copyButton = h(
      "button",
      { type: "button", class: "button subtle small", testid: "copy-answer", onclick: () => this.copy() },
      "Copy",
    );
    this.reasoningSlot = h("div", { class: "reasoning-slot" });
    this.toolSlot = h("div", { class: "tool-slot", testid: "task-tool-calls" });
    this.errorSlot = h("div", { class: "error-slot" });
    this.charts = h("div", { class: "charts", testid: "task-chart" });
    /** @type {HTMLDetailsElement | null} */
    this.details = null;
    this.element = h(
      "article",
      { class: "task-card", testid: "task-card", "data-task-id": task.id },
      h("header", { class: "task-head" }, this.title, this.status),
      this.meta,
      this.errorSlot,
      this.reasoningSlot,
      this.toolSlot,
      (this.answerSection = h(
        "section",
        { class: "answer-section", testid: "answer-section", "aria-label": "Answer" },
        h("div", { class: "answer-bar" }, this.stats, this.truncated, this.copyButton),
        this.answer,
      )),
      this.charts,
    );
  }

  /** @param {Record<string, any>} task @param {boolean} reasoningStreamed */
  update(task, reasoningStreamed) {
    const name = task.name && task.name !== task.role ? `${task.role} · ${task.name}` : task.role;
    this.title.textContent = name ?? "task";
    this.status.replaceChildren(statusBadge(task.status, "task-status"));
    this.element.dataset.status = task.status ?? "";

    const rows = [
      ["persona", personaLabel(task.persona)],
      ["provider", task.provider],
      ["model", task.model],
      ["executor", task.executor || null],
      ["chain of thought", task.chain_of_thought],
      ["effort", task.effort],
      ["cost", costElement(task.cost, "task-cost", UNFINISHED_TASK.has(task.status))],
      // "Output capped at 612 tokens to fit the run's $0.010 budget."
      ["budget", task.budget_notice ? h("span", { testid: "task-budget-notice" }, task.budget_notice) : null],
    ];
    this.meta.replaceChildren(
      ...rows
        .filter(([, value]) => value !== null && value !== undefined && value !== "")
        .map(([label, value]) =>
          h("div", { "data-field": label }, h("dt", {}, label), h("dd", {}, value instanceof Node ? value : String(value))),
        ),
    );

    this.task = task;
    this.showAnswer(task.output ?? "");
    this.copyButton.hidden = !task.output;
    // A finished task without answer text: its error (or a sentence) instead of the
    // waiting placeholder, and no "0 chars" beside it.
    const finished = !UNFINISHED_TASK.has(task.status);
    const empty = !task.output;
    this.answerSection.hidden = finished && empty && (Boolean(task.error) || task.status === "failed");
    this.answer.dataset.placeholder = finished
      ? (NO_ANSWER[task.status] ?? "No answer.")
      : "Waiting for the answer…";
    this.element.dataset.answered = empty ? "" : "true";
    this.tick();
    this.renderToolCalls(task.tool_calls);
    this.renderReasoning(task, reasoningStreamed);
    this.renderError(task.error);
    this.renderCharts(task);
  }

  /** Render the answer at most once a frame (it grows with the page: the reader
   * scrolls the page, and the page stays where they put it). */
  showAnswer(text) {
    this.pendingAnswer = text;
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const text = this.pendingAnswer;
      if (text === this.renderedAnswer) return;
      this.answer.replaceChildren(renderMarkdown(text));
      this.renderedAnswer = text;
    });
  }

  /** Elapsed time and streamed sizes; called on updates and every second while running. */
  tick() {
    const task = this.task;
    const running = UNFINISHED_TASK.has(task.status);
    const parts = [];
    const started = Date.parse(task.timings?.started_at ?? "");
    if (running && !Number.isNaN(started)) parts.push(formatElapsed(Date.now() - started));
    else if (!running && Number.isFinite(task.timings?.total_ms)) parts.push(formatElapsed(task.timings.total_ms));
    const chars = (task.output ?? "").length;
    if (chars) parts.push(`${chars.toLocaleString()} chars`);
    const reasoningChars = (task.reasoning ?? "").length;
    if (reasoningChars) parts.push(`${reasoningChars.toLocaleString()} reasoning chars`);
    const tokens = task.usage?.output_tokens;
    if (Number.isFinite(tokens)) parts.push(`${tokens.toLocaleString()} output tokens`);
    else if (chars) parts.push(`~${Math.ceil(chars / CHARS_PER_TOKEN).toLocaleString()} tokens (estimate)`);
    if (running && Number.isNaN(started)) parts.unshift(task.status === "queued" ? "queued" : "starting");
    this.stats.textContent = parts.join(" · ");
  }

  /** Mark the answer cut off (the provider's finish reason was "length"). */
  setTruncated(truncated) {
    this.truncated.hidden = !truncated;
    this.element.dataset.truncated = truncated ? "true" : "";
  }

  async copy() {
    const text = this.task.output ?? "";
    let copied = false;
    try {
      await navigator.clipboard.writeText(text);
      copied = true;
    } catch {
      // No clipboard API (an insecure origin): copy through a selected text area.
      const area = h("textarea", { class: "copy-buffer", readonly: true, "aria-hidden": "true" });
      area.value = text;
      document.body.append(area);
      area.select();
      copied = document.execCommand("copy");
      area.remove();
    }
    this.copyButton.textContent = copied ? "Copied" : "Copy failed";
    setTimeout(() => {
      this.copyButton.textContent = "Copy";
    }, 1500);
  }

  renderReasoning(task, reasoningStreamed) {
    const hasReasoning = task.reasoning !== null && task.reasoning !== undefined;
    if (hasReasoning || reasoningStreamed) {
      if (!this.details) {
        this.reasoningKinds = h("span", { class: "reasoning-kinds", testid: "reasoning-kinds" });
        this.reasoningSize = h("span", { class: "reasoning-size", testid: "reasoning-size" });
        this.reasoningNote = h("p", { class: "note small", testid: "reasoning-status-note" });
        this.reasoningText = h("div", { class: "reasoning-text", testid: "task-reasoning-text" });
        this.details = /** @type {HTMLDetailsElement} */ (
          h(
            "details",
            { class: "reasoning", testid: "task-reasoning" },
            h(
              "summary",
              { testid: "task-reasoning-summary" },
              "Reasoning",
              this.reasoningKinds,
              this.reasoningSize,
            ),
            this.reasoningNote,
            this.reasoningText,
          )
        );
        this.reasoningSlot.replaceChildren(this.details);
      }
      const kinds = [...new Set((task.reasoning_parts ?? []).map((part) => part.kind).filter(Boolean))];
      this.reasoningKinds.textContent = kinds.length ? kinds.join(", ") : "";
      const size = (task.reasoning ?? "").length;
      this.reasoningSize.textContent = size
        ? `${size.toLocaleString()} chars, before the answer`
        : "";
      this.reasoningNote.textContent = task.reasoning_notice ?? "";
      this.reasoningNote.hidden = !task.reasoning_notice;
      const steps = reasoningBySteps(task);
      if (steps) {
        // Settled parts of several steps: each under its step's label.
        const key = `${steps.length}:${(task.reasoning ?? "").length}`;
        if (this.reasoningText.dataset.steps !== key) {
          this.reasoningText.dataset.steps = key;
          this.reasoningText.replaceChildren(
            ...steps.map(([step, text]) =>
              h(
                "section",
                { class: "reasoning-step", testid: "reasoning-step", "data-step": String(step) },
                h("h5", { class: "reasoning-step-label", testid: "reasoning-step-label" }, `step ${step}`),
                h("div", { class: "reasoning-step-text" }, text),
              ),
            ),
          );
        }
      } else {
        delete this.reasoningText.dataset.steps;
        setGrowingText(this.reasoningText, task.reasoning ?? "");
      }
      return;
    }
    this.details = null;
    if (task.reasoning_notice) {
      this.reasoningSlot.replaceChildren(
        h(
          "p",
          {
            class: "note",
            testid: "task-reasoning-notice",
            "data-reasoning-status": task.reasoning_status ?? "",
          },
          task.reasoning_notice,
        ),
      );
    } else {
      this.reasoningSlot.replaceChildren();
    }
  }

  /** The task's tool calls, step by step: each collapsible, with its arguments and
   * result (as text, never HTML). */
  renderToolCalls(calls) {
    if (!Array.isArray(calls) || calls.length === 0) {
      this.toolSlot.replaceChildren();
      return;
    }
    const open = new Set(
      [...this.toolSlot.querySelectorAll("details[open]")].map((node) => node.dataset.callId),
    );
    this.toolSlot.replaceChildren(
      h("h4", { class: "tool-head" }, `Tool calls (${calls.length})`),
      ...calls.map((call) => {
        const tool = call.server ? `${call.server}.${call.name}` : String(call.name);
        const took = Number.isFinite(call.duration_ms) ? ` · ${Math.round(call.duration_ms)} ms` : "";
        const summary = `step ${call.step} · ${tool} · ${call.status}${call.error ? ` (${call.error})` : ""}${took}`;
        const details = h(
          "details",
          { class: "tool-call", testid: "tool-call", "data-call-id": call.id, "data-status": call.status },
          h("summary", {}, summary),
          h("pre", { class: "tool-arguments", testid: "tool-arguments" }, String(call.arguments ?? "")),
          h(
            "pre",
            { class: "tool-result", testid: "tool-result" },
            `${call.result ?? ""}${call.result_truncated ? "\n[cut]" : ""}`,
          ),
        );
        if (open.has(call.id)) details.setAttribute("open", "");
        return details;
      }),
    );
  }

  renderError(error) {
    if (!error) {
      this.errorSlot.replaceChildren();
      return;
    }
    this.errorSlot.replaceChildren(
      h(
        "p",
        { class: "task-error", testid: "task-error", role: "alert" },
        h("code", {}, String(error.code ?? "ERROR")),
        " ",
        String(error.message ?? ""),
      ),
    );
  }

  renderCharts(task) {
    const missing = UNFINISHED_TASK.has(task.status)
      ? "pending"
      : task.status === "prepared"
        ? "no model call (prompts prepared)"
        : STOPPED_TASK.has(task.status) && task.timings?.total_ms == null
          ? "no model call was made"
          : "not reported";
    const key = JSON.stringify([task.timings, task.usage, missing]);
    if (key === this.chartKey) return;
    this.chartKey = key;
    this.charts.replaceChildren(timingChart(task.timings, missing), tokenChart(task.usage, missing));
  }
}
