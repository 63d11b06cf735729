/**
 * One request to `hms serve` and how its answer is read; `Memory` builds the calls.
 *
 * Every request carries `Content-Type: application/json` and `Accept: application/json` (and
 * the tenant and key headers when set); a body is always JSON. What `fetch` throws becomes a
 * `NetworkError`; an error answer becomes a `MemoryError` with the server's code.
 */
import { MemoryError, NetworkError, invalid } from "./errors.js";
export const API = "/api/v1";
export const DEFAULT_TIMEOUT_MS = 60_000;
// Header values fetch accepts and the server can read: visible ASCII, no spaces.
const HEADER_VALUE = /^[\x21-\x7e]+$/;
export class Transport {
    base;
    #headers;
    #timeoutMs;
    #fetch;
    constructor(options) {
        this.base = baseUrl(options.url);
        this.#timeoutMs = timeoutMs(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, "timeoutMs");
        this.#fetch = options.fetch ?? globalThis.fetch;
        if (typeof this.#fetch !== "function") {
            throw invalid("fetch: no fetch function", "run on Node >= 20, or pass options.fetch");
        }
        this.#headers = { "Content-Type": "application/json", Accept: "application/json" };
        if (options.apiKey !== undefined) {
            if (typeof options.apiKey !== "string" || !HEADER_VALUE.test(options.apiKey)) {
                throw invalid("apiKey: expected a key of visible ASCII characters", "pass the key as issued, without 'Bearer '");
            }
            this.#headers["Authorization"] = `Bearer ${options.apiKey}`;
        }
        if (options.tenant !== undefined) {
            if (typeof options.tenant !== "string" || !HEADER_VALUE.test(options.tenant)) {
                throw invalid(`tenant: ${JSON.stringify(options.tenant)} is not a tenant name`, "a tenant is 1 to 64 of A-Z a-z 0-9 _ -", "invalid_tenant");
            }
            this.#headers["X-HMS-Tenant"] = options.tenant;
        }
    }
    /** Send `call` and return its JSON object (or `call.missing.value` for a 404 `not_found`). */
    async send(call, options = {}) {
        const url = this.base + call.path + (call.query ? `?${new URLSearchParams(call.query)}` : "");
        const limit = options.timeoutMs === undefined ? this.#timeoutMs : timeoutMs(options.timeoutMs, "timeoutMs");
        const timeout = AbortSignal.timeout(limit);
        const signal = options.signal ? AbortSignal.any([timeout, options.signal]) : timeout;
        const body = call.body === undefined ? null : JSON.stringify(plain(call.body, ""));
        let response;
        let text;
        try {
            response = await this.#fetch(url, { method: call.method, headers: this.#headers, body, signal });
            text = await response.text();
        }
        catch (error) {
            if (error instanceof MemoryError)
                throw error;
            const size = body === null ? 0 : Buffer.byteLength(body);
            throw noAnswer(error, `${call.method} ${url}`, { limit, timeout, caller: options.signal, base: this.base, size });
        }
        return answer(call, response, text);
    }
}
function baseUrl(value) {
    let url;
    try {
        url = new URL(String(value));
    }
    catch {
        throw invalid(`url: ${JSON.stringify(String(value))} is not a URL`, "pass the address `hms serve` printed, e.g. http://127.0.0.1:8080");
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
        throw invalid(`url: expected http: or https:, got ${url.protocol}`, "pass the address `hms serve` printed, e.g. http://127.0.0.1:8080");
    }
    if (url.username || url.password) {
        throw invalid("url: credentials in the URL are not sent", "pass the key as options.apiKey");
    }
    if (url.search || url.hash) {
        throw invalid("url: the base URL cannot carry a query or a fragment", "pass the server's address alone");
    }
    return url.origin + url.pathname.replace(/\/+$/, "");
}
function timeoutMs(value, name) {
    if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
        throw invalid(`${name}: expected a positive number of milliseconds, got ${String(value)}`, "pass e.g. 30000");
    }
    return value;
}
/** `value` as plain JSON: typed arrays as arrays; NaN, Infinity, BigInt and cycles refused by path. */
function plain(value, path, seen = new Set()) {
    if (typeof value === "number") {
        if (!Number.isFinite(value)) {
            throw invalid(`${path || "body"}: ${value} cannot be sent as JSON`, "send finite numbers only");
        }
        return value;
    }
    if (typeof value === "bigint") {
        throw invalid(`${path || "body"}: a BigInt cannot be sent as JSON`, "pass a Number");
    }
    if (typeof value !== "object" || value === null)
        return value;
    if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
        return plain(Array.from(value), path, seen);
    }
    if (typeof value.toJSON === "function")
        return value; // a Date in metadata
    if (seen.has(value))
        throw invalid(`${path || "body"}: a circular reference`, "send a tree of plain values");
    seen.add(value);
    const out = Array.isArray(value)
        ? value.map((item, i) => plain(item, `${path}[${i}]`, seen))
        : Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v, path ? `${path}.${k}` : k, seen)]));
    seen.delete(value);
    return out;
}
// Past this many bytes, a broken connection may be the server refusing the body: it answers
// 413 at once for a body far over its --max-body and closes, and fetch, still writing, can
// lose that answer (EPIPE). httpx reads after a failed write; fetch does not.
const LARGE_BODY = 1024 * 1024;
function noAnswer(error, what, w) {
    if (w.caller?.aborted) {
        return new NetworkError({ code: "aborted", message: `${what}: aborted by the caller`,
            hint: "a write may or may not have been applied; a retry of the same remember stores it once",
            cause: w.caller.reason });
    }
    if (w.timeout.aborted) {
        return new NetworkError({ code: "timeout", message: `${what}: no answer within ${w.limit} ms`,
            hint: "the server may be busy: raise timeoutMs or retry (a retry of the same remember stores it once)",
            cause: error });
    }
    const large = w.size > LARGE_BODY
        ? `; the body was ${(w.size / 1048576).toFixed(1)} MiB: over the server's --max-body (8 MiB by default) it is `
            + "refused with 413, and the connection may close before that answer can be read"
        : "";
    return new NetworkError({ code: "unavailable", message: `${what}: ${describe(error)}`,
        hint: `check that \`hms serve\` runs at ${w.base}, then retry (a write may or may not have been applied)${large}`,
        cause: error });
}
/** The most useful words of what fetch threw (its `cause` holds the socket error). */
function describe(error) {
    const cause = error?.cause;
    if (cause && typeof cause.message === "string" && cause.message) {
        return typeof cause.code === "string" && !cause.message.includes(cause.code)
            ? `${cause.code}: ${cause.message}` : cause.message;
    }
    return error instanceof Error ? error.message : String(error);
}
function answer(call, response, text) {
    let body;
    try {
        body = text ? JSON.parse(text) : undefined;
    }
    catch {
        body = undefined;
    }
    const error = isObject(body) && isObject(body["error"]) ? body["error"] : undefined;
    if (response.status === 404 && call.missing && error?.["code"] === "not_found") {
        return call.missing.value;
    }
    if (!response.ok) {
        if (error && typeof error["code"] === "string") {
            return raise(new MemoryError({
                code: error["code"], status: response.status,
                message: typeof error["message"] === "string" ? error["message"] : "",
                hint: typeof error["hint"] === "string" ? error["hint"] : null,
                retryAfter: retryAfter(response.headers.get("retry-after")),
            }));
        }
        return raise(new MemoryError({
            code: "http_error", status: response.status, retryAfter: retryAfter(response.headers.get("retry-after")),
            message: `${call.method} ${call.path}: HTTP ${response.status} without an error body${excerpt(response, text)}`,
            hint: "check that the url points at `hms serve`, not at a proxy or another service",
        }));
    }
    if (!isObject(body)) {
        return raise(new MemoryError({
            code: "bad_response", status: response.status,
            message: `${call.method} ${call.path}: HTTP ${response.status} without a JSON object${excerpt(response, text)}`,
            hint: "check that the url points at `hms serve`, not at a proxy or another service",
        }));
    }
    return body;
}
function raise(error) {
    throw error;
}
function excerpt(response, text) {
    const type = response.headers.get("content-type") ?? "no content type";
    const start = text.trim().slice(0, 120);
    return start ? ` (${type}: ${JSON.stringify(start)})` : ` (${type})`;
}
function retryAfter(value) {
    if (value === null)
        return null;
    if (/^\d+$/.test(value.trim()))
        return Number(value.trim());
    const at = Date.parse(value);
    return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}
export function isObject(value) {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}
/** The `items` of a list answer. */
export function items(body, what) {
    const list = body["items"];
    if (!Array.isArray(list)) {
        throw new MemoryError({ code: "bad_response", status: 200, message: `${what}: expected {"items": [...]}`,
            hint: "check that the server and the client are of the same hmsengine version" });
    }
    return list;
}
/** A Date as integer ms; numbers (and anything else) go as they are, for the server to judge. */
export function toMs(value, field) {
    if (!(value instanceof Date))
        return value;
    const ms = value.getTime();
    if (Number.isNaN(ms)) {
        throw invalid(`${field}: an invalid Date`, "pass a valid Date or integer milliseconds since the Unix epoch (UTC)");
    }
    return ms;
}
/** A copy of `body` with its time fields named in `fields` as integer ms. */
export function withTimes(body, fields, where = "") {
    const out = { ...body };
    for (const name of fields) {
        if (name in out)
            out[name] = toMs(out[name], where + name);
    }
    return out;
}
/** The path of a document: its id as one percent-encoded segment. */
export function documentPath(id) {
    if (typeof id !== "string") {
        throw invalid(`id: expected a string, got ${typeof id}`, "document ids are strings");
    }
    if (id === "." || id === "..") {
        // fetch's URL parser removes dot segments, also percent-encoded ones ("%2E%2E").
        throw invalid(`id: ${JSON.stringify(id)} cannot be addressed in a URL path`, "use another id; the Python client (hmsengine.client) can reach this one");
    }
    try {
        return `${API}/documents/${encodeURIComponent(id)}`;
    }
    catch {
        throw invalid("id: not valid Unicode (a lone surrogate)", "pass a well-formed string");
    }
}
