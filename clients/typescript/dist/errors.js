/**
 * The errors of the client: `MemoryError` for every answer that is not a result, and its
 * subclass `NetworkError` when no answer came at all.
 *
 * The server's codes (hmsengine/server/app.py, docs/http.md) come through unchanged; the client
 * adds four of its own: `invalid_request` and `invalid_tenant` for input it refuses before
 * sending (status `null`), `bad_response` for an answer that is not this API's JSON (a proxy's
 * page), and, on `NetworkError`, `unavailable`, `timeout` and `aborted`.
 */
/**
 * An error answer of the server, or input the client refused before sending.
 *
 * `code` is the server's machine-readable code (`not_found`, `unauthorized`, ...), `status`
 * the HTTP status (`null` when nothing was sent), `hint` what to do about it when the server
 * says, `retryAfter` the seconds of a `Retry-After` header (503 answers carry one).
 */
export class MemoryError extends Error {
    code;
    status;
    hint;
    retryAfter;
    constructor(init) {
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
    constructor(init) {
        super({ ...init, status: null });
        this.name = "NetworkError";
    }
}
/** Input refused before anything was sent (status `null`). */
export function invalid(message, hint, code = "invalid_request") {
    return new MemoryError({ code, message, hint });
}
