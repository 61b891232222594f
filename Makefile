# keepgui — the two commands of the README, and the proof targets.
#   make run     set up .venv if needed, check that Qt's X11 plugin can load (else print the one
#                install command that fixes it), open keepgui on a fresh copy of the demo data
#   make test    set up .venv if needed, run the whole test suite headless
#   make lint    ruff check, ruff format --check, mypy (strict but for pyproject's ui allow-list),
#                the import-linter contracts and vulture (dead code); .ci/run runs it before make test
#   make bench   every benchmark (tests/bench/bench_*.py) at 10,000 and 100,000 memories, one table:
#                figure, baseline (same run), ratio, target, met; fails only if a benchmark fails
#   make bench-million  the benchmarks that run at several sizes, a million memories included
#   make stress  the long reliability run (tests/stress), one summary; fails on any non-zero loss
#   make package build the one-folder app dist/keepgui/ with PyInstaller (in its own clean
#                venv, build/pkg-venv, not .venv) and smoke-test it; see packaging/README.md
#   make nanobot-compare  install nanobot-ai into build/nanobot-venv and compare the prompt preview
#                with nanobot's own ContextBuilder (the default suite skips those tests without it)
#   make claude-cli  install the real Claude Code CLI (the version keepgui was checked against)
#                into build/claude-cli/ with npm; the comparison tests install it there when missing
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench bench-million stress venv clean claude-cli nanobot-compare

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	@$(BIN)/python -m keepgui.qtcheck
	$(BIN)/keepgui --demo

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q

# Every step runs even when one before it failed, so one run names every finding; the
# target fails if any did.
lint: $(STAMP)
	@status=0; \
	$(BIN)/ruff check . || status=1; \
	$(BIN)/ruff format --check . || status=1; \
	$(BIN)/mypy || status=1; \
	$(BIN)/lint-imports || status=1; \
	$(BIN)/vulture || status=1; \
	exit $$status

bench: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m tests.bench

bench-million: $(STAMP)
	KEEPGUI_BENCH_SIZES=10000,100000,1000000 QT_QPA_PLATFORM=offscreen $(BIN)/python -m tests.bench block filter scale views

stress: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m tests.stress

claude-cli: $(STAMP)
	$(BIN)/python -m tests.backends.claude.claude_cli

# nanobot-ai (~800 MB with its dependencies) is not a test dependency: this target puts it and
# keepgui in their own venv and runs the comparisons with nanobot's own ContextBuilder.
NB_VENV := build/nanobot-venv
nanobot-compare:
	@test -x $(NB_VENV)/bin/python || $(PYTHON) -m venv $(NB_VENV)
	$(NB_VENV)/bin/python -m pip install --quiet nanobot-ai -e '.[test]'
	QT_QPA_PLATFORM=offscreen $(NB_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/backends/nanobot/test_nanobot_prompt.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache

.PHONY: package
package:
	bash packaging/build.sh
	bash packaging/smoke.sh
