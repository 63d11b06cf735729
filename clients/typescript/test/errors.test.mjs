// Errors: every refusal of a real `hms serve` (with --api-keys and a small --max-body) is a
// MemoryError with the server's code, status and hint; no answer at all is a NetworkError.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Memory, MemoryError, NetworkError } from "../dist/index.js";
import { deadPort, holdStore, httpServer, keysFile, rejection, startServer } from "./support.mjs";

const KEY_A = "alpha-key-0123456789abcdef";
const KEY_B = "beta-key-fedcba9876543210";
const KEY_H = "held-key-00112233445566778899";
const MAX_BODY = 64 * 1024;
let server;

before(async () => {
  const keys = keysFile({ alpha: [KEY_A], beta: [KEY_B], held: [KEY_H] });
  server = await startServer(["--api-keys", keys, "--max-body", String(MAX_BODY)]);
});

after(async () => {
  assert.equal(await server.stop(), 0, server.stderr());
});

function assertServerError(error, code, status) {
  assert.ok(error instanceof MemoryError, `expected a MemoryError, got ${error}`);
  assert.ok(!(error instanceof NetworkError));
  assert.deepEqual([error.name, error.code, error.status], ["MemoryError", code, status]);
  assert.equal(typeof error.message, "string");
  assert.ok(error.message.length > 0);
}

test("the tenant's own key works", async () => {
  const m = new Memory({ url: server.url, apiKey: KEY_A, tenant: "alpha" });
  await m.remember("alpha's fact", { id: "a1" });
  assert.equal((await m.get("a1")).text, "alpha's fact");
});

test("a wrong key is a 401 unauthorized MemoryError with a hint; so is no key", async () => {
  for (const apiKey of ["not-a-key-of-anyone", undefined]) {
    const m = new Memory({ url: server.url, apiKey, tenant: "alpha" });
    const error = await rejection(m.recall("anything"));
    assertServerError(error, "unauthorized", 401);
    assert.match(error.hint, /Authorization: Bearer/);
  }
});

test("another tenant's key is a 403 forbidden MemoryError; nothing of beta is read", async () => {
  const m = new Memory({ url: server.url, apiKey: KEY_A, tenant: "beta" });
  const error = await rejection(m.get("a1"));
  assertServerError(error, "forbidden", 403);
  assert.match(error.message, /beta/);
  assert.match(error.hint, /X-HMS-Tenant/);
});

test("a body over --max-body is a 413 payload_too_large MemoryError", async () => {
  const m = new Memory({ url: server.url, apiKey: KEY_A, tenant: "alpha" });
  for (const size of [MAX_BODY + 1, MAX_BODY + 512 * 1024]) {
    const error = await rejection(m.remember("x".repeat(size)));
    assertServerError(error, "payload_too_large", 413);
    assert.match(error.message, new RegExp(String(MAX_BODY)));
  }
  const batch = Array.from({ length: 100 }, (_, i) => ({ text: `fact ${i} `.padEnd(1000, "y") }));
  assertServerError(await rejection(m.rememberMany(batch)), "payload_too_large", 413);
  assert.equal((await m.get("a1")).text, "alpha's fact", "the client goes on working after a 413");
});

test("a body far over --max-body: the 413, or a NetworkError whose hint names the body's size", async () => {
  // The server answers at once and closes when the declared size is over --max-body + 1 MiB;
  // fetch, still writing, sometimes loses that answer (EPIPE): never a raw error either way.
  const m = new Memory({ url: server.url, apiKey: KEY_A, tenant: "alpha" });
  const error = await rejection(m.remember("x".repeat(4 * 1024 * 1024)));
  assert.ok(error instanceof MemoryError);
  if (error instanceof NetworkError) {
    assert.equal(error.code, "unavailable");
    assert.match(error.hint, /the body was 4\.0 MiB: over the server's --max-body/);
  } else {
    assertServerError(error, "payload_too_large", 413);
  }
});

test("an invalid tenant name is a 400 invalid_tenant from the server", async () => {
  const m = new Memory({ url: server.url, apiKey: KEY_A, tenant: "a.b" });
  assertServerError(await rejection(m.recall("x")), "invalid_tenant", 400);
});

test("a tenant that cannot be a header is refused when the client is made", () => {
  for (const tenant of ["two words", "", "tab\there", "ünï"]) {
    assert.throws(() => new Memory({ url: server.url, tenant }),
      (error) => error instanceof MemoryError && error.code === "invalid_tenant" && error.status === null);
  }
});

test("a store locked by another process is a 503 store_locked with retryAfter", async () => {
  const holder = await holdStore(join(server.root, "held"));
  const m = new Memory({ url: server.url, apiKey: KEY_H, tenant: "held" });
  try {
    const error = await rejection(m.recall("x"));
    assertServerError(error, "store_locked", 503);
    assert.equal(error.retryAfter, 1);
  } finally {
    assert.equal(await holder.release(), 0);
  }
  assert.deepEqual(await m.recall("x"), [], "served once the lock is free");
});

test("a server that is not there is a NetworkError 'unavailable', never a raw TypeError", async () => {
  const url = await deadPort();
  const error = await rejection(new Memory({ url }).recall("x"));
  assert.ok(error instanceof NetworkError);
  assert.ok(error instanceof MemoryError, "one catch (MemoryError) handles every failure");
  assert.deepEqual([error.name, error.code, error.status], ["NetworkError", "unavailable", null]);
  assert.match(error.message, /ECONNREFUSED/);
  assert.match(error.message, new RegExp(`POST ${url}/api/v1/memory/recall`));
  assert.match(error.hint, /hms serve/);
  assert.ok(error.cause instanceof TypeError, "what fetch threw is kept as the cause");
});

test("no answer within timeoutMs is a NetworkError 'timeout'; a caller's abort is 'aborted'", async () => {
  const silent = await httpServer(() => {}); // reads the request, never answers
  try {
    const m = new Memory({ url: silent.url, timeoutMs: 200 });
    const timedOut = await rejection(m.recall("x"));
    assert.ok(timedOut instanceof NetworkError);
    assert.deepEqual([timedOut.code, timedOut.status], ["timeout", null]);
    assert.match(timedOut.message, /no answer within 200 ms/);
    const perCall = await rejection(new Memory({ url: silent.url }).get("x", { timeoutMs: 100 }));
    assert.equal(perCall.code, "timeout");
    const controller = new AbortController();
    const pending = new Memory({ url: silent.url }).recall("x", { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    const aborted = await rejection(pending);
    assert.ok(aborted instanceof NetworkError);
    assert.equal(aborted.code, "aborted");
  } finally {
    await silent.close();
  }
});

test("an answer that is not this API's JSON is http_error or bad_response, with the status", async () => {
  const proxy = await httpServer((request, response) => {
    const html = request.url.includes("recall");
    response.writeHead(html ? 502 : 200, { "Content-Type": "text/html" });
    response.end("<html><body>Bad Gateway</body></html>");
  });
  try {
    const m = new Memory({ url: proxy.url });
    const gateway = await rejection(m.recall("x"));
    assertServerError(gateway, "http_error", 502);
    assert.match(gateway.message, /Bad Gateway/);
    const page = await rejection(m.get("x"));
    assertServerError(page, "bad_response", 200);
  } finally {
    await proxy.close();
  }
});

test("every request carries Content-Type: application/json, the tenant and the key", async () => {
  const seen = [];
  const echo = await httpServer((request, response) => {
    seen.push([request.method, request.url, request.headers["content-type"], request.headers["x-hms-tenant"],
      request.headers.authorization, request.headers.accept]);
    response.writeHead(200, { "Content-Type": "application/json" });
    response.end(request.method === "DELETE" ? '{"id": "d", "deleted": true}' : '{"items": []}');
  });
  try {
    const m = new Memory({ url: `${echo.url}/prefix/`, apiKey: KEY_A, tenant: "alpha" });
    await m.recall("x");
    await m.getDocument("d");
    await m.deleteDocument("d", { purge: true });
    await m.health();
  } finally {
    await echo.close();
  }
  const headers = ["application/json", "alpha", `Bearer ${KEY_A}`, "application/json"];
  assert.deepEqual(seen, [
    ["POST", "/prefix/api/v1/memory/recall", ...headers],
    ["GET", "/prefix/api/v1/documents/d", ...headers],
    ["DELETE", "/prefix/api/v1/documents/d?purge=true", ...headers],
    ["GET", "/prefix/healthz", ...headers],
  ]);
});

test("a bad url or option is refused when the client is made", () => {
  const cases = [
    [{ url: "not a url" }, /not a URL/],
    [{ url: "ftp://127.0.0.1:8080" }, /http: or https:/],
    [{ url: "http://user:secret@127.0.0.1:8080" }, /credentials/],
    [{ url: "http://127.0.0.1:8080/?q=1" }, /query or a fragment/],
    [{ url: "http://127.0.0.1:8080", timeoutMs: 0 }, /timeoutMs/],
    [{ url: "http://127.0.0.1:8080", apiKey: "has space" }, /apiKey/],
  ];
  for (const [options, message] of cases) {
    assert.throws(() => new Memory(options),
      (error) => error instanceof MemoryError && error.code === "invalid_request" && message.test(error.message));
  }
});
