// The memory operations against a real `hms serve` (latest-by-subject, a fileBase), through
// the checked-in build (dist/), as a user of the package runs them.

import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Memory, MemoryError } from "../dist/index.js";
import { filesContaining, jsonFile, rejection, startServer, tempDir } from "./support.mjs";

const QUERY = "where does Alice live";
const Y2020 = Date.UTC(2020, 0, 1);
const Y2025 = Date.UTC(2025, 0, 1);
let server;
let fileBase;

before(async () => {
  fileBase = join(tempDir(), "files");
  mkdirSync(fileBase);
  const config = jsonFile("config.json", { supersession: "latest-by-subject", fileBase });
  server = await startServer(["--memory-config", config]);
});

after(async () => {
  assert.equal(await server.stop(), 0, server.stderr());
});

/** A client of its own tenant, so that each test starts from an empty store. */
function memory(tenant) {
  return new Memory({ url: server.url, tenant });
}

async function alice(m) {
  const paris = await m.remember("Alice lives in Paris", { subject: "alice/city", validFrom: new Date("2020-01-01") });
  const berlin = await m.remember("Alice lives in Berlin", { subject: "alice/city", validFrom: new Date("2025-01-01") });
  return { paris: paris.id, berlin: berlin.id };
}

test("the seed's Alice example: Berlin now, Paris as of 2021, times in ms", async () => {
  const m = memory("alice");
  const first = await m.remember("Alice lives in Paris", { subject: "alice/city", validFrom: new Date("2020-01-01") });
  assert.deepEqual(first.superseded, []);
  assert.equal(first.created, true);
  const second = await m.remember("Alice lives in Berlin", { subject: "alice/city", validFrom: new Date("2025-01-01") });
  assert.deepEqual(second.superseded, [first.id], "latest-by-subject links Berlin to Paris");

  const now = await m.recall(QUERY);
  assert.deepEqual(now.map((h) => h.fact.text), ["Alice lives in Berlin"]);
  assert.equal(now[0].status, "current");
  assert.equal(now[0].fact.validFrom, Y2025, "times come back as integer ms");
  assert.equal(now[0].explanation, null);

  const then = await m.recall(QUERY, { asOf: new Date("2021-06-01") });
  assert.deepEqual(then.map((h) => h.fact.text), ["Alice lives in Paris"]);
  assert.equal(then[0].fact.validFrom, Y2020);
  const thenMs = await m.recall(QUERY, { asOf: Date.UTC(2021, 5, 1) });
  assert.deepEqual(thenMs, then, "a Date and its ms are the same time");

  const all = await m.recall(QUERY, { history: "all" });
  assert.deepEqual(all.map((h) => [h.fact.text, h.status]).sort(),
    [["Alice lives in Berlin", "current"], ["Alice lives in Paris", "superseded"]]);
});

test("remember is idempotent by id; another payload under the id is a 409 conflict", async () => {
  const m = memory("idempotent");
  const a = await m.remember("Bob likes tea", { id: "bob-1", eventTime: 1_700_000_000_000 });
  const again = await m.remember("Bob likes tea", { id: "bob-1", eventTime: new Date(1_700_000_000_000) });
  assert.deepEqual([a.created, again.created, again.id], [true, false, "bob-1"]);
  const error = await rejection(m.remember("Bob likes coffee", { id: "bob-1" }));
  assert.ok(error instanceof MemoryError);
  assert.deepEqual([error.code, error.status, error.name], ["conflict", 409, "MemoryError"]);
  assert.match(error.hint, /new id/);
});

test("explain: why Berlin ranks first now and why Paris does not come back", async () => {
  const m = memory("explain");
  const ids = await alice(m);
  const [hit] = await m.recall(QUERY, { explain: true });
  assert.equal(hit.explanation.id, ids.berlin);
  const berlin = await m.explain(QUERY, ids.berlin);
  assert.equal(berlin.rank, 1);
  assert.equal(berlin.status, "current");
  assert.equal(berlin.score, hit.score, "explain's score is recall's score");
  assert.deepEqual(berlin.chain, [ids.paris, ids.berlin]);
  assert.ok(berlin.matchedTerms.includes("alic"), berlin.matchedTerms.join());
  const paris = await m.explain(QUERY, ids.paris);
  assert.deepEqual([paris.status, paris.rank, paris.validFrom], ["superseded", null, Y2020]);
  const past = await m.explain(QUERY, ids.paris, { asOf: new Date("2021-06-01") });
  assert.deepEqual([past.status, past.rank, past.evaluatedAt], ["current", 1, Date.UTC(2021, 5, 1)]);
  const error = await rejection(m.explain(QUERY, "no-such-fact"));
  assert.deepEqual([error.code, error.status], ["not_found", 404]);
});

test("history and get: the chain oldest first; get of an unknown id is null", async () => {
  const m = memory("history");
  const ids = await alice(m);
  const chain = await m.history(ids.berlin);
  assert.deepEqual(chain.map((f) => f.id), [ids.paris, ids.berlin]);
  assert.equal(typeof chain[0].ingestTime, "number");
  const paris = await m.get(ids.paris);
  assert.deepEqual([paris.text, paris.subject, paris.validFrom, paris.kind], ["Alice lives in Paris", "alice/city", Y2020, "fact"]);
  assert.equal(await m.get("no-such-fact"), null);
  const error = await rejection(m.history("no-such-fact"));
  assert.deepEqual([error.code, error.status], ["not_found", 404]);
});

test("forget with purge erases the text from every file; without purge the journal keeps it", async () => {
  const m = memory("forget");
  const ids = await alice(m);
  const store = join(server.root, "forget");
  await m.remember("Carol keeps a zebracorn in Oslo", { id: "carol" });
  assert.deepEqual(filesContaining(store, "Carol keeps a zebracorn in Oslo").length > 0, true,
    "the text is findable in the files before it is forgotten (the scan can see it)");

  const dry = await m.forget({ ids: ["carol"] }, { dryRun: true });
  assert.deepEqual([dry.removed, dry.dryRun], [["carol"], true]);
  assert.notEqual(await m.get("carol"), null, "a dry run removes nothing");

  const plain = await m.forget({ ids: ["carol"] });
  assert.deepEqual(plain, { removed: ["carol"], relinked: [], dryRun: false });
  assert.equal(await m.get("carol"), null);
  assert.deepEqual(filesContaining(store, "Carol keeps a zebracorn in Oslo"), ["gen-00000001/journal.log"],
    "without purge the journal still holds the frame (the documented bounded exception)");

  const purged = await m.forget({ subject: "alice/city" }, { purge: true });
  assert.deepEqual(purged.removed.sort(), [ids.paris, ids.berlin].sort());
  for (const text of ["Alice lives in Paris", "Alice lives in Berlin", "Carol keeps a zebracorn in Oslo"]) {
    assert.deepEqual(filesContaining(store, text), [], `${text}: in no file after the purge`);
  }
  assert.deepEqual(await m.recall(QUERY, { history: "all" }), []);
  assert.equal((await rejection(m.history(ids.berlin))).code, "not_found");
  const again = await m.forget({ subject: "alice/city" }, { purge: true });
  assert.deepEqual(again.removed, [], "a repeated forget removes nothing");
});

test("forget scopes take times as a Date or ms", async () => {
  const m = memory("scopes");
  await m.remember("an old note about herons", { id: "old", eventTime: new Date("2001-01-01") });
  await m.remember("a new note about herons", { id: "new", eventTime: new Date("2031-01-01") });
  const report = await m.forget({ eventBefore: new Date("2010-01-01") });
  assert.deepEqual(report.removed, ["old"]);
  const none = await m.forget({ ingestedBefore: 0 });
  assert.deepEqual(none.removed, []);
  assert.deepEqual((await m.recall("herons")).map((h) => h.fact.id), ["new"]);
});

test("rememberMany stores all or none and answers in order", async () => {
  const m = memory("many");
  const results = await m.rememberMany([
    { text: "Dan lives in Rome", subject: "dan/city", validFrom: new Date("2019-01-01") },
    { text: "Dan lives in Lima", subject: "dan/city", validFrom: Date.UTC(2022, 0, 1) },
  ]);
  const texts = await Promise.all(results.map(async (r) => (await m.get(r.id)).text));
  assert.deepEqual(texts, ["Dan lives in Rome", "Dan lives in Lima"]);
  assert.equal((await m.get(results[1].id)).validFrom, Date.UTC(2022, 0, 1));
  const error = await rejection(m.rememberMany([{ text: "Eve lives in Kyiv" }, { text: "x", kind: "gossip" }]));
  assert.deepEqual([error.code, error.status], ["invalid_request", 422]);
  assert.match(error.message, /kind/);
  assert.deepEqual(await m.recall("Eve Kyiv"), [], "nothing of a refused batch is stored");
});

test("bad times and numbers are refused before sending, naming the field", async () => {
  const m = memory("refused");
  const invalidDate = await rejection(m.rememberMany([{ text: "fine" }, { text: "bad", validFrom: new Date("nope") }]));
  assert.ok(invalidDate instanceof MemoryError);
  assert.deepEqual([invalidDate.code, invalidDate.status, invalidDate.message],
    ["invalid_request", null, "inputs[1].validFrom: an invalid Date"]);
  const nan = await rejection(m.remember("vector", { embedding: [0.1, Number.NaN] }));
  assert.deepEqual([nan.code, nan.status, nan.message], ["invalid_request", null, "embedding[1]: NaN cannot be sent as JSON"]);
  const asOf = await rejection(m.recall("x", { asOf: new Date(Number.NaN) }));
  assert.equal(asOf.message, "asOf: an invalid Date");
  assert.deepEqual(await m.recall("fine"), [], "nothing was sent");
  const fraction = await rejection(m.recall("x", { asOf: 1.5 }));
  assert.deepEqual([fraction.code, fraction.status], ["invalid_request", 422], "the server judges numbers");
  assert.match(fraction.message, /as_?of/i);
});

test("embeddings go as arrays or typed arrays", async () => {
  const m = memory("vectors");
  await m.remember("a fact with a vector", { id: "v", embedding: new Float32Array([0.5, 0.25, 1]) });
  assert.deepEqual((await m.get("v")).embedding, [0.5, 0.25, 1]);
  const [hit] = await m.recall("vector", { embedding: [0.5, 0.25, 1] });
  assert.equal(hit.fact.id, "v");
});

test("load, profile, applyForgetting and consolidate", async () => {
  const m = memory("loader");
  const loaded = await m.load("guide", "# Setup\n\nInstall the package.\n\n# Use\n\nCall recall.", {
    observedAt: new Date("2024-03-01"),
  });
  assert.ok(loaded.episodes.length >= 1 && loaded.episodes[0] === "guide-0001", loaded.episodes.join());
  const episode = await m.get("guide-0001");
  assert.deepEqual([episode.kind, episode.eventTime], ["episode", Date.UTC(2024, 2, 1)]);
  await m.remember("Prefers short answers", { kind: "profile", namespace: "user-7" });
  const profile = await m.profile("user-7");
  assert.match(profile.block, /Prefers short answers/);
  const forgetting = await m.applyForgetting();
  assert.equal(forgetting.dryRun, true);
  const consolidated = await m.consolidate({ dryRun: true });
  assert.deepEqual(consolidated, { created: [], superseded: [], removed: [], dryRun: true });
});

test("rememberFile and hydrate: the bytes come back checked; a changed file is provenance_error", async () => {
  const m = memory("files");
  mkdirSync(join(fileBase, "files"));  // each tenant reads files under <fileBase>/<tenant> only
  const path = join(fileBase, "files", "notes.txt");
  writeFileSync(path, "line one\nline two\n");
  const result = await m.rememberFile(path, { byteRange: [9, 8], summary: "the second line" });
  const fact = await m.get(result.id);
  assert.deepEqual([fact.file.offset, fact.file.length, fact.file.summary], [9, 8, "the second line"]);
  const hydrated = await m.hydrate(result.id);
  assert.ok(hydrated.bytes instanceof Uint8Array);
  assert.equal(Buffer.from(hydrated.bytes).toString(), "line two");
  assert.equal(hydrated.length, 8);
  writeFileSync(path, "line one\nline 2!\n");
  const error = await rejection(m.hydrate(result.id));
  assert.deepEqual([error.code, error.status], ["provenance_error", 409]);
});

test("call: the JSON contract itself", async () => {
  const m = memory("raw");
  await alice(m);
  const answer = await m.call("recall", { query: QUERY, asOf: Date.UTC(2021, 5, 1) });
  assert.deepEqual(answer.items.map((h) => h.fact.text), ["Alice lives in Paris"]);
  const error = await rejection(m.call("recall", { query: QUERY, nonsense: 1 }));
  assert.deepEqual([error.code, error.status], ["invalid_request", 422]);
  assert.match(error.message, /nonsense/);
});

test("list pages newest first with a cursor; count; retention", async () => {
  const m = memory("browse");
  for (let n = 0; n < 5; n++) await m.remember(`note ${n}`, { id: `n${n}`, namespace: "notes" });
  const seen = [];
  let page = await m.list({ namespace: "notes", limit: 2 });
  for (;;) {
    seen.push(...page.items.map((f) => f.id));
    if (page.nextCursor === null) break;
    page = await m.list({ namespace: "notes", limit: 2, cursor: page.nextCursor });
  }
  assert.deepEqual(seen, ["n4", "n3", "n2", "n1", "n0"]);
  assert.equal(await m.count({ namespace: "notes" }), 5);
  await m.remember("gone soon", { id: "brief", namespace: "notes", retainUntil: new Date(Date.now() - 1000) });
  assert.equal(await m.count({ namespace: "notes" }), 5);
  assert.equal(await m.count({ namespace: "notes", status: "expired-retention" }), 1);
  assert.deepEqual((await m.applyRetention()).removed, ["brief"]);
  assert.deepEqual(await m.setRetention("notes", 86400000), { notes: 86400000 });
  await assert.rejects(m.list({ limit: 1001 }), (e) => e.code === "invalid_request");
});
