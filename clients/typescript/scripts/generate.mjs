// `npm run generate`: fetch /openapi.json from a real `hms serve` and write
// src/generated/openapi.json (what the types were made from) and src/generated/openapi.ts.
//
//   node scripts/generate.mjs              starts hms serve itself (see serve.mjs for the Python)
//   node scripts/generate.mjs --url URL    reads URL/openapi.json from a running server

import { mkdirSync, writeFileSync } from "node:fs";
import { relative } from "node:path";
import { GENERATED_DIR, SPEC_PATH, TYPES_PATH, specText, typesText } from "./types.mjs";
import { PACKAGE_DIR, startServer } from "./serve.mjs";

async function fetchSpec(url) {
  const response = await fetch(`${url.replace(/\/+$/, "")}/openapi.json`);
  if (!response.ok) throw new Error(`GET ${url}/openapi.json: HTTP ${response.status}`);
  return response.json();
}

async function main(argv) {
  const at = argv.indexOf("--url");
  let spec;
  if (at >= 0) {
    spec = await fetchSpec(argv[at + 1]);
  } else {
    const server = await startServer();
    try {
      spec = await fetchSpec(server.url);
    } finally {
      await server.stop();
    }
  }
  const text = specText(spec);
  mkdirSync(GENERATED_DIR, { recursive: true });
  writeFileSync(SPEC_PATH, text);
  writeFileSync(TYPES_PATH, await typesText(text));
  for (const path of [SPEC_PATH, TYPES_PATH]) console.log(`wrote ${relative(PACKAGE_DIR, path)}`);
}

main(process.argv.slice(2)).catch((error) => {
  console.error(`generate: ${error.message}`);
  process.exit(1);
});
