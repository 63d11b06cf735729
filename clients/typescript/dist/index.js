/**
 * hmsengine-client: a typed client of hmsengine's HTTP server (`hms serve`) for Node >= 20.
 *
 * ```js
 * import { Memory } from "hmsengine-client";
 * const memory = new Memory({ url: "http://127.0.0.1:8080", apiKey: process.env.HMS_KEY });
 * const hits = await memory.recall("where does Alice live", { asOf: new Date("2021-06-01") });
 * ```
 */
export { MemoryError, NetworkError } from "./errors.js";
export { DEFAULT_TIMEOUT_MS } from "./http.js";
export { Memory } from "./memory.js";
export { VectorMask } from "./vectormask.js";
