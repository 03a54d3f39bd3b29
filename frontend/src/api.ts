// GET /api/compare/ with readable errors.
import type { CompareResponse } from "./types";

/** A failed request, with the message to show the user. */
export class ApiError extends Error {}

/**
 * The message of an error body: `{"detail": "..."}` (or `{"detail": ["..."]}`), or
 * field errors `{"field": ["message", ...], ...}` (possibly nested) as "field: message; ...".
 */
export function errorMessage(body: unknown, status: number): string {
  const fallback = `Request failed (HTTP ${status})`;
  if (typeof body === "string") return body.trim() || fallback;
  if (Array.isArray(body)) return body.map((b) => errorMessage(b, status)).join(" ") || fallback;
  if (!body || typeof body !== "object") return fallback;
  const obj = body as Record<string, unknown>;
  const parts = Object.entries(obj).map(([field, msgs]) => {
    const text = errorMessage(msgs, status);
    // "detail" is a plain message, also when given as a list (DRF ValidationError({"detail": ...})).
    return field === "detail" || field === "non_field_errors" ? text : `${field}: ${text}`;
  });
  return parts.join("; ") || fallback;
}

function looksLikeCompare(body: unknown): body is CompareResponse {
  const b = body as CompareResponse | null;
  return !!b && Array.isArray(b.runs) && Array.isArray(b.metrics) && !!b.series && typeof b.series === "object";
}

/**
 * GET `url` as JSON; resolves with the body and `performance.now()` at the moment
 * the response arrived. Rejects with ApiError (or the AbortError of `signal`).
 */
export async function fetchCompare(url: string, signal: AbortSignal): Promise<{ data: CompareResponse; at: number }> {
  let resp: Response;
  try {
    resp = await fetch(url, {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
      signal,
    });
  } catch (err) {
    if (signal.aborted) throw err;
    throw new ApiError(`Could not reach the server (${(err as Error).message})`);
  }
  const at = performance.now();
  let body: unknown;
  try {
    body = await resp.json();
  } catch (err) {
    if (signal.aborted) throw err;
    throw new ApiError(resp.ok ? "The server sent an unreadable answer" : `Request failed (HTTP ${resp.status})`);
  }
  if (!resp.ok) throw new ApiError(errorMessage(body, resp.status));
  if (!looksLikeCompare(body)) throw new ApiError("The server sent an unexpected answer");
  return { data: body, at };
}
