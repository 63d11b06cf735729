// The vector mask: the same map as the Python client (the shared fixture), orthogonal, and
// against a real `hms serve` (caller-supplied 8-dimensional vectors) the server holds masked
// vectors only while recall and search rank exactly as with the raw ones.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { Memory, MemoryError, VectorMask } from "../dist/index.js";
import { startServer } from "./support.mjs";

const DIM = 8;
const fixture = JSON.parse(readFileSync(new URL("./fixtures/vector-mask-v1.json", import.meta.url), "utf8"));
let server;

before(async () => {
  server = await startServer(["--input-dim", String(DIM)]);
});

after(async () => {
  assert.equal(await server.stop(), 0, server.stderr());
});

function keyOf(text) {
  return text.startsWith("hex:") ? Uint8Array.from(Buffer.from(text.slice(4), "hex")) : text;
}

/** Seeded pseudo-random numbers in [-1, 1) (a small LCG: the test needs no crypto). */
function numbers(seed, count) {
  let state = seed >>> 0;
  return Array.from({ length: count }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2147483648 - 1;
  });
}

const dot = (a, b) => a.reduce((sum, x, i) => sum + x * b[i], 0);

test("the fixture of the Python client: the same numbers, bit for bit", () => {
  assert.equal(fixture.version, 1);
  for (const { key, vector, masked } of fixture.cases) {
    assert.deepEqual(new VectorMask(keyOf(key)).mask(vector), masked, `key ${key}, dim ${vector.length}`);
  }
});

test("orthogonal: inner products and norms kept, unmask inverts mask, keys differ", () => {
  const mask = new VectorMask("a passphrase");
  for (const dim of [2, 3, 16, 385]) {
    const a = numbers(dim, dim);
    const b = numbers(dim + 1, dim);
    const ma = mask.mask(a);
    const mb = mask.mask(b);
    assert.ok(Math.abs(dot(ma, mb) - dot(a, b)) < 1e-12, `dot, dim ${dim}`);
    assert.ok(Math.abs(dot(ma, ma) - dot(a, a)) < 1e-12, `norm, dim ${dim}`);
    assert.notDeepEqual(ma, a);
    mask.unmask(ma).forEach((x, i) => assert.ok(Math.abs(x - a[i]) < 1e-12));
  }
  const v = numbers(5, 16);
  assert.notDeepEqual(new VectorMask("another").mask(v), mask.mask(v));
  assert.equal(String(mask), "VectorMask(<secret>)");
});

test("bad keys and vectors are MemoryError invalid_request", () => {
  assert.throws(() => new VectorMask(new Uint8Array(8)), (e) => e instanceof MemoryError && /at least 16 bytes/.test(e.message));
  assert.throws(() => new VectorMask(""), /empty passphrase/);
  assert.throws(() => new VectorMask(42), /expected a passphrase/);
  const mask = new VectorMask("k");
  assert.throws(() => mask.mask([1]), (e) => e.code === "invalid_request" && /2 to 65536/.test(e.message));
  assert.throws(() => mask.mask([1, Number.NaN], "inputs[0].embedding"), /inputs\[0\]\.embedding: expected finite/);
  assert.throws(() => new Memory({ url: server.url, vectorMask: "x" }), /vectorMask: expected a VectorMask/);
});

test("against hms serve: masked vectors stored, the same ranking as raw vectors", async () => {
  const vectorMask = new VectorMask("garden secret");
  const masked = new Memory({ url: server.url, tenant: "ts-masked", vectorMask });
  const plain = new Memory({ url: server.url, tenant: "ts-plain" });
  const peek = new Memory({ url: server.url, tenant: "ts-masked" });
  const facts = Array.from({ length: 30 }, (_, i) => numbers(100 + i, DIM));
  for (const m of [masked, plain]) {
    await m.rememberMany(facts.slice(0, -1).map((embedding, i) => ({ text: `note ${i} about the garden`, id: `n${i}`, embedding })));
    await m.remember("the last note", { id: "n29", embedding: facts[29] });
    await m.putDocument("doc", "a plain document", { embedding: facts[0] });
  }
  const stored = (await peek.get("n3")).embedding;
  assert.ok(stored.some((x, i) => Math.abs(x - facts[3][i]) > 1e-3), "the server holds another vector");
  assert.ok(Math.abs(dot(stored, stored) - dot(facts[3], facts[3])) < 1e-5, "with the same norm");
  const read = (await masked.get("n3")).embedding;
  read.forEach((x, i) => assert.ok(Math.abs(x - facts[3][i]) < 1e-5, "the masked client reads it back raw"));
  const viaCall = await masked.call("get", { id: "n3" });
  assert.deepEqual(viaCall.embedding, stored, "call() sends and returns the wire as it is");

  for (let q = 0; q < 4; q++) {
    const query = numbers(900 + q, DIM);
    const a = await masked.recall("garden", { embedding: query, k: 10 });
    const b = await plain.recall("garden", { embedding: query, k: 10 });
    assert.deepEqual(a.map((h) => [h.fact.id, h.score]), b.map((h) => [h.fact.id, h.score]));
    const sa = await masked.searchDocuments("note", { embedding: query, k: 31 });
    const sb = await plain.searchDocuments("note", { embedding: query, k: 31 });
    assert.deepEqual(sa.map((h) => [h.id, h.score]), sb.map((h) => [h.id, h.score]));
    const ea = await masked.explain("garden", "n4", { embedding: query });
    const eb = await plain.explain("garden", "n4", { embedding: query });
    assert.deepEqual([ea.rank, ea.score], [eb.rank, eb.score]);
  }
  const history = await masked.history("n5");
  history[0].embedding.forEach((x, i) => assert.ok(Math.abs(x - facts[5][i]) < 1e-5));
  const doc = await masked.getDocument("doc");
  doc.embedding.forEach((x, i) => assert.ok(Math.abs(x - facts[0][i]) < 1e-5));
});

test("the Python and TypeScript clients share a masked store", async () => {
  // The fixture's fact, remembered by the Python client's test with the same key, got this id
  // (the digest of its masked payload): the same here means the same masked vector.
  const { key, text, embedding, metadata, id } = fixture.sharedFact;
  const m = new Memory({ url: server.url, tenant: "ts-retry", vectorMask: new VectorMask(keyOf(key)) });
  const first = await m.remember(text, { embedding, metadata });
  assert.equal(first.id, id);
  const again = await m.remember(text, { embedding, metadata });
  assert.deepEqual([first.created, again.created], [true, false]);
  assert.deepEqual((await m.get(id)).metadata, metadata, "metadata is left alone");
});
