// The daemon's JSON API: bearer token handling (from the address's fragment, then
// sessionStorage) and error bodies ({"error": {"code", "message"}}).

const TOKEN_KEY = "thoughtline.token";

/** An API error with the daemon's stable code. */
export class ApiError extends Error {
  /**
   * @param {number} status HTTP status (0 for a network failure)
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

/** @type {((reason: string) => Promise<string | null>) | null} */
let tokenPrompt = null;
/** @type {Promise<string | null> | null} */
let pendingPrompt = null;
let promptDeclined = false;

/** Register the UI that asks the user for a token (resolves null when they cancel). */
export function setTokenPrompt(prompt) {
  tokenPrompt = prompt;
}

export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function setToken(token) {
  promptDeclined = false;
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage unavailable (private mode): the token lives only as long as this call chain.
  }
}

/**
 * Take the token `thoughtline serve` prints in the page's address (`/#token=…`): keep it
 * for this tab and remove it from the address bar and history, so it is not bookmarked,
 * shared or shown. Call before the first request.
 */
export function adoptTokenFromAddress() {
  if (!location.hash.startsWith("#token=")) return;
  const token = new URLSearchParams(location.hash.slice(1)).get("token");
  history.replaceState(history.state, "", `${location.pathname}${location.search}`);
  if (token) setToken(token);
}

/** Headers every /v1 call carries. */
export function authHeaders() {
  const token = getToken();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

/** Ask once for a token, however many requests got a 401 at the same time. */
async function askForToken(reason) {
  if (!tokenPrompt || promptDeclined) return null;
  if (!pendingPrompt) {
    pendingPrompt = tokenPrompt(reason).finally(() => {
      pendingPrompt = null;
    });
  }
  const token = await pendingPrompt;
  if (token === null) promptDeclined = true; // stop nagging until the user opens the dialog
  return token;
}

/** The ApiError a failed response describes. */
export async function errorOf(response) {
  let code = `HTTP_${response.status}`;
  let message = response.statusText || `HTTP ${response.status}`;
  try {
    const body = await response.json();
    if (body && typeof body === "object" && body.error && typeof body.error === "object") {
      if (typeof body.error.code === "string") code = body.error.code;
      if (typeof body.error.message === "string") message = body.error.message;
    }
  } catch {
    // Not JSON: keep the status line.
  }
  return new ApiError(response.status, code, message);
}

/**
 * fetch() with the bearer token; on 401 asks for a token and retries.
 * Returns the Response (any status but 401); network failures throw ApiError(0, ...).
 * @param {string} path
 * @param {{method?: string, body?: unknown, headers?: Record<string,string>, signal?: AbortSignal}} [options]
 */
export async function apiFetch(path, options = {}) {
  const { method = "GET", body, headers = {}, signal } = options;
  for (;;) {
    const allHeaders = { Accept: "application/json", ...headers, ...authHeaders() };
    if (body !== undefined) allHeaders["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(path, {
        method,
        headers: allHeaders,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal,
        cache: "no-store",
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new ApiError(0, "NETWORK_ERROR", "The daemon did not answer; is it still running?");
    }
    if (response.status !== 401) return response;
    const error = await errorOf(response);
    const token = await askForToken(error.message);
    if (token === null) throw error;
  }
}

/** GET/POST returning parsed JSON, or throwing ApiError. */
export async function apiJson(path, options = {}) {
  const response = await apiFetch(path, options);
  if (!response.ok) throw await errorOf(response);
  return response.json();
}

/** A list answer: a bare array, or an object holding one under `key` (both shapes accepted). */
function listOf(body, key) {
  if (Array.isArray(body)) return body;
  if (body && typeof body === "object" && Array.isArray(body[key])) return body[key];
  return [];
}

export const api = {
  listRuns: async (limit = 30) =>
    listOf(await apiJson(`/v1/runs?limit=${encodeURIComponent(limit)}`), "runs"),
  /** The runs of the conversation a run belongs to, oldest first. */
  conversation: async (id) =>
    listOf(await apiJson(`/v1/runs?conversation=${encodeURIComponent(id)}`), "runs"),
  getRun: (id) => apiJson(`/v1/runs/${encodeURIComponent(id)}`),
  // Answered once the run is stored, before its tool servers start: the run's view
  // shows them starting.
  startRun: (body) => apiJson("/v1/runs", { method: "POST", body, headers: { Prefer: "respond-async" } }),
  /** The MCP servers configured on the daemon: what a run's tools may name. */
  toolServers: async () => listOf(await apiJson("/v1/tools"), "servers"),
  cancelRun: (id) => apiJson(`/v1/runs/${encodeURIComponent(id)}/cancel`, { method: "POST" }),
  trace: async (id, layer) =>
    listOf(
      await apiJson(`/v1/runs/${encodeURIComponent(id)}/trace?layer=${encodeURIComponent(layer)}`),
      "events",
    ),
};
