// Type-level tests of the published declarations (dist/*.d.ts), compiled by `npm run check`:
// what a caller may write compiles, and each line marked @ts-expect-error must not.

import {
  type ErrorCode,
  type Fact,
  type ForgetReport,
  Memory,
  MemoryError,
  NetworkError,
  type RecallHit,
  type Status,
  VectorMask,
} from "../dist/index.js";

declare const memory: Memory;

export async function accepted(): Promise<void> {
  const m = new Memory({ url: "http://127.0.0.1:8080", apiKey: "key", tenant: "acme", timeoutMs: 5_000 });
  new Memory({ url: new URL("http://127.0.0.1:8080"), fetch: globalThis.fetch });
  const vectorMask = new VectorMask("passphrase");
  new Memory({ url: "http://127.0.0.1:8080", vectorMask: new VectorMask(new Uint8Array(32)) });
  const masked: number[] = vectorMask.mask(new Float32Array([0.1, 0.2]));
  const unmasked: number[] = vectorMask.unmask(masked);
  void unmasked;
  // @ts-expect-error a key is a passphrase or bytes
  new VectorMask(42);
  const result = await m.remember("Alice lives in Berlin", {
    subject: "alice/city", validFrom: new Date("2025-01-01"), validTo: null, eventTime: 1_700_000_000_000,
    embedding: new Float32Array([0.1, 0.2]), metadata: { source: "chat", turn: 3 }, kind: "fact",
  });
  const id: string = result.id;
  const superseded: string[] = result.superseded;
  await m.rememberMany([{ text: "a" }, { text: "b", validFrom: new Date(), embedding: [1, 2] }]);
  const hits: RecallHit[] = await m.recall("where", {
    asOf: new Date(), knownAt: 5, history: "all", kinds: ["fact", "episode"], k: 3,
    signal: AbortSignal.timeout(1_000), timeoutMs: 500,
  });
  const hit = hits[0];
  if (hit) {
    const validFrom: number | null = hit.fact.validFrom;
    const status: Status = hit.status;
    const ingested: number = hit.fact.ingestTime;
    const metadata: Record<string, unknown> | null = hit.fact.metadata;
    void [validFrom, status, ingested, metadata];
  }
  const why = await m.explain("where", id, { asOf: new Date() });
  const rank: number | null = why.rank;
  const fact: Fact | null = await m.get(id);
  const chain: Fact[] = await m.history(id);
  const reports: ForgetReport[] = [
    await m.forget({ subject: "alice/city" }, { purge: true, includeChain: true }),
    await m.forget({ ids: ["a", "b"] }, { dryRun: true }),
    await m.forget({ ingestedBefore: new Date() }),
    await m.forget({ eventBefore: 0 }),
    await m.forget({ metadata: { source: "chat" } }),
  ];
  const raw = await m.call("recall", { query: "where", asOf: 5 });
  const items: RecallHit[] = raw.items;
  const doc = await m.getDocument("readme");
  const text: string | undefined = doc?.text;
  const deleted: boolean = await m.deleteDocument("readme", { purge: true });
  await m.putDocument("readme", "text", { metadata: { a: 1 }, embedding: new Float64Array(2) });
  await m.searchDocuments("text", { k: 5, ids: ["readme"], lexicalWeight: 0.5 });
  const bytes: Uint8Array = (await m.hydrate(id)).bytes;
  void [superseded, rank, fact, chain, reports, items, text, deleted, bytes];
}

export async function refused(): Promise<void> {
  // @ts-expect-error an unknown field
  await memory.remember("t", { subjet: "alice/city" });
  // @ts-expect-error a time as a string
  await memory.recall("q", { asOf: "2021-06-01" });
  // @ts-expect-error history is current, all or historical
  await memory.recall("q", { history: "some" });
  // @ts-expect-error a scope has exactly one key
  await memory.forget({ subject: "alice/city", entity: "alice" });
  // @ts-expect-error an empty scope
  await memory.forget({});
  // @ts-expect-error rememberMany takes inputs with a text
  await memory.rememberMany([{ subject: "s" }]);
  // @ts-expect-error results carry ms, not Dates
  const when: Date | null = (await memory.recall("q"))[0]!.fact.validFrom;
  // @ts-expect-error get may answer null
  const text: string = (await memory.get("x")).text;
  // @ts-expect-error an operation the server does not have
  await memory.call("nonsense", {});
  // @ts-expect-error call's body is typed per operation
  await memory.call("recall", { query: 1 });
  // @ts-expect-error the url is required
  new Memory({ apiKey: "key" });
  void [when, text];
}

export function caught(error: unknown): string {
  if (error instanceof NetworkError) {
    const code: "unavailable" | "timeout" | "aborted" = error.code;
    return code;
  }
  if (error instanceof MemoryError) {
    const code: ErrorCode = error.code;
    const status: number | null = error.status;
    const hint: string | null = error.hint;
    const retryAfter: number | null = error.retryAfter;
    return `${code} ${status} ${hint} ${retryAfter}`;
  }
  return "";
}
