/**
 * One request to `hms serve` and how its answer is read; `Memory` builds the calls.
 *
 * Every request carries `Content-Type: application/json` and `Accept: application/json` (and
 * the tenant and key headers when set); a body is always JSON. What `fetch` throws becomes a
 * `NetworkError`; an error answer becomes a `MemoryError` with the server's code.
 */
export declare const API = "/api/v1";
export declare const DEFAULT_TIMEOUT_MS = 60000;
/** Per call: the caller's abort signal, and a timeout replacing the client's own. */
export interface RequestOptions {
    signal?: AbortSignal | undefined;
    timeoutMs?: number | undefined;
}
export interface TransportOptions {
    url: string | URL;
    apiKey?: string | undefined;
    tenant?: string | undefined;
    timeoutMs?: number | undefined;
    fetch?: typeof globalThis.fetch | undefined;
}
/** One request: `path` is already percent-encoded; `missing` answers a 404 `not_found`. */
export interface Call {
    method: "GET" | "POST" | "PUT" | "DELETE";
    path: string;
    body?: unknown;
    query?: Record<string, string>;
    missing?: {
        value: unknown;
    };
}
type Json = Record<string, unknown>;
export declare class Transport {
    #private;
    readonly base: string;
    constructor(options: TransportOptions);
    /** Send `call` and return its JSON object (or `call.missing.value` for a 404 `not_found`). */
    send(call: Call, options?: RequestOptions): Promise<Json>;
}
export declare function isObject(value: unknown): value is Json;
/** The `items` of a list answer. */
export declare function items<T>(body: Json, what: string): T[];
/** A Date as integer ms; numbers (and anything else) go as they are, for the server to judge. */
export declare function toMs(value: unknown, field: string): unknown;
/** A copy of `body` with its time fields named in `fields` as integer ms. */
export declare function withTimes(body: object, fields: readonly string[], where?: string): Json;
/** The path of a document: its id as one percent-encoded segment. */
export declare function documentPath(id: unknown): string;
export {};
