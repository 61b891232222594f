# keepgui — the two commands of the README, and the proof targets.
#   make run     set up .venv if needed, open keepgui on a fresh copy of the demo data
#   make test    set up .venv if needed, run the whole test suite headless
#   make package build the one-folder app dist/keepgui/ with PyInstaller (in its own clean
#                venv, build/pkg-venv, not .venv) and smoke-test it; see packaging/README.md
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test bench stress venv clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

venv: $(STAMP)

run: $(STAMP)
	$(BIN)/keepgui --demo

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q

bench: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m tests.bench

stress: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m tests.stress

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis

.PHONY: package
package:
	bash packaging/build.sh
	bash packaging/smoke.sh
