// One card per task. Renders what the task dict contains: the answer, a collapsed
// "Reasoning" section only when the task carries reasoning (or reasoning deltas arrived),
// otherwise the task's reasoning notice. No disclosure logic lives here.

import { timingChart, tokenChart } from "./chart.js";
import { h, setGrowingText, statusBadge } from "./dom.js";

const UNFINISHED_TASK = new Set(["queued", "running"]);

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
    });
    this.reasoningSlot = h("div", { class: "reasoning-slot" });
    this.errorSlot = h("div", { class: "error-slot" });
    this.charts = h("div", { class: "charts", testid: "task-chart" });
    /** @type {HTMLDetailsElement | null} */
    this.details = null;
    this.element = h(
      "article",
      { class: "task-card", testid: "task-card", "data-task-id": task.id },
      h("header", { class: "task-head" }, this.title, this.status),
      this.meta,
      h("section", { class: "answer-section", "aria-label": "Answer" }, this.answer),
      this.reasoningSlot,
      this.errorSlot,
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
      ["provider", task.provider],
      ["model", task.model],
      ["executor", task.executor || null],
      ["chain of thought", task.chain_of_thought],
      ["effort", task.effort],
    ];
    this.meta.replaceChildren(
      ...rows
        .filter(([, value]) => value !== null && value !== undefined && value !== "")
        .map(([label, value]) =>
          h("div", { "data-field": label }, h("dt", {}, label), h("dd", {}, String(value))),
        ),
    );

    setGrowingText(this.answer, task.output ?? "");
    this.renderReasoning(task, reasoningStreamed);
    this.renderError(task.error);
    this.renderCharts(task);
  }

  renderReasoning(task, reasoningStreamed) {
    const hasReasoning = task.reasoning !== null && task.reasoning !== undefined;
    if (hasReasoning || reasoningStreamed) {
      if (!this.details) {
        this.reasoningKinds = h("span", { class: "reasoning-kinds", testid: "reasoning-kinds" });
        this.reasoningNote = h("p", { class: "note small", testid: "reasoning-status-note" });
        this.reasoningText = h("div", { class: "reasoning-text", testid: "task-reasoning-text" });
        this.details = /** @type {HTMLDetailsElement} */ (
          h(
            "details",
            { class: "reasoning", testid: "task-reasoning" },
            h("summary", { testid: "task-reasoning-summary" }, "Reasoning", this.reasoningKinds),
            this.reasoningNote,
            this.reasoningText,
          )
        );
        this.reasoningSlot.replaceChildren(this.details);
      }
      const kinds = [...new Set((task.reasoning_parts ?? []).map((part) => part.kind).filter(Boolean))];
      this.reasoningKinds.textContent = kinds.length ? kinds.join(", ") : "";
      this.reasoningNote.textContent = task.reasoning_notice ?? "";
      this.reasoningNote.hidden = !task.reasoning_notice;
      setGrowingText(this.reasoningText, task.reasoning ?? "");
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
    const missing = UNFINISHED_TASK.has(task.status) ? "pending" : "not reported";
    const key = JSON.stringify([task.timings, task.usage, missing]);
    if (key === this.chartKey) return;
    this.chartKey = key;
    this.charts.replaceChildren(timingChart(task.timings, missing), tokenChart(task.usage, missing));
  }
}
