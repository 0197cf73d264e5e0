# `make grade` and `make test` are the whole set-up on a fresh machine: both install first when needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

ASSIGNMENT ?= attention_scoring
SUBMISSIONS ?= tests/submissions/$(ASSIGNMENT)
OUT ?= out/$(ASSIGNMENT)
JOBS ?=

.PHONY: install system-deps grade test lint clean

install: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

# bubblewrap isolates student code (see the README's security model); without it the grader degrades and warns.
system-deps:
	@command -v bwrap >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get install -y -q bubblewrap || { apt-get update -q && apt-get install -y -q bubblewrap; }; \
	  else echo "install bubblewrap with your package manager (e.g. sudo apt-get install bubblewrap)"; exit 1; fi; }

grade: $(STAMP)
	$(BIN)/grader grade $(ASSIGNMENT) $(SUBMISSIONS) --out $(OUT) $(if $(JOBS),--jobs $(JOBS))

lint: $(STAMP)
	$(BIN)/ruff check grader solutions tests

test: lint
	$(BIN)/python -m pytest

clean:
	rm -rf out .pytest_cache .ruff_cache
