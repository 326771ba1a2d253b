# The two commands a fresh machine needs: `make demo` and `make test`.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
# This workplace's machines set PYTHONDONTWRITEBYTECODE=1: every Python process would then compile
# our sources again and pytest rewrite every test module again (make unit: about 80 s instead of 71-76).
# The byte-code caches are git-ignored and kept out of the collection and the images.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup demo demo-double images test soak soak-matrix lint ansible-lint sanity typecheck unit fuzz bench clean

setup:
	@tools/setup.sh

demo: setup
	$(PY) -m multigres_pools.playground.demo_multigres

# The older, faster story against the era-A multipooler double (no real PostgreSQL).
demo-double: setup
	$(PY) -m multigres_pools.playground.demo

lint: setup
	$(VENV)/bin/ruff check .
	# grimp maps modules to names through sys.path, so it gets the collection's directory layout here only.
	PYTHONPATH=$(VENV)/collections $(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ansible-lint

# Profile production, offline, from .ansible-lint (about 20 s; also part of `make lint`).
ansible-lint: setup
	$(VENV)/bin/ansible-lint

# ansible-test sanity on the built collection (about 30 s once its venvs exist; part of `make test`);
# the first run on a machine fills ansible-test's venvs from PyPI, later runs are offline.
# mypy --strict over the package and the collection's plugins (pyproject.toml [tool.mypy]).
typecheck: setup
	$(VENV)/bin/mypy src/multigres_pools $(VENV)/collections/ansible_collections/multigres/pools/plugins

sanity: setup
	tools/ansible_test_sanity.sh $(SANITY_ARGS)

# The images the install bundle and the pool pods name (images/*/Containerfile), built with buildah
# from slim Debian bases made here and pinned sources; cached by content, so a rebuild happens only
# when an input changed (docs/install.md "Build the images"). IMAGES=pools builds only that one.
images: setup
	$(PY) -m multigres_pools.images build $(IMAGES)

# Tests that start no cluster, stack or image run on every core; the rest one at a time (they share
# two cores with the servers they start). Exit status 5 is "nothing selected" (a PYTEST_ARGS path).
ALONE := cluster or images or multigres or realnode
test: setup lint typecheck sanity images
	$(PY) -m pytest -p no:cacheprovider -n auto -m "not soak and not ($(ALONE))" --durations=20 $(PYTEST_ARGS) \
		|| [ $$? -eq 5 ]
	$(PY) -m pytest -p no:cacheprovider -m "not soak and ($(ALONE))" --durations=40 $(PYTEST_ARGS) || [ $$? -eq 5 ]

# The seeded data-plane fault schedule on real Multigres: FAULT_COUNT (100) faults of every kind,
# then its table (docs/reliability.md, "Data-plane faults"); `make test` plays a short one.
SOAK_FAULTS := $(addprefix tests/integration/multigres/,test_faults_soak.py test_faults_roll_soak.py test_faults_cells_soak.py)
soak: setup
	$(PY) -m pytest -p no:cacheprovider -s -x $(SOAK_FAULTS) $(PYTEST_ARGS)

# The rest of the slow matrix (drain faults, two cells, the chaos soak); `make test` runs a subset.
soak-matrix: setup
	$(PY) -m pytest -p no:cacheprovider -m soak $(foreach f,$(SOAK_FAULTS),--ignore $(f)) $(PYTEST_ARGS)

unit: setup
	$(PY) -m pytest -p no:cacheprovider -n auto -m "not ($(ALONE))" $(PYTEST_ARGS)

# The input fuzzer for longer, with fresh randomness (make test runs 150 fixed examples per fuzz test):
# no traceback for any input of the CLI and the shard_render/shard_reconcile modules.
FUZZ_EXAMPLES ?= 5000
fuzz: setup
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) FUZZ_RANDOM=1 $(PY) -m pytest -p no:cacheprovider --timeout=0 \
		$(addprefix tests/unit/render/test_fuzz_inputs.py::test_fuzz_,cli_bytes cli_documents render_module \
		reconcile_module_arguments) $(PYTEST_ARGS)

# Run from the repository root as modules, so `bench` and `tests` are importable.
bench: setup
	$(PY) -m bench.render
	$(PY) -m bench.drain
	$(PY) -m bench.reconcile
	$(PY) -m bench.operator_loop
	$(PY) -m bench.ansible_operator
	$(PY) -m bench.multigres_shard
	$(PY) -m bench.drain_v01
	$(PY) -m bench.switchover
	$(PY) -m bench.real_node
	$(PY) -m bench.watch_layer

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
