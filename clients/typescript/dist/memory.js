/**
 * `Memory`: the memory operations and document routes of `hms serve`, one method each.
 *
 * Names and fields are those of the JSON contract (docs/http.md): camelCase, results exactly
 * as on the wire, times in integer milliseconds. Every time parameter also takes a `Date`.
 * A list answer (`{"items": [...]}`) comes back as the array. `get` and `getDocument` return
 * `null` for an unknown id, `deleteDocument` `false`; every other refusal throws a
 * `MemoryError` with the server's code, and a request that got no answer a `NetworkError`.
 */
import { invalid } from "./errors.js";
import { API, Transport, documentPath, items, withTimes } from "./http.js";
import { TIME_FIELDS, } from "./types.js";
import { VectorMask } from "./vectormask.js";
function isObject(value) {
    return typeof value === "object" && value !== null && !Array.isArray(value);
}
/** A request body with its `embedding` and its `inputs[i].embedding` masked (nothing else:
 * a caller's metadata may hold a key named embedding). */
function maskBody(body, mask) {
    if (!isObject(body))
        return body;
    const out = { ...body };
    if (out["embedding"] !== undefined && out["embedding"] !== null) {
        out["embedding"] = mask.mask(out["embedding"], "embedding");
    }
    const inputs = out["inputs"];
    if (Array.isArray(inputs)) {
        out["inputs"] = inputs.map((input, i) => isObject(input) && input["embedding"] !== undefined && input["embedding"] !== null
            ? { ...input, embedding: mask.mask(input["embedding"], `inputs[${i}].embedding`) }
            : input);
    }
    return out;
}
/** A fact's or document's JSON with its embedding unmasked (anything else as it is). */
function unmaskValue(value, mask) {
    if (isObject(value) && "text" in value && Array.isArray(value["embedding"])) {
        return { ...value, embedding: mask.unmask(value["embedding"]) };
    }
    return value;
}
/** An answer with the embeddings of its facts and documents unmasked: the body (get, a
 * document), its `items` (history) or their `fact` (recall). */
function unmaskAnswer(body, mask) {
    if (!isObject(body))
        return body;
    const list = body["items"];
    if (!Array.isArray(list))
        return unmaskValue(body, mask);
    return {
        ...body,
        items: list.map((item) => isObject(item) && "fact" in item ? { ...item, fact: unmaskValue(item["fact"], mask) } : unmaskValue(item, mask)),
    };
}
/** Options of a call (`signal`, `timeoutMs`) split from the fields that go in the body. */
function split(options) {
    const { signal, timeoutMs, ...fields } = options ?? {};
    return [fields, { signal, timeoutMs }];
}
/** One fact's fields with its times in ms; `prefix` names it in errors (`inputs[2].`). */
function remembered(input, prefix = "") {
    if (typeof input !== "object" || input === null || Array.isArray(input)) {
        throw invalid(`${prefix.slice(0, -1) || "input"}: expected an object with a text`, "pass { text: '...', ... }");
    }
    return withTimes(input, TIME_FIELDS.remember, prefix);
}
export class Memory {
    #http;
    #mask;
    /** A client of the server at `options.url`; nothing is sent until the first call. */
    constructor(options) {
        if (typeof options !== "object" || options === null) {
            throw invalid("options: expected { url, apiKey?, tenant? }", "new Memory({ url: 'http://127.0.0.1:8080' })");
        }
        const { vectorMask, ...transport } = options;
        if (vectorMask !== undefined && !(vectorMask instanceof VectorMask)) {
            throw invalid("vectorMask: expected a VectorMask", "new Memory({ url, vectorMask: new VectorMask(key) })");
        }
        this.#mask = vectorMask;
        this.#http = new Transport(transport);
    }
    /** The server's address this client sends to. */
    get url() {
        return this.#http.base;
    }
    /** The JSON contract itself: `POST /api/v1/memory/{op}` with `body`, the answer as it is. */
    async call(op, body, options) {
        return (await this.#op(op, body, options, undefined, true));
    }
    /** Remember one fact; durable when it returns. The same id (or text) again stores it once. */
    async remember(text, options) {
        const [fields, request] = split(options);
        return (await this.#op("remember", remembered({ ...fields, text }), request));
    }
    /** Remember facts in one transaction: all of them or none. */
    async rememberMany(inputs, options) {
        if (!Array.isArray(inputs))
            throw invalid("inputs: expected an array", "pass [{ text: '...' }, ...]");
        const body = { inputs: inputs.map((input, i) => remembered(input, `inputs[${i}].`)) };
        return items(await this.#op("rememberMany", body, options), "rememberMany");
    }
    /** Search the facts; by default only those current now (see `asOf`, `knownAt`, `history`). */
    async recall(query, options) {
        const [fields, request] = split(options);
        const body = withTimes({ ...fields, query }, TIME_FIELDS.recall);
        return items(await this.#op("recall", body, request), "recall");
    }
    /** Why `id` came back for `query`, or why not; a `not_found` MemoryError for an unknown id. */
    async explain(query, id, options) {
        const [fields, request] = split(options);
        const body = withTimes({ ...fields, query, id }, TIME_FIELDS.recall);
        return (await this.#op("explain", body, request));
    }
    /** Remove the facts of one scope; their text is zeroed before it returns (`purge`: erased). */
    async forget(scope, options) {
        const [fields, request] = split(options);
        if (typeof scope !== "object" || scope === null || Array.isArray(scope)) {
            throw invalid("scope: expected an object with one key", "e.g. { subject: 'alice/city' } or { ids: ['x'] }");
        }
        const body = { ...fields, scope: withTimes(scope, TIME_FIELDS.scope, "scope.") };
        return (await this.#op("forget", body, request));
    }
    /** The supersession chain of `id`, oldest first; a `not_found` MemoryError if unknown. */
    async history(id, options) {
        return items(await this.#op("history", { id }, options), "history");
    }
    /** The fact `id` (also a superseded one), or `null` when there is none. */
    async get(id, options) {
        return (await this.#op("get", { id }, options, { value: null }));
    }
    /** Forget what the server's forgetting policy selects (a dry run unless `dryRun: false`). */
    async applyForgetting(options) {
        const [fields, request] = split(options);
        return (await this.#op("applyForgetting", fields, request));
    }
    /** Merge duplicates per the server's consolidation policy (a dry run unless `dryRun: false`). */
    async consolidate(options) {
        const [fields, request] = split(options);
        return (await this.#op("consolidate", fields, request));
    }
    /** Load a Markdown document as episodes (idempotent by content). */
    async load(document, text, options) {
        const [fields, request] = split(options);
        const body = withTimes({ ...fields, document, text }, TIME_FIELDS.load);
        return (await this.#op("load", body, request));
    }
    /** The prompt-ready block of a namespace's current profile facts. */
    async profile(namespace = "default", options) {
        const [fields, request] = split(options);
        return (await this.#op("profile", { ...fields, namespace }, request));
    }
    /** One page of facts, newest first; pass `page.nextCursor` back (same filters) for the next. */
    async list(options) {
        const [fields, request] = split(options);
        return (await this.#op("list", withTimes(fields, TIME_FIELDS.recall), request));
    }
    /** How many facts `list` returns over all its pages, with the same filters. */
    async count(options) {
        const [fields, request] = split(options);
        const answer = (await this.#op("count", withTimes(fields, TIME_FIELDS.recall), request));
        return answer.count;
    }
    /** Forget the facts past their retention (a dry run unless `dryRun: false`). */
    async applyRetention(options) {
        const [fields, request] = split(options);
        return (await this.#op("applyRetention", fields, request));
    }
    /** Set (ms) or remove (null) a namespace's default retention; the defaults after the change. */
    async setRetention(namespace, keepForMs, options) {
        const answer = (await this.#op("setRetention", { namespace, keepForMs }, options));
        return answer.retention;
    }
    /** Remember a reference to a file under the server's `fileBase` (422 when it has none). */
    async rememberFile(uri, options) {
        const [fields, request] = split(options);
        return (await this.#op("rememberFile", remembered({ ...fields, uri }), request));
    }
    /** The bytes of a file-backed fact, checked against its sha256 (`provenance_error` if changed). */
    async hydrate(id, options) {
        const { base64, ...rest } = (await this.#op("hydrate", { id }, options));
        return { ...rest, bytes: new Uint8Array(Buffer.from(base64, "base64")) };
    }
    // -- documents ---------------------------------------------------------------------------------
    /** Store `text` under `id`, replacing what was there; durable when it returns. */
    async putDocument(id, text, options) {
        const [fields, request] = split(options);
        return (await this.#send({ method: "PUT", path: documentPath(id), body: { ...fields, text } }, request));
    }
    /** The document `id`, or `null`. */
    async getDocument(id, options) {
        return (await this.#send({ method: "GET", path: documentPath(id), missing: { value: null } }, options));
    }
    /** Delete the document `id`: `true` if it existed. `purge` also erases its text from older files. */
    async deleteDocument(id, options) {
        const [fields, request] = split(options);
        const call = { method: "DELETE", path: documentPath(id), missing: { value: null } };
        if (fields.purge)
            call.query = { purge: "true" };
        return (await this.#send(call, request)) !== null;
    }
    /** Rank the documents (BM25; cosine too with an embedding). */
    async searchDocuments(query, options) {
        const [fields, request] = split(options);
        const body = { ...fields, query };
        return items(await this.#send({ method: "POST", path: `${API}/documents/search`, body }, request), "search");
    }
    /** The server's liveness answer, `{ status: "ok" }` (no tenant or key needed). */
    async health(options) {
        return (await this.#send({ method: "GET", path: "/healthz" }, options));
    }
    // -- the two ways out ------------------------------------------------------------------------
    // A new route is one method over these: `#op` for POST /api/v1/memory/{op}, `#send` for any
    // other (method, path, query, body). Both mask embeddings when the client has a vector mask,
    // except for `call` (`raw`).
    #op(op, body, options, missing, raw = false) {
        const call = { method: "POST", path: `${API}/memory/${encodeURIComponent(op)}`, body };
        if (missing)
            call.missing = missing;
        return raw ? this.#http.send(call, options) : this.#send(call, options);
    }
    async #send(call, options) {
        const mask = this.#mask;
        if (mask === undefined)
            return this.#http.send(call, options);
        const masked = { ...call };
        if (call.body !== undefined)
            masked.body = maskBody(call.body, mask);
        return unmaskAnswer(await this.#http.send(masked, options), mask);
    }
}
