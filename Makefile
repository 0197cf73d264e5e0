# `make grade` and `make test` are the whole set-up on a fresh machine: both install first when needed.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

ASSIGNMENT ?= attention_scoring
SUBMISSIONS ?= tests/submissions/$(ASSIGNMENT)
OUT ?= out/$(ASSIGNMENT)
JOBS ?=
CHECK_OUT ?= out/check

.PHONY: install python-version sandbox-deps kit system-deps test-tools grade check test test-assignment lint bench bench-kit soak screenshots gradescope clean bench-review bench-serve

install: $(STAMP)

# The lowest Python the pinned packages take (pyproject.toml's requires-python; tests/test_python_floor.py holds it
# to requirements.txt), checked before pip runs, with the way to a Python that has it.
PYTHON_FLOOR := $(shell sed -n 's/^requires-python = ">=\([0-9.]*\)".*/\1/p' pyproject.toml)
# TORCH_INDEX=https://download.pytorch.org/whl/cpu installs torch's CPU build first (PyPI's Linux torch is the CUDA
# build, gigabytes); docs/gpu.md says how to take a CUDA build instead.
TORCH_INDEX ?=

python-version:
	@$(PYTHON) -c 'import sys; floor = tuple(map(int, "$(PYTHON_FLOOR)".split("."))); \
	  sys.exit(sys.version_info[:len(floor)] < floor)' 2>/dev/null || { \
	  echo "install: the pinned packages need Python $(PYTHON_FLOOR) or newer; $(PYTHON) is \
	$$($(PYTHON) -V 2>&1 || echo missing). Debian 12 and Ubuntu 24.04: their python3 will do (sudo apt-get install \
	python3-venv). Ubuntu 22.04: sudo apt-get install python3.11 python3.11-venv, then make PYTHON=python3.11 grade \
	(or test)." >&2; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -c 'import ensurepip' 2>/dev/null || { echo "install: $(PYTHON) cannot \
	make a virtual environment: sudo apt-get install python3-venv (Debian, Ubuntu; python3.X-venv for python3.X)" >&2; \
	exit 1; }

$(STAMP): requirements.txt pyproject.toml | python-version
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(if $(TORCH_INDEX),$(BIN)/python -m pip install --quiet --disable-pip-version-check \
	  $$(grep -E '^torch==' requirements.txt) --index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

# Each assignment's student kit in dist/<name>/: its templates, grader-kit/ (the public checks, recorded from the
# solution) and the grader's wheel, which students install to run `from grader.kit import check; check()`.
kit: sandbox-deps $(STAMP)
	$(BIN)/grader kit $(SANDBOX_FLAG)

# Installs the Debian packages of $(2) ("package:command" each; the command shows it is there) that are missing:
# a no-op when all are there; as root with apt-get it installs them; otherwise, or when that fails, $(3) runs.
define debian-packages
	@missing=""; for entry in $(2); do \
	  command -v "$${entry#*:}" >/dev/null || missing="$$missing $${entry%%:*}"; done; \
	[ -z "$$missing" ] || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "$(1): installing$$missing"; export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -q $$missing || { apt-get update -q && apt-get install -y -q $$missing; } || { $(3); }; \
	  else $(3); fi; }
endef

# bubblewrap isolates student code (see docs/security.md; without it the grader refuses to run student code unless
# told otherwise); chromium is the real browser the page tests drive (tests/test_browser.py, `make screenshots`).
# Missing and not installable: fail.
SYSTEM_PACKAGES := bubblewrap:bwrap chromium:chromium

SYSTEM_PACKAGES_MISSING = echo "system-deps: missing$$missing: install with your package manager (e.g. sudo \
  apt-get install$$missing), or run make as root" >&2; exit 1

system-deps:
	$(call debian-packages,system-deps,$(SYSTEM_PACKAGES),$(SYSTEM_PACKAGES_MISSING))

# What the commands that run student code need: bubblewrap, installed where it can be. Where it cannot (not root,
# not Debian, macOS), nothing fails here: the grader refuses to run student code without it and says what to do,
# and SANDBOX=partial or SANDBOX=off (passed as --sandbox) goes on without it, knowingly.
SANDBOX ?=
SANDBOX_FLAG = $(if $(SANDBOX),--sandbox $(SANDBOX))

SANDBOX_PACKAGES_MISSING = echo "sandbox-deps: bubblewrap is missing and cannot be installed from here (e.g. sudo \
  apt-get install bubblewrap); the grader will say what it means" >&2

sandbox-deps:
	$(call debian-packages,sandbox-deps,bubblewrap:bwrap,$(SANDBOX_PACKAGES_MISSING))

# What only some tests use: an exFAT image mounted through FUSE is the case-insensitive disk (as USB drives come
# formatted) that tests/test_accounting.py grades onto. Missing and not installable: the tests that need them skip
# and say so, and nothing fails here.
TEST_PACKAGES := exfatprogs:mkfs.exfat exfat-fuse:mount.exfat-fuse

TEST_PACKAGES_MISSING = echo "test-tools: missing$$missing (e.g. sudo apt-get install$$missing); the tests that \
  need them will skip"

test-tools:
	$(call debian-packages,test-tools,$(TEST_PACKAGES),$(TEST_PACKAGES_MISSING))

grade: sandbox-deps $(STAMP)
	$(BIN)/grader grade $(ASSIGNMENT) $(SUBMISSIONS) --out $(OUT) $(if $(JOBS),--jobs $(JOBS)) $(SANDBOX_FLAG) \
	  $(foreach student,$(STUDENT),--student $(student))

# A student's self-check: the public checks only, on one file (SUBMISSION=...), its report in CHECK_OUT. The
# assignment is told from the file unless ASSIGNMENT is given. `grader check` exits 1 when a check fails, which
# make reports as "Error 1" and its own exit code 2.
check: sandbox-deps $(STAMP)
	@test -n "$(SUBMISSION)" || { echo "usage: make check SUBMISSION=path/to/work.ipynb [ASSIGNMENT=name]" >&2; exit 2; }
	$(BIN)/grader check $(SUBMISSION) --out $(CHECK_OUT) $(SANDBOX_FLAG) \
	  $(if $(filter command line environment,$(origin ASSIGNMENT)),--assignment $(ASSIGNMENT))

# ruff's rules, then the architecture's contracts (pyproject.toml [tool.importlinter]: the layers, the sandboxed
# child's independence, no import circles), each failure named by its contract.
lint: $(STAMP)
	$(BIN)/ruff check grader solutions tests
	$(BIN)/lint-imports

# The suite on every logical core, up to 4 (tests/parallel.py says how it splits); TEST_WORKERS=0 runs it in one
# process, TEST_WORKERS=N in N.
TEST_WORKERS ?= logical
PARALLEL = -n $(TEST_WORKERS) --maxprocesses 4 --dist loadfile

test: system-deps test-tools lint
	$(BIN)/python -m pytest $(PARALLEL)

# One assignment's tests (NAME=attention_scoring), after lint: every test whose id names it (its templates, its
# variants' mutations, its sample class, its own test file). -k matches a substring, so NAME=toy also runs toy_written.
test-assignment: lint
	@test -n "$(NAME)" || { echo "usage: make test-assignment NAME=assignment_name" >&2; exit 2; }
	$(BIN)/python -m pytest -q $(PARALLEL) -k $(NAME)

# This grader against a kernel-per-notebook baseline on a synthetic class (tests/benchmark.py; docs/performance.md).
# BENCH_ARGS, e.g. "--students 100 --large 0", makes it shorter.
bench: $(STAMP)
	$(BIN)/python -m tests.benchmark $(BENCH_ARGS)

# How long the review app takes to move to the next student in a class of 500 (tests/review_benchmark.py).
bench-review: $(STAMP)
	$(BIN)/python -m tests.review_benchmark $(BENCH_ARGS)

# How long the student kit's check() takes in a kernel, per question and per assignment (tests/kit_benchmark.py).
bench-kit: $(STAMP)
	$(BIN)/python -m tests.kit_benchmark

# A deadline's rush on grader serve: 200 students launch from the test platform and upload within five minutes;
# every upload graded and every score accepted, the pages' response times (tests/serve_benchmark.py).
bench-serve: $(STAMP)
	$(BIN)/python -m tests.serve_benchmark $(BENCH_ARGS)

# The sample classes graded again and again through threads, job processes and Dask while a spinning process per
# core competes for the CPU, each results.json compared with a calm run's (tests/soak.py; 25 minutes on 2 busy
# cores). SOAK_ARGS, e.g. "--rounds 1 --paths threads", makes it shorter; tests/test_soak.py is its short version.
soak: $(STAMP)
	$(BIN)/python -m tests.soak $(SOAK_ARGS)

# The Gradescope autograder zip for ASSIGNMENT (see docs/gradescope.md).
gradescope: $(STAMP)
	$(BIN)/grader gradescope $(ASSIGNMENT)

# The README's pictures: the sample class's dashboard, one student's report and the student kit's output in a
# notebook (tests/kit_notebook.py), as headless Chromium shows them.
screenshots: system-deps grade
	$(BIN)/python -m tests.browser $(OUT) docs/screenshots --student mistake_softmax_axis
	$(BIN)/python -m tests.kit_notebook out/kit-fragment.html
	$(BIN)/python -m tests.browser docs/screenshots --kit out/kit-fragment.html
	$(BIN)/python -m tests.review_screenshot docs/screenshots/review.png

clean:
	rm -rf out dist .pytest_cache .ruff_cache
