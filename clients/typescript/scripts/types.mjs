// The TypeScript of the server's OpenAPI document, as `npm run generate` writes it and
// `npm run check` compares it. Its first lines name the sha256 of the openapi.json it was made
// from (dist/generated/openapi.d.ts keeps them); the Python suite (tests/server/test_typescript_client.py) checks that file against the
// server's current /openapi.json and this line against that file, without needing npm.

import { createHash } from "node:crypto";
import { join } from "node:path";
import openapiTS, { astToString } from "openapi-typescript";
import { PACKAGE_DIR } from "./serve.mjs";

export const GENERATED_DIR = join(PACKAGE_DIR, "src", "generated");
export const SPEC_PATH = join(GENERATED_DIR, "openapi.json");
export const TYPES_PATH = join(GENERATED_DIR, "openapi.ts");
export const REGENERATE = "make client-types";

/** The text of openapi.json for a spec object: 2-space JSON and a newline. */
export function specText(spec) {
  return JSON.stringify(spec, null, 2) + "\n";
}

/** The text of openapi.ts for the text of openapi.json. */
export async function typesText(spec) {
  const digest = createHash("sha256").update(spec, "utf8").digest("hex");
  // emptyObjectsUnknown: a bare {"type": "object"} (metadata) is Record<string, unknown>, not
  // Record<string, never>, which no caller could fill or read.
  const ast = await openapiTS(JSON.parse(spec), { emptyObjectsUnknown: true, silent: true });
  // A doc comment on the first declaration, so that tsc keeps it in dist/generated/openapi.d.ts.
  return `/** The server's OpenAPI document as types: generated from openapi.json (sha256 ${digest})\n`
    + ` * by \`${REGENERATE}\`; never edit by hand. */\n` + astToString(ast);
}
