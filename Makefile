# make run: a local cluster with honcho. make test: the default test suite; make test-long: the
# CI slices of the long suites (marked `long`).
PYTHON ?= python3.11
# Python caches compiled modules (__pycache__, ignored by git) unless the environment says not to;
# the suite starts hundreds of Python processes, and each would compile kemu anew (1.1 s of CPU
# for the scheduler's imports instead of 0.4).
unexport PYTHONDONTWRITEBYTECODE
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test suite warm-tests test-long chromium unit integration lint gen gen-openapi check-gen bench bench-scale chaos skew fuzz clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

# CLOCK=virtual: the cluster on kemu's virtual clock (`kemuctl clock rate N` sets its speed),
# the autoscaler at upstream's default timers (10m unneeded time and delay after add: `kemuctl
# clock rate max` gets through them); in real time the Procfile's 30 s, so that the demo shows.
# PORT_BASE=N (or KEMU_PORT_BASE in the environment): every port moved to N + its index in
# kemu/makerun/ports.py's table; `source .kemu/env` then points kemuctl and kubectl at it.
# kemu.makerun checks the ports, writes .kemu/ and becomes honcho (docs/cluster.md).
CLOCK ?= real
PORT_BASE ?=
run: $(STAMP)
	$(BIN)/python -m kemu.makerun --clock $(CLOCK) $(if $(PORT_BASE),--port-base $(PORT_BASE))

# The default suite mostly waits on processes: TEST_WORKERS pytest-xdist workers (a module's
# cluster fixture stays on one worker: --dist loadfile), and the slowest tests listed at the end.
# First the generated code's check beside one collection of the suite (warm-tests), so that
# the workers find the test modules' assertions rewritten and kemu compiled: each worker did
# it anew at once from a fresh clone (~29 CPU-s cold against ~7 warm, a collection each). Then
# the lint (a cold mypy: ~31 CPU-s) beside the suite, which keeps about 1.5 of 2 cores busy:
# `make test` fails if either does, once both have ended.
TEST_WORKERS ?= 4
test: $(STAMP)
	$(MAKE) --no-print-directory -j2 -O check-gen warm-tests
	$(MAKE) --no-print-directory -j2 -Oline lint suite

suite: $(STAMP)
	$(BIN)/python -m pytest -q -m "not long" -n $(TEST_WORKERS) --dist loadfile --durations=15 tests

warm-tests: $(STAMP)
	$(BIN)/python -m pytest -q --collect-only -m "not long" tests >/dev/null

# The CI slices of the long suites (chaos CI profile, skew slice, the make-run demo, the chaos
# picture in a browser, the larger trace replays, the 3000-pod bursts, upstream's volumes/ file),
# on LONG_WORKERS pytest-xdist workers, test by test (each worker's make-run clusters on its own
# PORT_BASE; docs/testing.md): they mostly wait on processes and timers.
LONG_WORKERS ?= 2
test-long: $(STAMP) chromium
	$(BIN)/python -m pytest -q -m long -n $(LONG_WORKERS) --dist loadgroup --durations=15 tests

# Debian's Chromium for the browser test of test-long (tests/integration/drivers/test_timeline_browser.py),
# installed when missing, as root and quietly; where it cannot be, that test skips saying why.
chromium:
	@command -v chromium >/dev/null 2>&1 \
	  || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	       && echo "installing chromium (apt-get) for the browser test" \
	       && apt-get update -qq >/dev/null 2>&1 \
	       && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1; } \
	  || echo "chromium could not be installed: the browser test will skip" >&2

unit: $(STAMP)
	$(BIN)/python -m pytest -q tests/unit

integration: $(STAMP)
	$(BIN)/python -m pytest -q tests/integration

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

gen: $(STAMP)
	hack/gen-proto.sh
	$(MAKE) gen-openapi

# Upstream's OpenAPI definitions of the kinds kemu serves (kemu/machinery/openapi/data), from the
# pinned wheel kubernetes-validate (a dev dependency): rerun after adding a kind.
gen-openapi: $(STAMP)
	$(BIN)/python hack/gen_openapi.py kemu/machinery/openapi/data

check-gen: $(STAMP)
	rm -rf $(VENV)/gen && mkdir -p $(VENV)/gen
	hack/gen-proto.sh $(VENV)/gen
	for d in kemu/api/v1 kemu/api/cloud/v1; do \
	  diff -r -x __pycache__ -x __init__.py -x py.typed $(VENV)/gen/$$d $$d \
	    || { echo "$$d is stale: run 'make gen' and commit the result" >&2; exit 1; }; \
	done
	$(BIN)/python hack/gen_openapi.py $(VENV)/gen/openapi
	diff -r $(VENV)/gen/openapi kemu/machinery/openapi/data \
	  || { echo "kemu/machinery/openapi/data is stale: run 'make gen-openapi' and commit the result" >&2; exit 1; }

bench: $(STAMP)
	$(BIN)/python -m bench

# The scale matrix of issue #16 (bench/README.md "scale"): 500/5000 nodes x 5,000/50,000 pods on
# bare nodes and on hollow kubelets, niced; tens of minutes. SCALE_ARGS="--mode bare ..." to narrow.
bench-scale: $(STAMP)
	mkdir -p .kemu
	nice $(BIN)/python -m bench scale -v --json .kemu/bench-scale.json $(SCALE_ARGS)

# The chaos harness's full profile (CHAOS_ARGS="--seed N --json FILE" to replay or save).
chaos: $(STAMP)
	$(BIN)/python -m kemu.chaos --profile full $(CHAOS_ARGS)

# 10,000 malformed requests at every listening edge of a live cluster, then the figures
# (bench/README.md "fuzz"); exits non-zero on any 5xx, INTERNAL, UNKNOWN, dropped connection,
# hang or changed object. FUZZ_ARGS="--seed N --requests M" to replay or resize.
fuzz: $(STAMP)
	$(BIN)/python -m bench fuzz $(FUZZ_ARGS)

# The whole version-skew matrix (kemu/skew/matrix.yaml): a table of cells x scenarios.
skew: $(STAMP)
	mkdir -p .kemu
	$(BIN)/python -m kemu.skew --json .kemu/skew.json

clean:
	rm -rf $(VENV) .kemu .pytest_cache .mypy_cache .ruff_cache
