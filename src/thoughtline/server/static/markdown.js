// A small Markdown renderer for model answers that builds DOM nodes directly: every
// piece of model text becomes a text node (textContent), never HTML, so markup in an
// answer (<script>, <img onerror=…>, [bold], [/INST]) is shown as the characters it is.
// Covered: headings, paragraphs (line breaks kept), fenced and indented-by-fence code,
// block quotes, bullet and numbered lists, horizontal rules, and inline code, **bold**,
// *emphasis* / _emphasis_ and [links](https://…) (http, https and mailto only).

import { h } from "./dom.js";

const FENCE = /^ {0,3}(```+|~~~+)\s*([^`\s]*)/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const BULLET = /^(\s*)[-*+]\s+(.*)$/;
const NUMBERED = /^(\s*)(\d{1,9})[.)]\s+(.*)$/;
const SAFE_LINK = /^(https?:\/\/|mailto:)/i;

/**
 * Render Markdown `text` into a fragment of safe DOM nodes.
 * @param {string} text
 * @returns {DocumentFragment}
 */
export function renderMarkdown(text) {
  const fragment = document.createDocumentFragment();
  const lines = String(text ?? "").replace(/\r\n?/g, "\n").split("\n");
  let index = 0;
  /** @type {string[]} */
  let paragraph = [];
  const flushParagraph = () => {
    if (paragraph.length) fragment.append(h("p", {}, ...inline(paragraph.join("\n"))));
    paragraph = [];
  };
  while (index < lines.length) {
    const line = lines[index];
    const fence = FENCE.exec(line);
    if (fence) {
      flushParagraph();
      const closing = new RegExp(`^ {0,3}${fence[1][0] === "`" ? "`" : "~"}{${fence[1].length},}\\s*$`);
      const body = [];
      index += 1;
      while (index < lines.length && !closing.test(lines[index])) body.push(lines[index++]);
      index += 1; // the closing fence (or the end of a still-streaming block)
      const code = h("code", {}, body.join("\n"));
      if (fence[2]) code.dataset.language = fence[2];
      fragment.append(h("pre", { class: "md-code" }, code));
      continue;
    }
    if (!line.trim()) {
      flushParagraph();
      index += 1;
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      flushParagraph();
      fragment.append(h(`h${Math.min(heading[1].length + 2, 6)}`, { class: "md-heading" }, ...inline(heading[2])));
      index += 1;
      continue;
    }
    if (RULE.test(line)) {
      flushParagraph();
      fragment.append(h("hr", {}));
      index += 1;
      continue;
    }
    if (QUOTE.test(line)) {
      flushParagraph();
      const quoted = [];
      while (index < lines.length && QUOTE.test(lines[index])) quoted.push(QUOTE.exec(lines[index++])?.[1] ?? "");
      const quote = h("blockquote", {});
      quote.append(renderMarkdown(quoted.join("\n")));
      fragment.append(quote);
      continue;
    }
    if (BULLET.test(line) || NUMBERED.test(line)) {
      flushParagraph();
      index = renderList(lines, index, fragment);
      continue;
    }
    paragraph.push(line);
    index += 1;
  }
  flushParagraph();
  return fragment;
}

/** One list (and the lines continuing its items) from `lines[start]`; returns the next index. */
function renderList(lines, start, parent) {
  const ordered = NUMBERED.test(lines[start]) && !BULLET.test(lines[start]);
  const pattern = ordered ? NUMBERED : BULLET;
  const list = h(ordered ? "ol" : "ul", {});
  if (ordered) {
    const first = Number(NUMBERED.exec(lines[start])?.[2] ?? "1");
    if (first !== 1) list.setAttribute("start", String(first));
  }
  let index = start;
  /** @type {string[] | null} */
  let item = null;
  const flush = () => {
    if (item) list.append(h("li", {}, ...inline(item.join("\n"))));
    item = null;
  };
  while (index < lines.length) {
    const line = lines[index];
    const match = pattern.exec(line);
    if (match) {
      flush();
      item = [ordered ? match[3] : match[2]];
    } else if (line.trim() && item && /^\s+\S/.test(line) && !FENCE.test(line)) {
      item.push(line.trim()); // a continuation line of the item
    } else {
      break;
    }
    index += 1;
  }
  flush();
  parent.append(list);
  return index;
}

/**
 * Inline spans of `text` as nodes: code, bold, emphasis, links; the rest as text.
 * @param {string} text
 * @returns {(Node|string)[]}
 */
export function inline(text) {
  /** @type {(Node|string)[]} */
  const out = [];
  let rest = text;
  const spans = [
    { pattern: /`([^`\n]+)`/, build: (m) => h("code", {}, m[1]) },
    { pattern: /\*\*(?=\S)([\s\S]*?\S)\*\*/, build: (m) => h("strong", {}, ...inline(m[1])) },
    // Underscores only outside words (snake_case, __dunder__ and a.__b stay as written).
    { pattern: /(?<![\w.])__(?=[^\s_])([^\n]*?[^\s_])__(?!\w)/, build: (m) => h("strong", {}, ...inline(m[1])) },
    { pattern: /\[([^\]\n]+)\]\(([^)\s]+)\)/, build: link },
    { pattern: /(?<![\w*])\*(?=\S)([^*\n]*?\S)\*(?![\w*])/, build: (m) => h("em", {}, ...inline(m[1])) },
    { pattern: /(?<![\w_.])_(?=[^\s_])([^_\n]*?\S)_(?![\w_])/, build: (m) => h("em", {}, ...inline(m[1])) },
  ];
  while (rest) {
    let best = null;
    for (const span of spans) {
      const match = span.pattern.exec(rest);
      if (match && (best === null || match.index < best.match.index)) best = { match, span };
    }
    if (best === null) {
      out.push(rest);
      break;
    }
    if (best.match.index > 0) out.push(rest.slice(0, best.match.index));
    out.push(best.span.build(best.match));
    rest = rest.slice(best.match.index + best.match[0].length);
  }
  return out;
}

/** A link only to http(s) or mailto; anything else (javascript:, data:) stays text. */
function link(match) {
  const [whole, label, target] = match;
  if (!SAFE_LINK.test(target)) return whole;
  return h("a", { href: target, rel: "noopener noreferrer nofollow", target: "_blank" }, ...inline(label));
}
