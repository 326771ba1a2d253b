# The two commands a fresh machine needs: `make demo` and `make test`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg

.PHONY: setup demo test lint unit bench clean

setup:
	@tools/setup.sh

demo: setup
	$(PY) -m multigres_pools.demo

lint: setup
	$(VENV)/bin/ruff check .

test: setup lint
	$(PY) -m pytest -p no:cacheprovider $(PYTEST_ARGS)

unit: setup
	$(PY) -m pytest -p no:cacheprovider -m "not cluster" $(PYTEST_ARGS)

bench: setup
	$(PY) bench/render.py
	$(PY) bench/drain.py
	$(PY) bench/reconcile.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
