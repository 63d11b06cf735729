#!/bin/sh
# `make test`'s part for the TypeScript client, run after the Python suite.
#
#  - no node, or a node older than 20: says that it skipped the client's tests, exits 0;
#  - the tests (node --test, against a real `hms serve` run by $HMS_PYTHON) use dist/, the
#    committed build, so they need node alone, never the npm registry;
#  - the checks (`npm run check`: dist/ is the build of src/, the generated types are those of
#    src/generated/openapi.json, the type-level tests compile) need `npm ci` first; when npm is
#    missing or `npm ci` fails, says that it skipped them, exits 0. (The Python suite's
#    tests/server/test_typescript_client.py checks openapi.json against the server either way.)
set -u
cd "${0%/*}/.." || exit 1
# The client's tests check the wire, not ranking: their `hms serve` keeps new stores lexical,
# as the Python suite does (tests/conftest.py). With the bundled embedder a recall also returns
# facts that share no word with the query (their cosine ranks them), and a fact's frame carries
# its vector, so it is compressed in the journal, where these tests' raw scan cannot see text.
export HMS_EMBEDDER="${HMS_EMBEDDER:-none}"

if ! command -v node >/dev/null 2>&1; then
  echo "make test: SKIPPED the TypeScript client's tests (clients/typescript): node is not installed (Node >= 20)"
  exit 0
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "make test: SKIPPED the TypeScript client's tests (clients/typescript): node $(node --version) is older than 20"
  exit 0
fi

echo "== clients/typescript: node --test (node $(node --version), hms serve from ${HMS_PYTHON:-the .venv})"
node --test --test-reporter=spec test/*.test.mjs || exit 1

# npm ci once per package-lock.json (the lock's copy inside node_modules is newer after it).
if [ -f node_modules/.package-lock.json ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
  installed=yes
elif command -v npm >/dev/null 2>&1 && npm ci --no-audit --no-fund --loglevel=error; then
  installed=yes
else
  installed=no
fi
if [ "$installed" = yes ]; then
  echo "== clients/typescript: npm run check"
  node scripts/check.mjs || exit 1
else
  echo "make test: SKIPPED the TypeScript client's build checks (npm run check): npm is missing or \`npm ci\` failed"
fi
