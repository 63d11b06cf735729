// `npm run check` (after `npm ci`): what the tests cannot see.
//   1. dist/ is exactly the build of src/ (tsc into a temporary directory, compared file by file);
//   2. src/generated/openapi.ts is exactly what openapi-typescript makes of src/generated/openapi.json
//      (the Python suite checks that file against the server's /openapi.json);
//   3. test/types.check.ts compiles: the public types accept and refuse what they should.
// Exit 1 naming the command that repairs it.

import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join, relative } from "node:path";
import { PACKAGE_DIR, tempDir } from "./serve.mjs";
import { REGENERATE, SPEC_PATH, TYPES_PATH, typesText } from "./types.mjs";

const TSC = join(PACKAGE_DIR, "node_modules", "typescript", "bin", "tsc");

function tsc(...args) {
  execFileSync(process.execPath, [TSC, ...args], { cwd: PACKAGE_DIR, stdio: "inherit" });
}

function files(dir, prefix = "") {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => entry.isDirectory()
    ? files(join(dir, entry.name), `${prefix}${entry.name}/`)
    : [`${prefix}${entry.name}`]).sort();
}

function sameTree(built, committed) {
  const a = files(built);
  const b = files(committed);
  const differing = [...new Set([...a, ...b])].filter((name) => !a.includes(name) || !b.includes(name)
    || !readFileSync(join(built, name)).equals(readFileSync(join(committed, name))));
  return differing;
}

const failures = [];

const out = tempDir("hms-ts-build-");
tsc("-p", "tsconfig.json", "--outDir", out);
const stale = sameTree(out, join(PACKAGE_DIR, "dist"));
if (stale.length) {
  failures.push(`dist/ is not the build of src/ (${stale.join(", ")}): run \`npm run build\` in `
    + "clients/typescript and commit dist/");
} else {
  console.log("check: dist/ is the build of src/");
}

const expected = await typesText(readFileSync(SPEC_PATH, "utf8"));
if (readFileSync(TYPES_PATH, "utf8") !== expected) {
  failures.push(`${relative(PACKAGE_DIR, TYPES_PATH)} is not what openapi-typescript makes of `
    + `${relative(PACKAGE_DIR, SPEC_PATH)}: run \`${REGENERATE}\` and commit clients/typescript`);
} else {
  console.log("check: src/generated/openapi.ts is generated from src/generated/openapi.json");
}

try {
  tsc("-p", "tsconfig.check.json");
  console.log("check: test/types.check.ts compiles");
} catch {
  failures.push("test/types.check.ts does not compile (tsc's errors above)");
}

for (const failure of failures) console.error(`check: FAILED: ${failure}`);
process.exit(failures.length ? 1 : 0);
