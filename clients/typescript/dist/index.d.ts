/**
 * hmsengine-client: a typed client of hmsengine's HTTP server (`hms serve`) for Node >= 20.
 *
 * ```js
 * import { Memory } from "hmsengine-client";
 * const memory = new Memory({ url: "http://127.0.0.1:8080", apiKey: process.env.HMS_KEY });
 * const hits = await memory.recall("where does Alice live", { asOf: new Date("2021-06-01") });
 * ```
 */
export { type ErrorCode, MemoryError, NetworkError, type NetworkErrorCode, type ServerErrorCode } from "./errors.js";
export { DEFAULT_TIMEOUT_MS, type RequestOptions } from "./http.js";
export { Memory, type MemoryOptions } from "./memory.js";
export { VectorMask } from "./vectormask.js";
export type { ApplyForgettingOptions, ConsolidateOptions, ConsolidateReport, DeleteDocumentOptions, Document, EmbeddingInput, ExplainOptions, Explanation, Fact, FileRef, ForgetOptions, ForgetReport, ForgetScope, Health, Hit, Hydrated, Kind, LoadOptions, LoadResult, MemoryOp, MemoryRequest, MemoryResponse, Profile, ProfileOptions, PutDocumentOptions, PutResult, RecallHit, RecallOptions, RememberFileOptions, RememberInput, RememberOptions, RememberResult, SearchOptions, Status, TimeInput, } from "./types.js";
