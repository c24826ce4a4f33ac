# One entry point for newcomers and CI. `make demo` and `make test` install what they need first, into a
# virtual environment of their own (.venv, or VENV=...), with the exact versions in requirements.lock.
PYTHON_BOOT ?= python3
VENV ?= .venv
PYTHON := $(VENV)/bin/python
PIP := $(PYTHON) -m pip --disable-pip-version-check
LOCK := requirements.lock
# The LiteRT environment (--runtime litert): its own venv and lock, its dependencies conflict with $(LOCK)'s
LITERT_VENV ?= .venv-litert
LITERT_PYTHON := $(LITERT_VENV)/bin/python
LITERT_PIP := $(LITERT_PYTHON) -m pip --disable-pip-version-check
LITERT_LOCK := requirements-litert.lock
# The tests that need litert-torch / ai-edge-litert (they skip in the main environment)
LITERT_TESTS ?= tests/unit/test_backends.py tests/cli/test_runtime_flag.py tests/integration/test_litert.py tests/unit/test_lock.py
KOTLIN_VERSION ?= 2.4.20
KOTLINC := .tools/node_modules/kotlin-compiler/bin/kotlinc
DEMO_OUT ?= out/demo
# npm packages of the generated Web / React Native packages, exactly as their lock files (template data) pin
# them: `make tools` warms this cache so the tests run `npm ci --offline --cache .tools/npm-cache` without network.
NPM_CACHE := .tools/npm-cache
NPM_LOCKS := templates/web/package-lock.json templates/react-native/package-lock.json
# -n 2: both cores (pytest-xdist; a file's tests stay on one worker, so module fixtures are built once);
# a worker that crashes ends the run instead of being replaced
PYTEST_ARGS ?= -q --durations=25 -n 2 --dist loadfile --max-worker-restart=0
# Under CI (CI=true, set by .ci/run) a test tool that cannot be installed fails the run instead of skipping tests.
CI ?=

# The Core AI backend's tests (pytest -m coreai) run in a venv of their own with the [coreai] extra, so its
# dependencies (coreai-torch, coreai-core, coreai-opt, torchao) never enter the main one. .ci/run runs it after
# `make test`: a fresh `make test-coreai` took 5 min 47 s here (install ~3 min, tests 2 min 47 s).
COREAI_VENV ?= .venv-coreai
COREAI_LOCK := requirements-coreai.lock
COREAI_PYTHON := $(COREAI_VENV)/bin/python

.PHONY: install tools demo test test-fast test-litert test-coreai lint docs lock lock-litert lock-coreai clean distclean

install: $(VENV)/.installed

$(PYTHON):
	@$(PYTHON_BOOT) -m venv $(VENV) || { echo "error: could not create the virtual environment $(VENV) with $(PYTHON_BOOT): install python3-venv (apt-get install python3-venv) or pass VENV=path/to/an/existing/venv"; rm -rf $(VENV); exit 1; }
	$(PIP) install -q --upgrade pip

# Reinstalls only when the lock or pyproject.toml changed since the last install.
# torch is installed first, pinned: any unpinned resolution pulls the CUDA build (several GB).
$(VENV)/.installed: $(LOCK) pyproject.toml | $(PYTHON)
	$(PIP) install -q -c $(LOCK) torch==2.13.0
	$(PIP) install -q -c $(LOCK) -e '.[dev,tasks]'
	@touch $@

# Refresh requirements.lock from pyproject.toml's ranges (a fresh resolution in a throw-away venv).
lock: | $(PYTHON)
	$(PYTHON) scripts/lock.py

# The same for requirements-litert.lock (the [litert] extra's environment).
lock-litert: | $(PYTHON)
	$(PYTHON) scripts/lock.py --litert

# The same for requirements-coreai.lock (the [coreai] extra's environment).
lock-coreai: | $(PYTHON)
	$(PYTHON) scripts/lock.py --coreai

# The LiteRT environment: torch first (pinned), then mobilegen with its test and litert extras, all from its lock.
$(LITERT_VENV)/.installed: $(LITERT_LOCK) pyproject.toml
	@$(PYTHON_BOOT) -m venv $(LITERT_VENV) || { echo "error: could not create the virtual environment $(LITERT_VENV) with $(PYTHON_BOOT)"; rm -rf $(LITERT_VENV); exit 1; }
	$(LITERT_PIP) install -q -c $(LITERT_LOCK) torch==2.13.0
	$(LITERT_PIP) install -q -c $(LITERT_LOCK) -e '.[dev,tasks,litert]'
	@touch $@

# --runtime litert's tests in their own environment (kotlinc from `make tools` for the wrapper compile).
# .ci/run runs it after `make test`: measured on the 2-core machine (shared), the environment takes ~2.3 min to
# install (torch, .[dev,tasks], then litert-torch: 1 min 39 s + 37 s with a warm pip cache) and the tests 3.1 to
# 6.4 min depending on the load (30 tests: four litert-torch conversions, an int8 one below the gate, one kotlinc
# run): 5.4 to 8.7 min in all.
test-litert: $(LITERT_VENV)/.installed tools
	$(LITERT_PYTHON) -m pytest -q $(LITERT_TESTS)

# Test-only tools: a Kotlin compiler from npm (JDK 17 must be on the machine) and Chromium for the
# report screenshot test (Debian package).
tools: $(KOTLINC) $(NPM_CACHE)/.warm
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || { \
	  if [ "$(CI)" = "true" ]; then echo "error: could not install chromium (apt-get install chromium); CI needs it for tests/integration/test_report_chromium.py"; exit 1; \
	  else echo "warning: could not install chromium (apt-get install chromium): its tests will skip"; fi; }
	@command -v javac >/dev/null 2>&1 || { \
	  if [ "$(CI)" = "true" ]; then echo "error: no JDK on PATH (javac); the Kotlin tests need JDK 17 (apt-get install openjdk-17-jdk-headless)"; exit 1; \
	  else echo "warning: no JDK on PATH (javac): the Kotlin tests will skip"; fi; }

# One `npm ci` per lock file in a scratch folder (package.json rebuilt from the lock's root entry, the
# target's .npmrc beside it); install scripts are skipped (onnxruntime-node's would download CUDA binaries).
$(NPM_CACHE)/.warm: $(NPM_LOCKS)
	@mkdir -p $(NPM_CACHE)
	@for lock in $(NPM_LOCKS); do \
	  d=$$(mktemp -d) && cp $$lock $$d/package-lock.json && { cp $$(dirname $$lock)/.npmrc $$d/ 2>/dev/null || true; } && \
	  node -e 'const fs=require("fs"),d=process.argv[1],l=JSON.parse(fs.readFileSync(d+"/package-lock.json")),r=l.packages[""];fs.writeFileSync(d+"/package.json",JSON.stringify({name:l.name,version:r.version,private:true,dependencies:r.dependencies,devDependencies:r.devDependencies,peerDependencies:r.peerDependencies}))' $$d && \
	  (cd $$d && ONNXRUNTIME_NODE_INSTALL=skip npm ci --ignore-scripts --no-audit --no-fund --silent --cache $(abspath $(NPM_CACHE))); \
	  rc=$$?; rm -rf $$d; \
	  if [ $$rc != 0 ]; then \
	    if [ "$(CI)" = "true" ]; then echo "error: could not install the npm packages of $$lock into $(NPM_CACHE) (needs node, npm and the npm registry); CI needs them for the Web / React Native tests"; exit 1; \
	    else echo "warning: could not install the npm packages of $$lock into $(NPM_CACHE): the Web / React Native tests will skip"; exit 0; fi; \
	  fi; \
	done
	@touch $@

$(KOTLINC):
	mkdir -p .tools
	cd .tools && npm install --no-save --no-package-lock --silent kotlin-compiler@$(KOTLIN_VERSION)

demo: install
	$(PYTHON) -m mobilegen package examples/mobilenet_tiny.pt --input image:1x3x64x64 --android --ios --nnapi --xnnpack --coreml --zip -o $(DEMO_OUT) --force

test: install tools
	$(PYTHON) -m pytest $(PYTEST_ARGS) -m "not coreai and not litert"

test-fast: install
	$(PYTHON) -m pytest $(PYTEST_ARGS) -m "not slow and not coreai and not litert"

$(COREAI_VENV)/.installed: $(COREAI_LOCK) pyproject.toml
	@$(PYTHON_BOOT) -m venv $(COREAI_VENV) || { echo "error: could not create the virtual environment $(COREAI_VENV) with $(PYTHON_BOOT): install python3-venv"; rm -rf $(COREAI_VENV); exit 1; }
	$(COREAI_PYTHON) -m pip --disable-pip-version-check install -q --upgrade pip
	$(COREAI_PYTHON) -m pip --disable-pip-version-check install -q -c $(COREAI_LOCK) torch==2.13.0
	$(COREAI_PYTHON) -m pip --disable-pip-version-check install -q -c $(COREAI_LOCK) -e '.[dev,tasks,coreai]'
	@touch $@

test-coreai: $(COREAI_VENV)/.installed
	$(COREAI_PYTHON) -m pytest -q --durations=10 -m coreai tests/integration/test_coreai_backend.py

lint: install
	$(PYTHON) -m ruff check mobilegen tests benchmarks examples scripts
	$(PYTHON) -m mypy mobilegen

# The generated parts of README.md and docs/ (flag tables, exit codes, passes, providers) from the code;
# tests/unit/test_docs.py fails when they are stale.
docs: install
	$(PYTHON) scripts/gen_docs.py

clean:
	rm -rf out build dist .pytest_cache .mypy_cache .ruff_cache

# `make clean` keeps the virtual environment and the tools; this removes them too.
distclean: clean
	rm -rf $(VENV) $(LITERT_VENV) $(COREAI_VENV) .tools
