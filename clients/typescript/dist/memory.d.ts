/**
 * `Memory`: the memory operations and document routes of `hms serve`, one method each.
 *
 * Names and fields are those of the JSON contract (docs/http.md): camelCase, results exactly
 * as on the wire, times in integer milliseconds. Every time parameter also takes a `Date`.
 * A list answer (`{"items": [...]}`) comes back as the array. `get` and `getDocument` return
 * `null` for an unknown id, `deleteDocument` `false`; every other refusal throws a
 * `MemoryError` with the server's code, and a request that got no answer a `NetworkError`.
 */
import { type RequestOptions } from "./http.js";
import { type ApplyForgettingOptions, type ApplyRetentionOptions, type CountOptions, type ListOptions, type Page, type ConsolidateOptions, type ConsolidateReport, type DeleteDocumentOptions, type Document, type ExplainOptions, type Explanation, type Fact, type ForgetOptions, type ForgetReport, type ForgetScope, type Health, type Hit, type Hydrated, type LoadOptions, type LoadResult, type MemoryOp, type MemoryRequest, type MemoryResponse, type Profile, type ProfileOptions, type PutDocumentOptions, type PutResult, type RecallHit, type RecallOptions, type RememberFileOptions, type RememberInput, type RememberOptions, type RememberResult, type SearchOptions } from "./types.js";
import { VectorMask } from "./vectormask.js";
export interface MemoryOptions {
    /** The server's address, as `hms serve` prints it: `http://127.0.0.1:8080`. */
    url: string | URL;
    /** The key, when the server runs with `--api-keys` (sent as `Authorization: Bearer <key>`). */
    apiKey?: string | undefined;
    /** The tenant (`X-HMS-Tenant`); the server's `default` when absent. */
    tenant?: string | undefined;
    /** How long a request may take before it fails with a `NetworkError` "timeout" (default 60 s). */
    timeoutMs?: number | undefined;
    /** A `fetch` to use instead of the global one (a proxy agent, instrumentation). */
    fetch?: typeof globalThis.fetch | undefined;
    /**
     * Mask every embedding sent with this secret rotation, and unmask those that come back
     * (`vectormask.ts`; the server sees masked vectors only). `call` sends its body as it is.
     */
    vectorMask?: VectorMask | undefined;
}
export declare class Memory {
    #private;
    /** A client of the server at `options.url`; nothing is sent until the first call. */
    constructor(options: MemoryOptions);
    /** The server's address this client sends to. */
    get url(): string;
    /** The JSON contract itself: `POST /api/v1/memory/{op}` with `body`, the answer as it is. */
    call<Op extends MemoryOp>(op: Op, body: MemoryRequest<Op>, options?: RequestOptions): Promise<MemoryResponse<Op>>;
    /** Remember one fact; durable when it returns. The same id (or text) again stores it once. */
    remember(text: string, options?: RememberOptions & RequestOptions): Promise<RememberResult>;
    /** Remember facts in one transaction: all of them or none. */
    rememberMany(inputs: readonly RememberInput[], options?: RequestOptions): Promise<RememberResult[]>;
    /** Search the facts; by default only those current now (see `asOf`, `knownAt`, `history`). */
    recall(query: string, options?: RecallOptions & RequestOptions): Promise<RecallHit[]>;
    /** Why `id` came back for `query`, or why not; a `not_found` MemoryError for an unknown id. */
    explain(query: string, id: string, options?: ExplainOptions & RequestOptions): Promise<Explanation>;
    /** Remove the facts of one scope; their text is zeroed before it returns (`purge`: erased). */
    forget(scope: ForgetScope, options?: ForgetOptions & RequestOptions): Promise<ForgetReport>;
    /** The supersession chain of `id`, oldest first; a `not_found` MemoryError if unknown. */
    history(id: string, options?: RequestOptions): Promise<Fact[]>;
    /** The fact `id` (also a superseded one), or `null` when there is none. */
    get(id: string, options?: RequestOptions): Promise<Fact | null>;
    /** Forget what the server's forgetting policy selects (a dry run unless `dryRun: false`). */
    applyForgetting(options?: ApplyForgettingOptions & RequestOptions): Promise<ForgetReport>;
    /** Merge duplicates per the server's consolidation policy (a dry run unless `dryRun: false`). */
    consolidate(options?: ConsolidateOptions & RequestOptions): Promise<ConsolidateReport>;
    /** Load a Markdown document as episodes (idempotent by content). */
    load(document: string, text: string, options?: LoadOptions & RequestOptions): Promise<LoadResult>;
    /** The prompt-ready block of a namespace's current profile facts. */
    profile(namespace?: string, options?: ProfileOptions & RequestOptions): Promise<Profile>;
    /** One page of facts, newest first; pass `page.nextCursor` back (same filters) for the next. */
    list(options?: ListOptions & RequestOptions): Promise<Page>;
    /** How many facts `list` returns over all its pages, with the same filters. */
    count(options?: CountOptions & RequestOptions): Promise<number>;
    /** Forget the facts past their retention (a dry run unless `dryRun: false`). */
    applyRetention(options?: ApplyRetentionOptions & RequestOptions): Promise<ForgetReport>;
    /** Set (ms) or remove (null) a namespace's default retention; the defaults after the change. */
    setRetention(namespace: string, keepForMs: number | null, options?: RequestOptions): Promise<Record<string, number>>;
    /** Remember a reference to a file under the server's `fileBase` (422 when it has none). */
    rememberFile(uri: string, options?: RememberFileOptions & RequestOptions): Promise<RememberResult>;
    /** The bytes of a file-backed fact, checked against its sha256 (`provenance_error` if changed). */
    hydrate(id: string, options?: RequestOptions): Promise<Hydrated>;
    /** Store `text` under `id`, replacing what was there; durable when it returns. */
    putDocument(id: string, text: string, options?: PutDocumentOptions & RequestOptions): Promise<PutResult>;
    /** The document `id`, or `null`. */
    getDocument(id: string, options?: RequestOptions): Promise<Document | null>;
    /** Delete the document `id`: `true` if it existed. `purge` also erases its text from older files. */
    deleteDocument(id: string, options?: DeleteDocumentOptions & RequestOptions): Promise<boolean>;
    /** Rank the documents (BM25; cosine too with an embedding). */
    searchDocuments(query: string, options?: SearchOptions & RequestOptions): Promise<Hit[]>;
    /** The server's liveness answer, `{ status: "ok" }` (no tenant or key needed). */
    health(options?: RequestOptions): Promise<Health>;
}
