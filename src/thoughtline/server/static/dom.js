// Small DOM helpers. Strings always become text nodes (never parsed as HTML): run data
// (answers, reasoning, requests) is untrusted.

/**
 * Create an element. `props`: `class`, `testid` (data-testid), `text` (textContent),
 * `on<event>` listeners, anything else as an attribute (false/null/undefined skipped).
 * @param {string} tag
 * @param {Record<string, unknown>} [props]
 * @param {...(Node|string|null|undefined|false)} children
 * @returns {HTMLElement}
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") element.className = String(value);
    else if (key === "testid") element.dataset.testid = String(value);
    else if (key === "text") element.textContent = String(value);
    else if (key.startsWith("on") && typeof value === "function") {
      element.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    } else element.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child);
  }
  return element;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** Create an SVG element with attributes. */
export function svg(tag, attributes = {}, ...children) {
  const element = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === null || value === undefined) continue;
    if (key === "text") element.textContent = String(value);
    else if (key === "testid") element.setAttribute("data-testid", String(value));
    else element.setAttribute(key, String(value));
  }
  for (const child of children) if (child) element.append(child);
  return element;
}

/** Replace a node's text only when it changed; append when it only grew (cheap streaming). */
export function setGrowingText(element, text) {
  const value = text ?? "";
  const shown = element.textContent ?? "";
  if (value === shown) return;
  if (shown && value.startsWith(shown)) element.append(value.slice(shown.length));
  else element.textContent = value;
}

/** "3 min ago" style, with the absolute time kept for the tooltip. */
export function relativeTime(iso) {
  if (!iso) return "";
  const then = Date.parse(iso);
  if (Number.isNaN(then)) return String(iso);
  const seconds = Math.round((then - Date.now()) / 1000);
  const format = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
  const steps = [
    [60, "second"],
    [60, "minute"],
    [24, "hour"],
    [7, "day"],
    [4.35, "week"],
    [12, "month"],
    [Infinity, "year"],
  ];
  let amount = seconds;
  for (const [size, unit] of steps) {
    if (Math.abs(amount) < size) return format.format(Math.round(amount), unit);
    amount /= size;
  }
  return String(iso);
}

/** A `<time>` element showing relative time, absolute on hover. */
export function timeElement(iso, props = {}) {
  if (!iso) return null;
  const date = new Date(iso);
  const absolute = Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
  return h("time", { datetime: iso, title: absolute, ...props }, relativeTime(iso));
}

/** A status pill; colour comes from CSS on data-status. */
export function statusBadge(status, testid) {
  return h("span", { class: "badge", "data-status": status ?? "unknown", testid }, status ?? "unknown");
}

/**
 * A cost from the snapshot ({amount, currency, source, parts, unknown_reason}) as a short
 * figure ("$0.0064", "unknown", "pending" while ``running``); its title says where the
 * prices came from, what the reasoning part was, or why the amount is unknown.
 */
export function costElement(cost, testid, running = false) {
  if (!cost) return null;
  if (running) return costSoFar([{ cost }], testid);
  if (cost.amount === null || cost.amount === undefined) {
    // What the calls of known cost came to, then which are unknown: "$0.0031 + step 2 unknown".
    const known = typeof cost.known_amount === "number" ? `${formatAmount(cost.known_amount)} + ${cost.unknown_part ?? "the rest"} ` : "";
    return h("span", { testid, title: cost.unknown_reason ?? "" }, `${known}unknown`);
  }
  const reasoning = cost.parts?.reasoning ? `; reasoning ${formatAmount(cost.parts.reasoning)} of it` : "";
  return h("span", { testid, title: `${cost.source ?? "nothing billed"}${reasoning}` }, formatAmount(cost.amount));
}

/**
 * What running tasks have cost so far: each step is priced as it ends (task.step.priced),
 * so "$0.0031 so far" once one was; "pending" before any was (not "$0").
 * @param {Array<Record<string, any>>} tasks
 */
export function costSoFar(tasks, testid) {
  let total = 0;
  for (const task of tasks) {
    const cost = task?.cost;
    if (!cost) continue;
    total += typeof cost.amount === "number" ? cost.amount : typeof cost.known_amount === "number" ? cost.known_amount : 0;
  }
  if (total > 0) {
    const title = "What the model calls made so far cost; each call is priced as it ends.";
    return h("span", { testid, title }, `${formatAmount(total)} so far`);
  }
  return h("span", { testid, title: "Each model call is priced as it ends." }, "pending");
}

/** "$0.0064": dollars and cents from one dollar up, else two significant figures. */
export function formatAmount(amount) {
  if (amount === 0) return "$0";
  if (amount >= 1) return `$${amount.toFixed(2)}`;
  const digits = Math.max(0, 1 - Math.floor(Math.log10(amount)));
  return `$${amount.toFixed(digits)}`;
}
