# The short list of commands anyone needs. Every target creates the virtualenv itself.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
SAMVENV := .sam-venv
export PYTHONPATH :=
export SAM_CLI_TELEMETRY := 0
SHELL   := /bin/bash
# pip -q still warns once per package about index folders a machine's pip config lists but
# does not have ("Location ... is ignored"): keep that out of the first thing a user sees,
# keep every other line and pip's exit status (pipefail).
PIP     := set -o pipefail; PIP_DISABLE_PIP_VERSION_CHECK=1 $(BIN)/python -m pip
PIP_OUT := 2>&1 | { grep -v "^WARNING: Location '.*' is ignored: it is neither a file nor a directory" || true; }

.PHONY: pins help venv sam-venv demo test lint types check corpus-check bench kit serve build aws-region deploy clean peers harness-image

help:
	@echo "make demo    set up; check the corpus; score naive and toolshim; the local-stack journey"
	@echo "             (make demo KEEP=1 leaves the stack running with the demo's data)"
	@echo "make test    set up, then lint, type-check and run every test tier"
	@echo "make check   test + corpus integrity re-check"
	@echo "make serve   run the whole service locally (SQLite state + gateway + worker)"
	@echo "make bench   run the benchmarks (figures and ratios against peers)"
	@echo "make peers   score third-party libraries side by side with the controls (own env)"
	@echo "make pins    refresh every dependency pin (on purpose, own commit, after make test)"
	@echo "make kit     build the free CC0 kit into dist/ (score.py, generate.py, toolshim.py, sample30)"
	@echo "make build   sam build          make deploy   sam deploy (mutates AWS; never in check)"
	@echo "make harness-image   the Batch harness image as an OCI archive, without Docker (build/)"

venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml constraints.txt
	@echo "setting up $(VENV) (pip install -e '.[dev]', a minute or two)"
	@$(PY) -m venv $(VENV)
	@$(PIP) install -q -c constraints.txt pip setuptools $(PIP_OUT)
	@PIP_CONSTRAINT=$(CURDIR)/constraints.txt $(PIP) install -q -c constraints.txt -e '.[dev]' $(PIP_OUT)
	@touch $@

sam-venv: $(SAMVENV)/.installed
$(SAMVENV)/.installed: infra/sam-constraints.txt
	@echo "setting up $(SAMVENV) (aws-sam-cli in its own environment)"
	@$(PY) -m venv $(SAMVENV)
	@set -o pipefail; $(SAMVENV)/bin/python -m pip install -q --disable-pip-version-check -c infra/sam-constraints.txt pip aws-sam-cli $(PIP_OUT)
	@touch $@

demo: venv
	KEEP=$(KEEP) $(BIN)/python infra/demo_journey.py

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types: venv
	$(BIN)/mypy

test: venv sam-venv lint types
	$(BIN)/python -m pytest -q

corpus-check: venv
	$(BIN)/toolcall300 generate --check-only --out corpus_private
	$(BIN)/toolcall300 generate --track parallel --check-only --out corpus_private/parallel
	$(BIN)/python -m toolcall300.generator.deltas_cli --check-only

check: test corpus-check

# The benchmarks in their own environment (the suite with its dev extras, plus the pinned peers
# of bench/requirements.txt, which are not the suite's dependencies). Not part of `make test`.
bench: bench/.venv/.installed
	bench/.venv/bin/python bench/run_all.py
bench/.venv/.installed: pyproject.toml constraints.txt bench/requirements.txt
	$(PY) -m venv bench/.venv
	PIP_CONSTRAINT=$(CURDIR)/constraints.txt bench/.venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[dev]' -r bench/requirements.txt $(PIP_OUT)
	touch $@

# The peer adapters (peers/) in their own environment, never in .venv: their libraries are
# what is measured, not what the suite depends on. Not part of `make test`.
peers: peers/.venv/.installed peers/node/node_modules/.installed
	peers/.venv/bin/python peers/run.py
peers/.venv/.installed: peers/requirements.txt peers/constraints.txt pyproject.toml
	$(PY) -m venv peers/.venv
	PIP_CONSTRAINT=$(CURDIR)/peers/constraints.txt peers/.venv/bin/python -m pip install -q --disable-pip-version-check -c peers/constraints.txt -e . -r peers/requirements.txt
	touch $@
peers/node/node_modules/.installed: peers/node/package.json peers/node/package-lock.json
	npm ci --prefix peers/node --no-audit --no-fund --loglevel=error
	touch $@

# Every pin file, refreshed to the newest versions in fresh environments (README: Running the
# tests). On purpose only, in a commit of its own, after the full test run.
pins:
	$(PY) infra/pins.py update

kit:
	$(PY) infra/build_kit.py --out dist/toolcall300-kit --zip

serve: venv
	$(BIN)/toolcall300 serve

build: sam-venv
	PATH=$(SAMVENV)/bin:$$PATH sam build
	python3.12 infra/compile_layer.py .aws-sam/build/ToolcallLayer/python  # bytecode for the runtime

harness-image:
	sh infra/harness/build-image.sh

aws-region:  # before anything is built: every AWS call of the deploy and the upload needs it
	@test -n "$$AWS_REGION" || { echo "make deploy needs AWS_REGION, the region to deploy to (AWS_REGION=eu-west-1 make deploy)" >&2; exit 1; }

deploy: aws-region build venv
	PATH=$(SAMVENV)/bin:$$PATH sam deploy --guided --region "$$AWS_REGION"
	$(BIN)/python infra/upload_corpus.py

clean:
	rm -rf $(VENV) $(SAMVENV) .aws-sam .pytest_cache .mypy_cache .ruff_cache
