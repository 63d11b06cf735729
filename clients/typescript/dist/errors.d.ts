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
export type ServerErrorCode = "invalid_tenant" | "invalid_json" | "client_disconnected" | "unauthorized" | "forbidden" | "forbidden_origin" | "not_found" | "method_not_allowed" | "request_timeout" | "conflict" | "provenance_error" | "payload_too_large" | "unsupported_media_type" | "invalid_host" | "invalid_request" | "internal" | "corrupt_store" | "wrong_key" | "incompatible_store" | "store_locked" | "engine_closed" | "durability_error" | "http_error";
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
export declare class MemoryError extends Error {
    readonly code: ErrorCode;
    readonly status: number | null;
    readonly hint: string | null;
    readonly retryAfter: number | null;
    constructor(init: MemoryErrorInit);
}
/**
 * No answer came: the server could not be reached, the connection broke, the client's
 * `timeoutMs` passed, or the caller's `signal` aborted. `status` is `null` and `cause` holds
 * what `fetch` threw. A write may or may not have been applied: retrying `remember` with the
 * same id (or the same content, whose id is derived from it) stores it once.
 */
export declare class NetworkError extends MemoryError {
    readonly code: NetworkErrorCode;
    constructor(init: MemoryErrorInit & {
        code: NetworkErrorCode;
    });
}
/** Input refused before anything was sent (status `null`). */
export declare function invalid(message: string, hint: string, code?: ErrorCode): MemoryError;
