// Trace events as people read them: a short summary of each event from its metadata (the
// same as `thoughtline trace` prints), and why a layer holds no events. Plain strings:
// the caller puts them in text nodes.

const QUOTE_CHARS = 60;
// The modes that write reasoning to the trace, and those that show it with the answer.
const RECORDING = new Set(["telemetry_only", "surface_and_telemetry"]);
const DISPLAYING = new Set(["surface", "surface_and_telemetry"]);

/** `text` on one line, cut to `width` characters, in quotes. */
function quoted(text, width = QUOTE_CHARS) {
  const line = String(text ?? "").slice(0, width * 4).split(/\s+/).filter(Boolean).join(" ");
  return `"${line.length > width ? `${line.slice(0, width - 3)}...` : line}"`;
}

function chars(value) {
  const count = typeof value === "number" ? value : String(value ?? "").length;
  return `${count.toLocaleString("en")} char${count === 1 ? "" : "s"}`;
}

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

function runStarted(m) {
  const tasks = Array.isArray(m.tasks) ? m.tasks.filter(isObject).map((task) => String(task.name)) : [];
  const request = String(m.request ?? "");
  const parts = [quoted(request)];
  if (request.length > QUOTE_CHARS) parts.push(`(cut: ${request.length.toLocaleString("en")} characters; Raw JSON has all)`);
  parts.push(`chain_of_thought=${m.chain_of_thought} (${m.chain_of_thought_source})`);
  parts.push(`${m.worker_backend} backend`);
  parts.push(`${plural(tasks.length, "task")}: ${tasks.join(", ")}`);
  return parts.join(" · ");
}

function runFinished(m) {
  if ("reason" in m) {
    const count = Array.isArray(m.interrupted_tasks) ? m.interrupted_tasks.length : 0;
    return `${m.reason}${m.detail ? `: ${m.detail}` : ""} · ${plural(count, "task")} interrupted`;
  }
  return String(m.status ?? "");
}

function taskStarted(m) {
  return `${m.executor} · chain_of_thought=${m.chain_of_thought} (${m.chain_of_thought_source})`;
}

function workerRequested(m) {
  const parts = [
    `${m.model} at ${m.endpoint} (${m.wire_api})`,
    m.reasoning_requested ? "reasoning requested" : "reasoning not requested",
    `effort ${m.effort}`,
  ];
  if (m.max_output_tokens != null) parts.push(`max ${m.max_output_tokens} output tokens`);
  if (m.temperature != null) parts.push(`temperature ${m.temperature}`);
  return parts.join(" · ");
}

function workerPrepared(m) {
  return (
    `prepared for ${m.model}, not sent · prompt ${quoted(m.prompt)} (${chars(m.prompt)})` +
    (m.system ? ` · system prompt ${chars(m.system)}` : " · no system prompt")
  );
}

function workerReasoning(m) {
  const parts = Array.isArray(m.parts) ? m.parts : [];
  const kinds = [...new Set(parts.filter(isObject).map((part) => String(part.kind)))].sort();
  return `recorded reasoning, ${chars(m.reasoning)} in ${plural(parts.length, "part")}${kinds.length ? ` (${kinds.join(", ")})` : ""}:`;
}

function providerExchange(m) {
  const parts = [`${m.method} ${m.url} → ${m.status}`];
  if (m.streamed) parts.push("streamed");
  const sizes = [];
  if (typeof m.request_body === "string") sizes.push(`${m.request_body.length.toLocaleString("en")} chars sent`);
  if (typeof m.response_body === "string") {
    sizes.push(`${m.response_body.length.toLocaleString("en")} received${m.response_body_truncated ? " (cut)" : ""}`);
  }
  if (sizes.length) parts.push(sizes.join(", "));
  return parts.join(" · ");
}

function taskFinished(m) {
  const parts = [String(m.status)];
  if (isObject(m.error)) parts.push(`${m.error.code}: ${m.error.message}`);
  if ("output_chars" in m) parts.push(`answer ${chars(m.output_chars)}`);
  const usage = m.usage;
  if (isObject(usage) && usage.output_tokens != null) {
    let tokens = `tokens ${usage.input_tokens ?? "?"} in / ${usage.output_tokens} out`;
    if (usage.reasoning_tokens) tokens += ` (${usage.reasoning_tokens} reasoning)`;
    parts.push(tokens);
  }
  if (isObject(m.timings) && Number.isFinite(m.timings.total_ms)) parts.push(`${Math.round(m.timings.total_ms).toLocaleString("en")} ms`);
  if (isObject(m.finish) && m.finish.reason) parts.push(`finish ${m.finish.reason}`);
  if (m.reasoning_status) parts.push(`reasoning ${m.reasoning_status}`);
  if (Array.isArray(m.warnings) && m.warnings.length) {
    parts.push(`warnings: ${m.warnings.filter(isObject).map((w) => String(w.code)).join(", ")}`);
  }
  return parts.join(" · ");
}

const tool = (m) => (m.server ? `${m.server}.${m.tool}` : String(m.tool));

function toolCompleted(m) {
  const parts = [`${tool(m)} ${m.status}`];
  if (m.error) parts.push(String(m.error));
  if (Number.isFinite(m.duration_ms)) parts.push(`${Math.round(m.duration_ms).toLocaleString("en")} ms`);
  if (m.result) parts.push(`result ${quoted(m.result)}${m.result_truncated ? " (cut)" : ""}`);
  return parts.join(" · ");
}

/** `key=value` for the plain fields (strings cut to a line); nested ones are left out. */
function plain(m) {
  return Object.entries(m)
    .filter(([, value]) => value === null || ["string", "number", "boolean"].includes(typeof value))
    .map(([key, value]) => `${key}=${typeof value === "string" ? quoted(value) : JSON.stringify(value)}`)
    .join(" ");
}

const SUMMARIES = {
  "run.started": runStarted,
  "task.started": taskStarted,
  "worker.requested": workerRequested,
  "worker.prepared": workerPrepared,
  "worker.reasoning": workerReasoning,
  "provider.exchange": providerExchange,
  "worker.completed": taskFinished,
  "worker.failed": taskFinished,
  "tool.called": (m) => `step ${m.step} · ${tool(m)} ${quoted(m.arguments)}`,
  "tool.approval": (m) => `${tool(m)} ${m.approved ? "approved" : "denied"}`,
  "tool.completed": toolCompleted,
};

/** A short summary of one trace event. */
export function eventSummary(event) {
  const type = String(event?.type ?? "");
  const metadata = isObject(event?.metadata) ? event.metadata : {};
  let summarize = SUMMARIES[type];
  if (!summarize) {
    if (type.startsWith("run.")) summarize = runFinished;
    else if (type.startsWith("task.")) summarize = taskFinished;
    else summarize = plain;
  }
  try {
    return summarize(metadata);
  } catch {
    return plain(metadata); // metadata of another shape: its plain fields
  }
}

/** Why `layer` holds no events, as far as the run's snapshot tells. */
export function emptyLayerReason(layer, run) {
  const empty = `The ${layer} layer of this run is empty`;
  const tasks = Array.isArray(run?.tasks) ? run.tasks : [];
  if (layer === "reasoning" && tasks.length) {
    const modes = [...new Set(tasks.map((task) => String(task.chain_of_thought)))].sort();
    if (!modes.some((mode) => RECORDING.has(mode))) {
      const shown = modes.some((mode) => DISPLAYING.has(mode))
        ? " (surface shows the reasoning with the answer but keeps it out of the trace)"
        : "";
      return `${empty}: its tasks ran with chain_of_thought=${modes.join(", ")}, which does not record reasoning${shown}; telemetry_only and surface_and_telemetry do.`;
    }
    return `${empty}: no reasoning text was recorded, or the reasoning retention ([trace.retention] reasoning) has removed it.`;
  }
  if (layer === "provider_raw") {
    return `${empty}: raw exchanges are kept only with [trace] provider_raw = true, for as long as [trace.retention] provider_raw allows.`;
  }
  return `${empty}.`;
}
