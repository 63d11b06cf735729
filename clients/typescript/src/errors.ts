/**
 * The errors of the client: `MemoryError` for every answer that is not a result, and its
 * subclass `NetworkError` when no answer came at all.
 *
 * The server's codes (hmsengine/server/app.py, docs/http.md) come through unchanged; the client
 * adds four of its own: `invalid_request` and `invalid_tenant` for input it refuses before
 * sending (status `null`), `bad_response` for an answer that is not this API's JSON (a proxy's
 * page), and, on `NetworkError`, `unavailable`, `timeout` and `aborted`.
 */

/** Every error code the server documents, with the HTTP status it comes with. */
export type ServerErrorCode =
  | "invalid_tenant" // 400: X-HMS-Tenant is not 1 to 64 of [A-Za-z0-9_-]
  | "invalid_json" // 400: the body is not JSON (the client always sends JSON)
  | "client_disconnected" // 400: the connection went away during the body
  | "unauthorized" // 401: missing, malformed or unknown API key
  | "forbidden" // 403: the API key belongs to another tenant
  | "forbidden_origin" // 403: sent from a web page whose origin the server does not allow
  | "not_found" // 404: unknown id, operation or route
  | "method_not_allowed" // 405
  | "request_timeout" // 408: the body did not arrive within the server's --timeout
  | "conflict" // 409: another payload under this id
  | "provenance_error" // 409: a file-backed fact no longer matches its file
  | "payload_too_large" // 413: the body is over the server's --max-body
  | "unsupported_media_type" // 415: a body not sent as application/json (the client always is)
  | "invalid_host" // 421: the Host header names a host the server does not answer to
  | "invalid_request" // 422: the message names the field
  | "internal" // 500: details in the server log
  | "corrupt_store" // 500
  | "wrong_key" // 500
  | "incompatible_store" // 500
  | "store_locked" // 503, with Retry-After
  | "engine_closed" // 503: the server is shutting down
  | "durability_error" // 503: the tenant's store refuses writes until reopened
  | "http_error"; // any other HTTP error, or an error answer without an error body

/** The codes of a `NetworkError`: no answer came. */
export type NetworkErrorCode = "unavailable" | "timeout" | "aborted";

/** Every code a `MemoryError` may carry; a newer server may send codes not listed here. */
export type ErrorCode = ServerErrorCode | NetworkErrorCode | "bad_response" | (string & {});

export interface MemoryErrorInit {
  code: ErrorCode;
  message: string;
  status?: number | null;
  hint?: string | null;
  retryAfter?: number | null;
  cause?: unknown;
}

/**
 * An error answer of the server, or input the client refused before sending.
 *
 * `code` is the server's machine-readable code (`not_found`, `unauthorized`, ...), `status`
 * the HTTP status (`null` when nothing was sent), `hint` what to do about it when the server
 * says, `retryAfter` the seconds of a `Retry-After` header (503 answers carry one).
 */
export class MemoryError extends Error {
  readonly code: ErrorCode;
  readonly status: number | null;
  readonly hint: string | null;
  readonly retryAfter: number | null;

  constructor(init: MemoryErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "MemoryError";
    this.code = init.code;
    this.status = init.status ?? null;
    this.hint = init.hint ?? null;
    this.retryAfter = init.retryAfter ?? null;
  }
}

/**
 * No answer came: the server could not be reached, the connection broke, the client's
 * `timeoutMs` passed, or the caller's `signal` aborted. `status` is `null` and `cause` holds
 * what `fetch` threw. A write may or may not have been applied: retrying `remember` with the
 * same id (or the same content, whose id is derived from it) stores it once.
 */
export class NetworkError extends MemoryError {
  declare readonly code: NetworkErrorCode;

  constructor(init: MemoryErrorInit & { code: NetworkErrorCode }) {
    super({ ...init, status: null });
    this.name = "NetworkError";
  }
}

/** Input refused before anything was sent (status `null`). */
export function invalid(message: string, hint: string, code: ErrorCode = "invalid_request"): MemoryError {
  return new MemoryError({ code, message, hint });
}
