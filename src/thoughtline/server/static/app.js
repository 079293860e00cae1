// Wires the page: the runs list (refreshed), the new-run form, the token dialog and a
// hash router (#/runs/<id> and #/runs/<id>/trace; <id> in any form a run id takes).

import { adoptTokenFromAddress, api, getToken, setToken, setTokenPrompt } from "./api.js";
import { h, statusBadge, timeElement } from "./dom.js";
import { RunView } from "./runview.js";

const REFRESH_MS = 3000;
const main = /** @type {HTMLElement} */ (document.getElementById("main"));
const emptyState = /** @type {HTMLElement} */ (document.querySelector("[data-testid=empty-state]"));
const runsList = /** @type {HTMLElement} */ (document.querySelector("[data-testid=runs-list]"));
const runsError = /** @type {HTMLElement} */ (document.querySelector("[data-testid=runs-error]"));
const connection = /** @type {HTMLElement} */ (document.querySelector("[data-testid=connection]"));
const form = /** @type {HTMLFormElement} */ (document.getElementById("run-form"));
const formError = /** @type {HTMLElement} */ (document.querySelector("[data-testid=form-error]"));
const dialog = /** @type {HTMLDialogElement} */ (document.getElementById("token-dialog"));

adoptTokenFromAddress();

/** @type {RunView | null} */
let view = null;
let listSignature = "";
let refreshTimer = 0;

// ---- token dialog ---------------------------------------------------------------
/** Open the dialog; resolves with the token, or null when cancelled. */
function promptForToken(reason) {
  return new Promise((resolve) => {
    const reasonText = /** @type {HTMLElement} */ (dialog.querySelector("[data-testid=token-reason]"));
    const input = /** @type {HTMLInputElement} */ (dialog.querySelector("input[name=token]"));
    reasonText.textContent = reason || "The daemon requires a bearer token.";
    input.value = getToken() ?? "";
    dialog.addEventListener(
      "close",
      () => {
        const choice = dialog.returnValue;
        if (choice === "save" && input.value.trim()) {
          setToken(input.value.trim());
          resolve(input.value.trim());
        } else if (choice === "forget") {
          setToken(null);
          resolve(null);
        } else {
          resolve(null);
        }
        input.value = "";
      },
      { once: true },
    );
    dialog.returnValue = "";
    dialog.showModal();
    input.focus();
  });
}
setTokenPrompt(promptForToken);
document.getElementById("token-button")?.addEventListener("click", async () => {
  setToken(getToken()); // re-enable prompting after a cancel
  const token = await promptForToken("Set or replace the bearer token this tab sends.");
  if (token !== null) refreshRuns();
});

// ---- runs list --------------------------------------------------------------------
function runModes(run) {
  const tasks = Array.isArray(run.tasks) ? run.tasks : [];
  return [...new Set([run.chain_of_thought, ...tasks.map((task) => task.chain_of_thought)].filter(Boolean))];
}

/** The start of a run's request: more than one line of the list shows, and never megabytes. */
function listedRequest(run) {
  return String(run.request ?? "").slice(0, 200);
}

function renderRuns(runs) {
  const selected = view?.runId ?? null;
  const signature = JSON.stringify([
    selected,
    runs.map((run) => [run.id, run.status, listedRequest(run), runModes(run), run.created_at, run.continues, run.client]),
    Math.floor(Date.now() / 60000),
  ]);
  if (signature === listSignature) return;
  listSignature = signature;
  if (runs.length === 0) {
    runsList.replaceChildren(h("li", { class: "muted", testid: "runs-empty" }, "No runs yet."));
    return;
  }
  runsList.replaceChildren(
    ...runs.map((run) => {
      const tasks = Array.isArray(run.tasks) ? run.tasks.length : 0;
      return h(
        "li",
        {},
        h(
          "a",
          {
            href: `#/runs/${encodeURIComponent(run.id)}`,
            class: "run-item",
            testid: "run-item",
            "data-run-id": run.id,
            "data-status": run.status,
            "aria-current": run.id === selected ? "page" : null,
          },
          h("span", { class: "run-item-top" }, statusBadge(run.status), timeElement(run.created_at, { class: "run-item-time" })),
          h("span", { class: "run-item-request", testid: "run-item-request" }, listedRequest(run)),
          h(
            "span",
            { class: "run-item-meta" },
            h("code", { class: "run-item-id", testid: "run-item-id", title: run.id }, run.short_id ?? run.id),
            " · ",
            runModes(run).join(", "),
            ` · ${tasks} task${tasks === 1 ? "" : "s"}`,
            run.worker_backend && run.worker_backend !== "provider" ? ` · ${run.worker_backend}` : "",
            run.continues ? " · follow-up" : "",
            run.client ? h("span", { testid: "run-item-client" }, ` · gateway client ${run.client}`) : "",
          ),
        ),
      );
    }),
  );
}

let toolsLoaded = false; // the form's tool servers (loadToolServers)

async function refreshRuns() {
  clearTimeout(refreshTimer);
  try {
    const runs = await api.listRuns(30);
    renderRuns(Array.isArray(runs) ? runs : []);
    view?.thread.noticeRuns(Array.isArray(runs) ? runs : []);
    runsError.hidden = true;
    connection.textContent = "";
    connection.dataset.state = "ok";
    if (!toolsLoaded) loadToolServers();
  } catch (error) {
    runsError.hidden = false;
    runsError.textContent = `Could not load runs: ${error.message}`;
    connection.textContent = error.status === 0 ? "daemon unreachable" : "";
    connection.dataset.state = "error";
  } finally {
    refreshTimer = window.setTimeout(scheduledRefresh, REFRESH_MS);
  }
}

function scheduledRefresh() {
  if (document.hidden) {
    refreshTimer = window.setTimeout(scheduledRefresh, REFRESH_MS);
    return;
  }
  refreshRuns();
}

document.addEventListener("visibilitychange", () => {
  if (!document.hidden) refreshRuns();
});
document.getElementById("runs-refresh")?.addEventListener("click", () => refreshRuns());

// ---- new-run form -------------------------------------------------------------------
form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const data = new FormData(form);
  const text = (name) => String(data.get(name) ?? "").trim();
  const request = text("request");
  const roles = text("roles")
    .split(/[\s,]+/)
    .filter(Boolean);
  if (!request) {
    showFormError("Write a request first.");
    return;
  }
  /** @type {Record<string, unknown>} */
  const body = { request };
  // No roles and no system prompt: the daemon's [defaults] role, else no persona.
  if (roles.length > 0) body.roles = roles;
  if (text("system")) body.system = text("system");
  for (const name of ["provider", "model", "chain_of_thought", "effort", "worker_backend"]) {
    if (text(name)) body[name] = text(name);
  }
  // Numbers as numbers; out-of-range values are left to the daemon, which names the field.
  const maxTokens = text("max_output_tokens");
  if (maxTokens) body.max_output_tokens = /^\d+$/.test(maxTokens) ? Number(maxTokens) : maxTokens;
  const temperature = text("temperature");
  if (temperature) body.temperature = Number.isFinite(Number(temperature)) ? Number(temperature) : temperature;
  const tools = data.getAll("tools").map(String);
  if (tools.length > 0) body.tools = tools;
  const maxSteps = text("max_steps");
  if (maxSteps) body.max_steps = /^\d+$/.test(maxSteps) ? Number(maxSteps) : maxSteps;
  const maxCost = text("max_cost");
  if (maxCost) body.max_cost = Number.isFinite(Number(maxCost)) ? Number(maxCost) : maxCost;
  const submit = /** @type {HTMLButtonElement} */ (form.querySelector("button[type=submit]"));
  submit.disabled = true;
  showFormError(null);
  try {
    const created = await api.startRun(body);
    location.hash = `#/runs/${encodeURIComponent(created.id)}`;
    refreshRuns();
  } catch (error) {
    showFormError(`${error.message}${error.code ? ` (${error.code})` : ""}`);
  } finally {
    submit.disabled = false;
  }
});

// The tool servers the daemon has: one box each, its name what `tools` sends. Loaded
// once the runs list loads (the token is known by then).
async function loadToolServers() {
  const fieldset = form.querySelector("[data-testid=form-tools]");
  if (!fieldset) return;
  toolsLoaded = true;
  let servers;
  try {
    servers = await api.toolServers();
  } catch {
    toolsLoaded = false; // tried again on the next refresh
    return;
  }
  if (servers.length === 0) return;
  const boxes = servers.map((server) =>
    h(
      "label",
      { class: "tool-choice" },
      h("input", { type: "checkbox", name: "tools", value: String(server.name), testid: `form-tool-${server.name}` }),
      " ",
      String(server.name),
      Array.isArray(server.tools) ? h("small", {}, ` (${server.tools.join(", ")})`) : "",
    ),
  );
  const legend = fieldset.querySelector("legend");
  fieldset.replaceChildren(...(legend ? [legend] : []), ...boxes);
}
function showFormError(message) {
  formError.hidden = !message;
  formError.textContent = message ?? "";
}

// ---- router ---------------------------------------------------------------------------
function route() {
  const match = /^#\/runs\/([^/]+)(\/trace)?$/.exec(location.hash);
  if (!match) {
    view?.close();
    view = null;
    main.replaceChildren(emptyState);
    document.title = "thoughtline";
    listSignature = "";
    refreshRuns();
    return;
  }
  const runId = decodeURIComponent(match[1]);
  const tab = match[2] ? "trace" : "tasks";
  if (!view || view.runId !== runId) {
    view?.close();
    view = new RunView(runId, {
      onFinished: () => refreshRuns(),
      onFollowUp: (id) => {
        location.hash = `#/runs/${encodeURIComponent(id)}`;
      },
      // Named by a short id, the start of one or `latest`: the address becomes the
      // run's whole id, so the list's selection and a reload mean this one run.
      onWholeId: (id) => {
        const tab = location.hash.endsWith("/trace") ? "/trace" : "";
        history.replaceState(history.state, "", `#/runs/${encodeURIComponent(id)}${tab}`);
        listSignature = "";
        refreshRuns();
      },
    });
    main.replaceChildren(view.element);
    listSignature = "";
    refreshRuns();
    revealRun();
  }
  view.selectTab(tab);
}

/** Bring a run just started or picked into view: on a phone it is below the form, and
 * the reader would otherwise stay on the form. Where it is already in view (beside the
 * form on a wide screen) nothing moves. */
function revealRun() {
  const top = main.getBoundingClientRect().top;
  if (top >= 0 && top <= window.innerHeight / 3) return;
  main.scrollIntoView({ block: "start" });
  main.focus({ preventScroll: true });
}

window.addEventListener("hashchange", route);
route();
