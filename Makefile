# One entry point for newcomers and CI. `make demo` and `make test` install what they need first.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
KOTLIN_VERSION ?= 2.4.20
KOTLINC := .tools/node_modules/kotlin-compiler/bin/kotlinc
DEMO_OUT ?= out/demo

.PHONY: install tools demo test test-fast lint clean

# torch is installed first, pinned: any unpinned resolution pulls the CUDA build (several GB).
install:
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev]'

# Test-only tools: a Kotlin compiler from npm (JDK 17 must be on the machine) and Chromium for the
# report screenshot test (Debian package).
tools: $(KOTLINC)
	@command -v chromium >/dev/null 2>&1 || { (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "warning: could not install chromium"; }

$(KOTLINC):
	mkdir -p .tools
	cd .tools && npm install --no-save --no-package-lock --silent kotlin-compiler@$(KOTLIN_VERSION)

demo: install
	$(PYTHON) -m mobilegen package examples/mobilenet_tiny.pt --input image:1x3x64x64 --android --ios --nnapi --xnnpack --coreml --zip -o $(DEMO_OUT) --force

test: install tools
	$(PYTHON) -m pytest -q

test-fast: install
	$(PYTHON) -m pytest -q -m "not slow"

lint: install
	$(PYTHON) -m ruff check mobilegen tests benchmarks examples
	$(PYTHON) -m mypy mobilegen

clean:
	rm -rf out build dist .pytest_cache .mypy_cache .ruff_cache
