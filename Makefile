# keepgui — the two commands of the README, and the proof targets.
#   make run     set up .venv if needed, check that Qt's X11 plugin can load (else print the one
#                install command that fixes it), open keepgui on a fresh copy of the demo data (needs a
#                display: DISPLAY or WAYLAND_DISPLAY; without one keepgui says so and stops)
#   make test    set up .venv if needed, install the real agents, pinned, into build/ once (npm: Claude
#                Code, Codex, Gemini CLIs; PyPI: hermes-agent, nanobot-ai; ~2 GB), run the whole test
#                suite headless (about 10 minutes on 2 cores), then the nanobot comparisons in
#                build/nanobot-venv
#   make lint    ruff check, ruff format --check, mypy (strict but for pyproject's ui allow-list),
#                the import-linter contracts and vulture (dead code); .ci/run runs it before make test
#   make bench   every benchmark (tests/bench/bench_*.py) at 10,000 and 100,000 memories, one table:
#                figure, baseline (same run), ratio, target, met; fails only if a benchmark fails
#   make bench-million  the benchmarks that run at several sizes, a million memories included
#   make stress  the long reliability run (tests/stress), one summary; fails on any non-zero loss; then
#                the tests marked slow (the default suite runs their short versions)
#   make package build the one-folder app dist/keepgui/ with PyInstaller (in its own clean
#                venv, build/pkg-venv, not .venv) and smoke-test it; see packaging/README.md
#   make nanobot-compare  install nanobot-ai into build/nanobot-venv and compare the prompt preview
#                with nanobot's own ContextBuilder (the default suite skips those tests without it)
#   make claude-cli  install the real Claude Code CLI (the version keepgui was checked against)
#                into build/claude-cli/ with npm; the comparison tests install it there when missing
#   make hermes-agent  install the real hermes-agent (the version keepgui was checked against) into
#                its own venv, build/hermes-venv/; make hermes-compare runs the comparisons with it
#   make gemini-cli  install the real Gemini CLI (@google/gemini-cli, the version keepgui was checked
#                against) into build/gemini-cli/ with npm
#   make gemini-compare  install it when missing, then compare keepgui's Gemini context and inbox with
#                the real CLI's, byte for byte, on generated trees (offline: a loopback server)
#   make codex-compare  install the real Codex CLI (@openai/codex at keepgui.backends.codex.CHECKED_VERSION)
#                into build/codex-cli/ with npm (make codex-cli alone does only that) and compare keepgui's
#                memory and AGENTS.md blocks with its first request, byte for byte, on generated trees
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# nanobot-ai for the comparisons with nanobot's own ContextBuilder (see nanobot-compare below)
NB_VENV  := build/nanobot-venv
NB_PIN   := 0.3.5
NB_STAMP := $(NB_VENV)/.installed-$(NB_PIN)
NB_TESTS := tests/backends/nanobot/test_nanobot_prompt.py

.PHONY: run test lint bench bench-million stress venv clean agents claude-cli nanobot-compare hermes-agent hermes-compare \
	codex-cli codex-compare gemini-cli gemini-compare

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	@$(BIN)/python -m keepgui.qtcheck
	$(BIN)/keepgui --demo

# The real agents the comparison tests run, each pinned to the version keepgui was checked against and
# installed once into build/ (npm or a venv of its own); a test whose agent cannot be installed skips
# with the reason, so make test still runs on a machine without the registries.
agents: claude-cli hermes-agent codex-cli gemini-cli

# The whole suite, then the comparisons with nanobot's own ContextBuilder in build/nanobot-venv (nanobot-ai
# and its ~800 MB of dependencies stay out of .venv, so the suite itself runs without them).
test: $(STAMP) $(NB_STAMP) agents
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q
	QT_QPA_PLATFORM=offscreen $(NB_VENV)/bin/python -m pytest -q -p no:cacheprovider $(NB_TESTS)

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
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -m slow

claude-cli: $(STAMP)
	$(BIN)/python -m tests.backends.claude.claude_cli

gemini-cli: $(STAMP)
	$(BIN)/python -m tests.backends.gemini.gemini_cli

gemini-compare: gemini-cli
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -p no:cacheprovider \
		tests/backends/gemini/test_gemini_cli_compare.py tests/backends/gemini/test_gemini_inbox_compare.py

codex-cli: $(STAMP)
	$(BIN)/python -m tests.backends.codex.codex_cli

codex-compare: codex-cli
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -p no:cacheprovider tests/backends/codex/test_codex_cli_compare.py

hermes-agent: $(STAMP)
	$(BIN)/python -m tests.backends.hermes.hermes_cli

hermes-compare: hermes-agent
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -p no:cacheprovider tests/backends/hermes/test_hermes_compare.py

# nanobot-ai (~800 MB with its dependencies) is not a test dependency of .venv: it and keepgui get their own
# venv, pinned to the version keepgui's nanobot preview was checked against, where the comparisons with
# nanobot's own ContextBuilder run (make test runs them after the suite; the suite itself skips them).
$(NB_STAMP): pyproject.toml
	@test -x $(NB_VENV)/bin/python || $(PYTHON) -m venv $(NB_VENV)
	$(NB_VENV)/bin/python -m pip install --quiet nanobot-ai==$(NB_PIN) -e '.[test]'
	@touch $@

nanobot-compare: $(NB_STAMP)
	QT_QPA_PLATFORM=offscreen $(NB_VENV)/bin/python -m pytest -q -p no:cacheprovider $(NB_TESTS)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis .mypy_cache .ruff_cache

.PHONY: package
package:
	bash packaging/build.sh
	bash packaging/smoke.sh
