// The READMEs' examples, as a Node user runs them: `npm install` of this folder into a new
// project, then each marked ```js block as a module against a real `hms serve`.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { PACKAGE_DIR, REPO_DIR } from "../scripts/serve.mjs";
import { jsonFile, startServer, tempDir } from "./support.mjs";

const MARKER = "<!-- run by clients/typescript/test/readme.test.mjs";
const README_URL = "http://127.0.0.1:8080";
let server;
let app;

/** The marked ```js blocks of a Markdown file, each with the ```text block that follows it
 * when the marker says it compares what it prints. */
function examples(path) {
  const text = readFileSync(path, "utf8");
  const found = [];
  for (const part of text.split(MARKER).slice(1)) {
    const code = /```js\n([\s\S]*?)```/.exec(part);
    assert.ok(code, `${path}: a marker without a js block after it`);
    const compares = part.slice(0, part.indexOf("-->")).includes("compares");
    const output = compares ? /```text\n([\s\S]*?)```/.exec(part.slice(code.index + code[0].length)) : null;
    assert.ok(!compares || output, `${path}: a marker that compares, without a text block`);
    found.push({ code: code[1], output: output ? output[1] : null });
  }
  return found;
}

function npm(args, cwd) {
  return execFileSync(process.platform === "win32" ? "npm.cmd" : "npm", args, { cwd, encoding: "utf8" });
}

before(async () => {
  const config = jsonFile("config.json", { supersession: "latest-by-subject" });
  server = await startServer(["--memory-config", config]);
  app = tempDir("hms-ts-app-");
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", version: "1.0.0", private: true }));
  // --offline: the package has no runtime dependencies, so nothing needs the registry.
  npm(["install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", PACKAGE_DIR], app);
});

after(async () => {
  assert.equal(await server.stop(), 0, server.stderr());
});

for (const readme of [join(PACKAGE_DIR, "README.md"), join(REPO_DIR, "README.md")]) {
  const name = readme.slice(REPO_DIR.length + 1);
  test(`${name}: its examples run against hms serve after npm install of the package`, () => {
    const blocks = examples(readme);
    assert.ok(blocks.length > 0, `${name} has no marked example`);
    for (const [n, block] of blocks.entries()) {
      assert.ok(block.code.includes(README_URL), "the example names the default address");
      const file = join(app, `example-${n}.mjs`);
      writeFileSync(file, block.code.replaceAll(README_URL, server.url));
      const printed = execFileSync(process.execPath, [file], { cwd: app, encoding: "utf8" });
      if (block.output !== null) assert.equal(printed, block.output);
      else assert.ok(printed.length > 0);
    }
  });
}
