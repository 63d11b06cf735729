// What the tests share: a real `hms serve` (scripts/serve.mjs), config and key files, a scan
// of a store's files, a process that holds a store's lock, and small HTTP servers that stand
// in for what is not `hms serve` (a dead port, a proxy page, a server that never answers).

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { python, startServer, tempDir } from "../scripts/serve.mjs";

export { startServer, tempDir };

/** Write `value` as JSON to a new file in a temporary directory; its path. */
export function jsonFile(name, value) {
  const path = join(tempDir(), name);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

/** The keys file of `--api-keys`: tenant -> sha256 hex of each key. */
export function keysFile(keys) {
  const hashed = Object.fromEntries(Object.entries(keys).map(([tenant, list]) => [
    tenant, list.map((key) => createHash("sha256").update(key).digest("hex"))]));
  return jsonFile("keys.json", hashed);
}

/** The files under `dir` whose bytes contain `needle` (paths relative to `dir`). */
export function filesContaining(dir, needle, prefix = "") {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...filesContaining(path, needle, `${prefix}${entry.name}/`));
    else if (readFileSync(path).includes(needle)) found.push(prefix + entry.name);
  }
  return found;
}

const HOLD = `
import sys, trio
from hmsengine import Engine
async def main():
    async with Engine.open(sys.argv[1]):
        print("ready", flush=True)
        await trio.to_thread.run_sync(sys.stdin.read)
trio.run(main)
`;

/** Another process that opens the store at `path` and holds its lock until release(). */
export async function holdStore(path) {
  const child = spawn(python(), ["-c", HOLD, path], { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((done) => child.on("exit", done));
  await new Promise((done, fail) => {
    child.stdout.once("data", done);
    exited.then((code) => fail(new Error(`the holder exited (${code}) before opening ${path}`)));
  });
  return {
    async release() {
      child.stdin.end();
      return exited;
    },
  };
}

/** An HTTP server on 127.0.0.1 that answers with `handler`; its url and close(). */
export async function httpServer(handler) {
  const sockets = new Set();
  const server = createServer(handler);
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((done) => server.close(done));
    },
  };
}

/** A port on 127.0.0.1 that was free a moment ago and has nothing listening now. */
export async function deadPort() {
  const server = await httpServer(() => {});
  await server.close();
  return server.url;
}

/** The error `promise` rejects with (fails the test if it resolves). */
export async function rejection(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection, got a result");
}
