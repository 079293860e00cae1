// Server-sent events over fetch(): the Authorization header can be sent (EventSource
// cannot), frames are parsed here, and a broken stream is resumed with Last-Event-ID.

import { ApiError, apiFetch, errorOf } from "./api.js";

/**
 * Incremental SSE parser (the WHATWG event-stream rules): lines end with CRLF, LF or CR,
 * a blank line dispatches, `:` starts a comment, one leading space after the colon is
 * dropped, several `data:` lines join with "\n", `id:` persists across events.
 */
export class SseParser {
  /** @param {(event: {type: string, data: string, id: string | null}) => void} onEvent */
  constructor(onEvent, lastEventId = null) {
    this.onEvent = onEvent;
    this.lastEventId = lastEventId;
    this.buffer = "";
    this.data = [];
    this.type = "";
  }

  /** Feed decoded text; complete events are dispatched synchronously. */
  push(text) {
    const buffer = this.buffer + text;
    let position = 0;
    while (position < buffer.length) {
      const lf = buffer.indexOf("\n", position);
      const cr = buffer.indexOf("\r", position);
      let end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (end === -1) break;
      let next = end + 1;
      if (buffer[end] === "\r") {
        if (end + 1 === buffer.length) break; // a CR at the end may be half of CRLF
        if (buffer[end + 1] === "\n") next = end + 2;
      }
      this.line(buffer.slice(position, end));
      position = next;
    }
    this.buffer = buffer.slice(position);
  }

  line(line) {
    if (line === "") {
      this.dispatch();
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.type = value;
    else if (field === "id" && !value.includes("\0")) this.lastEventId = value;
  }

  dispatch() {
    if (this.data.length === 0) {
      this.type = "";
      return;
    }
    const event = { type: this.type || "message", data: this.data.join("\n"), id: this.lastEventId };
    this.data = [];
    this.type = "";
    this.onEvent(event);
  }
}

/** Read to the end, cancelling whatever is still open after `ms`. */
async function drain(reader, ms) {
  let timer = 0;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  const rest = (async () => {
    for (;;) {
      const { done } = await reader.read();
      if (done) return;
    }
  })().catch(() => {});
  await Promise.race([rest, timeout]);
  clearTimeout(timer);
  reader.cancel().catch(() => {});
}

const sleep = (ms, signal) =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve(undefined);
    });
  });

/**
 * Follow a run's event stream until a terminal event, reconnecting with the last seen
 * id after network errors or a stream that ends early.
 * @param {() => string} runId the run's id as it is now (a view named by a short id
 *   reconnects by the whole id its first snapshot gave)
 * @param {{
 *   onEvent: (event: {type: string, data: string, id: string | null}) => boolean | void,
 *   onState: (state: "connecting" | "live" | "reconnecting" | "ended" | "error", error?: ApiError) => void,
 *   isFinished: () => boolean,
 * }} handlers `onEvent` returns true for a terminal event; `isFinished` says whether
 *   the state already seen is final (then a closed stream is not reopened).
 * @returns {{close: () => void}}
 */
export function followRun(runId, handlers) {
  const controller = new AbortController();
  const { signal } = controller;
  let lastEventId = null;
  let delay = 400;

  async function loop() {
    while (!signal.aborted) {
      handlers.onState(lastEventId === null ? "connecting" : "reconnecting");
      let terminal = false;
      try {
        const headers = { Accept: "text/event-stream" };
        if (lastEventId !== null) headers["Last-Event-ID"] = lastEventId;
        const response = await apiFetch(`/v1/runs/${encodeURIComponent(runId())}/events`, {
          headers,
          signal,
        });
        if (!response.ok) {
          const error = await errorOf(response);
          if (response.status < 500 && response.status !== 429) {
            handlers.onState("error", error);
            return;
          }
          throw error;
        }
        if (!response.body) throw new ApiError(0, "NO_STREAM", "This browser cannot stream responses.");
        handlers.onState("live");
        delay = 400;
        const parser = new SseParser((event) => {
          lastEventId = event.id;
          if (handlers.onEvent(event) === true) terminal = true;
        }, lastEventId);
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        try {
          while (!terminal) {
            const { value, done } = await reader.read();
            if (done) break;
            parser.push(value);
          }
        } finally {
          // The daemon closes the stream after the terminal event: let it, so the
          // connection ends cleanly; cancel only a stream that lingers.
          if (terminal) await drain(reader, 2000);
        }
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof ApiError && error.status >= 400 && error.status < 500 && error.status !== 429) {
          handlers.onState("error", error);
          return;
        }
        // Network failure or 5xx: fall through and reconnect.
      }
      if (terminal || handlers.isFinished()) {
        handlers.onState("ended");
        return;
      }
      await sleep(delay, signal);
      delay = Math.min(delay * 2, 5000);
    }
  }

  loop();
  return { close: () => controller.abort() };
}
