# The two commands of the README's "Develop" section: `make demo` (the main job) and
# `make test` (every test). Each creates its own virtualenv and installs what it needs on
# first use (again when pyproject.toml changes).
#
#   make demo   .venv-demo: the package with its [demo] extra only (no developer tools, no
#               Cosmos DB package), installed editable so code changes show at once.
#   make test   .venv: every extra, the Cosmos DB package and the PEP 735 `dev` group; then
#               ruff, ruff format --check, mypy strict and pytest (which also builds the
#               wheels and sdists, installs them in clean virtualenvs per extra and at the
#               lowest versions the metadata allows, runs CrewAI in its own, and builds the
#               API reference with mkdocs --strict).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DEMO_VENV  := .venv-demo
DEMO_STAMP := $(DEMO_VENV)/.installed
ARGS   ?=

.PHONY: demo test lint docs bench install

$(STAMP): pyproject.toml integrations/cosmosdb/pyproject.toml integrations/tiktoken/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=25.1"
	$(BIN)/python -m pip install --quiet --group dev \
		-e ".[agents,tokens,demo,pydantic-ai,google-adk,openai-agents,strands]" -e "integrations/cosmosdb[identity,zstd]" \
		"integrations/tiktoken"
	touch $(STAMP)

$(DEMO_STAMP): pyproject.toml
	$(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/python -m pip install --quiet -e ".[demo]"
	touch $(DEMO_STAMP)

install: $(STAMP)

demo: $(DEMO_STAMP)
	$(DEMO_VENV)/bin/agentstate-reducer demo $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint
	$(BIN)/pytest

docs: $(STAMP)
	$(BIN)/mkdocs build --strict

bench: $(STAMP)
	$(BIN)/python bench/run_all.py $(ARGS)
