# Two commands do everything on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SAMPLE := .docshelf-sample

.PHONY: install run test lint typecheck pytest pgvector bench bench-cluster bench-fanout cluster-demo docs-cli clean extension vsix obsidian obsidian-zip

# Under CI the services are on their standard ports, and their tests must run
# (a missing service fails them); elsewhere they run only when these are set.
ifeq ($(CI),true)
export DOCSHELF_TEST_AMQP_URL ?= amqp://guest:guest@127.0.0.1:5672/%2F
export DOCSHELF_TEST_POSTGRES_URL ?= postgresql://postgres@127.0.0.1:5432/test
export DOCSHELF_TEST_REDIS_URL ?= redis://127.0.0.1:6379/0
endif

# Idempotent: the venv is (re)built only when pyproject.toml changes.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[local,server,speedups,rabbitmq,redis,s3,postgres,mcp,langchain,qdrant,milvus,chroma,typesense,local-llm,dev]"
	touch $(STAMP)

# The web page's browser tests drive Debian's chromium (never a downloaded browser):
# installed when missing and we are root (as on CI); otherwise those tests say why they skip.
# Likewise Debian's prometheus (prometheus and promtool) for tests/test_observability.py,
# and Debian's tesseract-ocr, which reads scanned PDF pages (parse/ocr.py, tests/test_ocr.py).
install: $(STAMP)
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq >/dev/null && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "chromium is missing (apt-get install chromium); the browser tests will skip"; fi; }
	@command -v promtool >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq >/dev/null && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      prometheus >/dev/null; \
	  else echo "prometheus is missing (apt-get install prometheus); its tests will skip"; fi; }
	@command -v tesseract >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq >/dev/null && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      tesseract-ocr tesseract-ocr-eng >/dev/null; \
	  else echo "tesseract is missing (apt-get install tesseract-ocr); scanned pages are not read and the OCR tests will skip"; fi; }

# Index the project's own docs as a sample library, search it, then serve it.
run: install
	DOCSHELF_HOME=$(SAMPLE) $(BIN)/docshelf add docs
	DOCSHELF_HOME=$(SAMPLE) $(BIN)/docshelf add README.md
	DOCSHELF_HOME=$(SAMPLE) $(BIN)/docshelf search "how are chunks cited" --limit 3
	DOCSHELF_HOME=$(SAMPLE) $(BIN)/docshelf serve

test: install lint typecheck extension obsidian pytest

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install
	$(BIN)/mypy

# The VS Code extension (editors/vscode): lint, type-check and tests (some against a real
# `docshelf serve` from this venv). Node 20 and npm come with the machine; without npm the
# target says so and skips — except under CI=true, where that is a failure.
EXT       := editors/vscode
EXT_STAMP := $(EXT)/node_modules/.installed

$(EXT_STAMP): $(EXT)/package-lock.json $(EXT)/package.json
	cd $(EXT) && npm ci --no-audit --no-fund --loglevel=error
	touch $(EXT_STAMP)

extension: install
	@if ! command -v npm >/dev/null; then \
	  if [ "$(CI)" = true ]; then echo "npm is missing: the VS Code extension's checks cannot run (CI=true)" >&2; exit 1; fi; \
	  echo "SKIPPED the VS Code extension's lint, type-check and tests: npm is missing (install Node 20 and npm)"; \
	  exit 0; \
	fi; \
	$(MAKE) --no-print-directory $(EXT_STAMP) && cd $(EXT) && npm run --silent check

# The installable package: editors/vscode/docshelf.vsix (code bundled by esbuild, minified).
vsix: $(EXT_STAMP)
	cd $(EXT) && npm run --silent package
	@ls -l $(EXT)/docshelf.vsix | awk '{print "docshelf.vsix: " $$5 " bytes"}'

# The Obsidian plugin (editors/obsidian), the same way: lint, type-check and tests (some
# against a real `docshelf serve` from this venv, indexing a vault made by the test).
OBS       := editors/obsidian
OBS_STAMP := $(OBS)/node_modules/.installed

$(OBS_STAMP): $(OBS)/package-lock.json $(OBS)/package.json
	cd $(OBS) && npm ci --no-audit --no-fund --loglevel=error
	touch $(OBS_STAMP)

obsidian: install
	@if ! command -v npm >/dev/null; then \
	  if [ "$(CI)" = true ]; then echo "npm is missing: the Obsidian plugin's checks cannot run (CI=true)" >&2; exit 1; fi; \
	  echo "SKIPPED the Obsidian plugin's lint, type-check and tests: npm is missing (install Node 20 and npm)"; \
	  exit 0; \
	fi; \
	$(MAKE) --no-print-directory $(OBS_STAMP) && cd $(OBS) && npm run --silent check

# The release zip: editors/obsidian/docshelf-obsidian.zip, the plugin's folder (main.js,
# manifest.json, styles.css) to unzip into VAULT/.obsidian/plugins/.
obsidian-zip: $(OBS_STAMP)
	cd $(OBS) && npm run --silent package

# pgvector for the PostgreSQL tests: built once per machine when missing (~40 s).
pgvector:
	@if [ -n "$$DOCSHELF_TEST_POSTGRES_URL" ]; then bash scripts/setup-pgvector.sh; fi

pytest: install pgvector
	$(BIN)/pytest -q

bench: install
	$(BIN)/python bench/parse.py
	$(BIN)/python bench/ingest.py
	$(BIN)/python bench/search.py
	$(BIN)/python bench/upload_load.py
	$(BIN)/python bench/enrich.py

# The scale-out shape on this machine's services (docs/deploy.md): a schema of its own,
# the API and N `docshelf worker` processes, the sample docs uploaded, one search; all
# of it stopped and removed at the end. Override the URLs to use other servers.
CLUSTER_PG_URL   ?= postgresql://postgres@127.0.0.1:5432/test
CLUSTER_AMQP_URL ?= amqp://guest:guest@127.0.0.1:5672/%2F
CLUSTER_WORKERS  ?= 2

cluster-demo: install
	DOCSHELF_TEST_POSTGRES_URL='$(CLUSTER_PG_URL)' bash scripts/setup-pgvector.sh
	$(BIN)/python scripts/cluster_demo.py --database-url '$(CLUSTER_PG_URL)' \
		--amqp-url '$(CLUSTER_AMQP_URL)' --workers $(CLUSTER_WORKERS)

# Ingest with 1-3 workers on PostgreSQL + RabbitMQ vs embedded, and search latency
# SQLite vs PostgreSQL at 100k snippets (BENCHMARKS.md); needs the same services.
bench-cluster: install
	$(BIN)/python bench/cluster.py --database-url '$(CLUSTER_PG_URL)' --amqp-url '$(CLUSTER_AMQP_URL)'

# SSE fan-out latency across two API replicas, with Redis and without (BENCHMARKS.md).
CLUSTER_REDIS_URL ?= redis://127.0.0.1:6379/0

bench-fanout: install
	$(BIN)/python bench/fanout.py --database-url '$(CLUSTER_PG_URL)' \
		--amqp-url '$(CLUSTER_AMQP_URL)' --redis-url '$(CLUSTER_REDIS_URL)'

# Regenerate docs/cli.md from the commands' --help (a test checks it is current).
docs-cli: install
	$(BIN)/python -m docshelf.cli.reference > docs/cli.md

clean:
	rm -rf $(VENV) $(SAMPLE) .pytest_cache .mypy_cache .ruff_cache
	rm -rf $(EXT)/node_modules $(EXT)/dist $(EXT)/docshelf.vsix
	rm -rf $(OBS)/node_modules $(OBS)/main.js $(OBS)/docshelf-obsidian.zip
