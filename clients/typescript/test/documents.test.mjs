// The document routes against a real `hms serve`, through the checked-in build (dist/).

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Memory, MemoryError } from "../dist/index.js";
import { filesContaining, rejection, startServer } from "./support.mjs";

let server;

before(async () => {
  server = await startServer();
});

after(async () => {
  assert.equal(await server.stop(), 0, server.stderr());
});

test("put, get, search and delete a document, with metadata and a typed-array embedding", async () => {
  const m = new Memory({ url: server.url, tenant: "docs" });
  const put = await m.putDocument("readme", "plain documents work too", {
    metadata: { tag: "x", n: 1 }, embedding: new Float64Array([1, 0, 0]),
  });
  assert.deepEqual([put.id, put.created, typeof put.revision], ["readme", true, "number"]);
  const replaced = await m.putDocument("readme", "plain documents still work", { metadata: { tag: "y" } });
  assert.equal(replaced.created, false);
  assert.deepEqual(await m.getDocument("readme"),
    { id: "readme", text: "plain documents still work", metadata: { tag: "y" }, embedding: null });
  await m.putDocument("other", "documents about other things", { metadata: { tag: "x" } });

  const hits = await m.searchDocuments("documents", { k: 5 });
  assert.deepEqual(hits.map((h) => h.id).sort(), ["other", "readme"]);
  assert.ok(hits.every((h) => typeof h.score === "number" && h.semantic === null));
  const filtered = await m.searchDocuments("documents", { metadata: { tag: "x" } });
  assert.deepEqual(filtered.map((h) => h.id), ["other"]);
  const byIds = await m.searchDocuments("documents", { ids: ["readme"], lexicalWeight: 2 });
  assert.deepEqual(byIds.map((h) => h.id), ["readme"]);

  assert.equal(await m.deleteDocument("readme"), true);
  assert.equal(await m.deleteDocument("readme"), false, "an unknown id is false, not an error");
  assert.equal(await m.getDocument("readme"), null);
});

test("ids travel as one path segment: slashes, spaces, ?#%, non-ASCII, a route's name", async () => {
  const m = new Memory({ url: server.url, tenant: "ids" });
  const ids = ["a/b/c", "sp ace?#%", "ünï-✓", "search", "a.b", "..a", "%2E%2E"];
  for (const [n, id] of ids.entries()) await m.putDocument(id, `zebra number ${n}`);
  for (const [n, id] of ids.entries()) {
    assert.deepEqual(await m.getDocument(id), { id, text: `zebra number ${n}`, metadata: null, embedding: null });
  }
  assert.deepEqual((await m.searchDocuments("zebra", { k: 20 })).map((h) => h.id).sort(), [...ids].sort());
  for (const id of ids) assert.equal(await m.deleteDocument(id, { purge: true }), true, id);
});

test("the ids '.' and '..' are refused before sending: fetch's URL parser would drop them", async () => {
  const m = new Memory({ url: server.url, tenant: "dots" });
  for (const id of [".", ".."]) {
    const error = await rejection(m.putDocument(id, "text"));
    assert.ok(error instanceof MemoryError);
    assert.deepEqual([error.code, error.status], ["invalid_request", null]);
    assert.match(error.message, /cannot be addressed in a URL path/);
  }
  const notString = await rejection(m.getDocument(42));
  assert.deepEqual([notString.code, notString.status], ["invalid_request", null]);
});

test("deleteDocument with purge erases the text; a plain delete leaves it in the journal", async () => {
  const m = new Memory({ url: server.url, tenant: "purge" });
  const store = join(server.root, "purge");
  await m.putDocument("one", "the okapi sleeps under the larch");
  await m.putDocument("two", "the quoll hunts beside the birch");
  assert.equal(await m.deleteDocument("one"), true);
  assert.deepEqual(filesContaining(store, "the okapi sleeps under the larch"), ["gen-00000001/journal.log"],
    "a plain delete leaves the frame in the journal until a compaction (the scan sees it)");
  assert.equal(await m.deleteDocument("two", { purge: true }), true);
  for (const text of ["the okapi sleeps under the larch", "the quoll hunts beside the birch"]) {
    assert.deepEqual(filesContaining(store, text), [], `${text}: in no file after the purge`);
  }
});

test("a bad document request is a 422 MemoryError naming the field", async () => {
  const m = new Memory({ url: server.url, tenant: "bad" });
  const error = await rejection(m.searchDocuments("x", { k: 0 }));
  assert.deepEqual([error.code, error.status], ["invalid_request", 422]);
  assert.match(error.message, /\bk\b/);
});

test("health answers without a tenant", async () => {
  assert.deepEqual(await new Memory({ url: `${server.url}/` }).health(), { status: "ok" });
});
