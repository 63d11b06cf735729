// A real `hms serve` on 127.0.0.1, port 0, for the tests and for `npm run generate`.
//
// The Python that runs it: $HMS_PYTHON, else the repository's .venv (made by `make test`),
// else python3 on the PATH. The port is read from the line the server prints once bound:
// "hms serve: listening on http://127.0.0.1:PORT".

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, closeSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const REPO_DIR = resolve(PACKAGE_DIR, "../..");
const START_TIMEOUT_MS = 60_000;

/** The Python interpreter that has hmsengine with its `server` extra. */
export function python() {
  if (process.env.HMS_PYTHON) return process.env.HMS_PYTHON;
  const venv = join(REPO_DIR, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

/** A fresh temporary directory. */
export function tempDir(prefix = "hms-ts-") {
  return mkdtempSync(join(tmpdir(), prefix));
}

/**
 * Start `hms serve --root ROOT ARGS...`; resolves once it listens.
 * Returns { url, root, stop() } where stop() sends SIGTERM and resolves with the exit code.
 */
export async function startServer(args = [], { root = join(tempDir(), "root") } = {}) {
  const logPath = join(dirname(root), "serve.log");
  const log = openSync(logPath, "w");
  const child = spawn(python(), ["-m", "hmsengine.cli", "serve", "--root", root, "--host", "127.0.0.1",
    "--port", "0", ...args], { stdio: ["ignore", "pipe", log], cwd: REPO_DIR });
  closeSync(log);
  const stderr = () => readFileSync(logPath, "utf8");
  const exited = new Promise((done) => child.on("exit", (code, signal) => done(code ?? signal)));
  const killOnExit = () => child.kill("SIGKILL");
  process.on("exit", killOnExit);
  const url = await new Promise((done, fail) => {
    let seen = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      fail(new Error(`hms serve did not start within ${START_TIMEOUT_MS} ms:\n${stderr()}`));
    }, START_TIMEOUT_MS);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk) => {
      seen += chunk;
      const match = /listening on (\S+)/.exec(seen);
      if (match) {
        clearTimeout(timer);
        done(match[1]);
      }
    });
    child.on("error", (error) => {
      clearTimeout(timer);
      fail(new Error(`cannot run ${python()}: ${error.message} (set HMS_PYTHON)`));
    });
    exited.then((code) => {
      clearTimeout(timer);
      fail(new Error(`hms serve exited (${code}) before listening:\n${stderr()}`));
    });
  });
  return {
    url,
    root,
    stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const code = await exited;
      process.off("exit", killOnExit);
      return code;
    },
  };
}
