/**
 * The client's public types, all derived from the server's OpenAPI document
 * (`src/generated/openapi.ts`, made by `npm run generate`): results exactly as on the wire
 * (camelCase, times as integer ms), inputs the same but for times, which may also be `Date`,
 * and embeddings, which may also be typed arrays.
 */
import type { components, operations } from "./generated/openapi.js";
type Schemas = components["schemas"];
type JsonOf<T> = T extends {
    content: {
        "application/json": infer B;
    };
} ? B : never;
/** The operations of `POST /api/v1/memory/{op}`, by op name. */
export type MemoryOp = keyof operations extends infer K ? (K extends `memory.${infer Op}` ? Op : never) : never;
/** The JSON body of a memory operation. */
export type MemoryRequest<Op extends MemoryOp> = JsonOf<NonNullable<operations[`memory.${Op}`]["requestBody"]>>;
/** The JSON answer of a memory operation. */
export type MemoryResponse<Op extends MemoryOp> = JsonOf<operations[`memory.${Op}`]["responses"][200]>;
type DocumentRequest<Op extends "put" | "search"> = JsonOf<NonNullable<operations[`documents.${Op}`]["requestBody"]>>;
export type Fact = Schemas["Fact"];
export type FileRef = Schemas["FileRef"];
export type RecallHit = Schemas["RecallHit"];
export type Explanation = Schemas["Explanation"];
export type RememberResult = Schemas["RememberResult"];
export type ForgetReport = Schemas["ForgetReport"];
export type ConsolidateReport = Schemas["ConsolidateReport"];
export type LoadResult = Schemas["LoadResult"];
export type Profile = Schemas["Profile"];
export type Document = Schemas["Document"];
export type PutResult = Schemas["PutResult"];
export type Hit = Schemas["Hit"];
export type Health = Schemas["Health"];
/** One page of `list`: the facts, newest first, and the cursor of the next page (null on the last). */
export type Page = Schemas["Page"];
/** A status of a fact at the evaluation time. */
export type Status = RecallHit["status"];
/** A kind of fact. */
export type Kind = Fact["kind"];
/** A time: a `Date`, or integer milliseconds since the Unix epoch (UTC). */
export type TimeInput = Date | number;
/** An embedding: numbers, or a typed array of them. */
export type EmbeddingInput = readonly number[] | Float32Array | Float64Array;
/** `T` with the time fields `K` also accepting a `Date`, and an embedding a typed array. */
type Input<T, K extends keyof T = never> = {
    [P in keyof T]: P extends K ? Exclude<T[P], number> | TimeInput : P extends "embedding" ? Exclude<T[P], number[]> | EmbeddingInput : T[P];
};
/** The time fields of each input, as the client converts them. */
export declare const TIME_FIELDS: {
    readonly remember: readonly ["eventTime", "validFrom", "validTo", "retainUntil"];
    readonly recall: readonly ["asOf", "knownAt"];
    readonly scope: readonly ["ingestedBefore", "eventBefore"];
    readonly load: readonly ["observedAt"];
};
/** One fact to remember (`rememberMany` takes a list of them). */
export type RememberInput = Input<MemoryRequest<"remember">, (typeof TIME_FIELDS.remember)[number]>;
/** The options of `remember`: every field of `RememberInput` but the text. */
export type RememberOptions = Omit<RememberInput, "text">;
/** The options of `recall`. */
export type RecallOptions = Input<Omit<MemoryRequest<"recall">, "query">, (typeof TIME_FIELDS.recall)[number]>;
/** The options of `explain`: those of `recall` but `explain`. */
export type ExplainOptions = Input<Omit<MemoryRequest<"explain">, "query" | "id">, (typeof TIME_FIELDS.recall)[number]>;
type ScopeFields = Input<NonNullable<MemoryRequest<"forget">["scope"]>, (typeof TIME_FIELDS.scope)[number]>;
/** What `forget` removes: an object with exactly one key (`{ subject: "alice/city" }`, ...). */
export type ForgetScope = {
    [K in keyof ScopeFields]-?: {
        [P in K]-?: Exclude<ScopeFields[P], undefined>;
    } & {
        [P in Exclude<keyof ScopeFields, K>]?: never;
    };
}[keyof ScopeFields];
/** The options of `forget`. */
export type ForgetOptions = Omit<MemoryRequest<"forget">, "scope">;
/** The options of `load`. */
export type LoadOptions = Input<Omit<MemoryRequest<"load">, "document" | "text">, (typeof TIME_FIELDS.load)[number]>;
/** The options of `profile`. */
export type ProfileOptions = Omit<MemoryRequest<"profile">, "namespace">;
/** The options of `list`: filters, `limit` (1-1000) and the `cursor` of the previous page. */
export type ListOptions = Input<MemoryRequest<"list">, (typeof TIME_FIELDS.recall)[number]>;
/** The options of `count`: the filters of `list`. */
export type CountOptions = Input<MemoryRequest<"count">, (typeof TIME_FIELDS.recall)[number]>;
/** The options of `applyRetention`. */
export type ApplyRetentionOptions = MemoryRequest<"applyRetention">;
/** The options of `applyForgetting`. */
export type ApplyForgettingOptions = MemoryRequest<"applyForgetting">;
/** The options of `consolidate`. */
export type ConsolidateOptions = MemoryRequest<"consolidate">;
/** The options of `rememberFile`: `byteRange`, `format`, `summary` and the fields of `remember`. */
export type RememberFileOptions = Omit<Input<MemoryRequest<"rememberFile">, (typeof TIME_FIELDS.remember)[number]>, "uri">;
/** The bytes of a file-backed fact, checked against its recorded sha256. */
export type Hydrated = Omit<MemoryResponse<"hydrate">, "base64"> & {
    bytes: Uint8Array;
};
/** The options of `putDocument`. */
export type PutDocumentOptions = Input<Omit<DocumentRequest<"put">, "text">>;
/** The options of `searchDocuments`. */
export type SearchOptions = Input<Omit<DocumentRequest<"search">, "query">>;
/** The options of `deleteDocument`: `purge` also removes the text from the older files. */
export interface DeleteDocumentOptions {
    purge?: boolean;
}
export {};
