# The two commands (README): `make run` starts the embedded platform, `make test` runs the tests.
# Both set up what they need inside the checkout first: a .venv and node packages.
# The system's Python when it is 3.11+ with venv: multi-user mode runs people's notebooks and jobs
# as their own accounts, which must be able to run the interpreter (a Python under /root cannot).
SYSTEM_PYTHON := $(shell /usr/bin/python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && echo /usr/bin/python3)
PYTHON ?= $(or $(SYSTEM_PYTHON),python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.yitong-installed
DATA_DIR ?= $(or $(YITONG_DATA_DIR),$(CURDIR)/.yitong)
SETTINGS ?= $(or $(YITONG_SETTINGS),$(CURDIR)/yitong.example.yaml)
PYTEST_ARGS ?=

.PHONY: run test test-quick install labextension docs clean lint mypy code-server code-server-background mlserver kserve

run: install code-server-background
	@echo "Yitong: data in $(DATA_DIR), settings $(SETTINGS)"
	YITONG_DATA_DIR="$(DATA_DIR)" YITONG_SETTINGS="$(SETTINGS)" exec $(BIN)/jupyterhub -f jupyterhub_config.py

test: install lint mlserver kserve
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The inner loop (about half the suite's time; under 10 minutes is the goal): no whole-platform, browser or Slurm tests, SQLite only, stop
# at the first failure. `make test` (and .ci/run) runs everything; both end with the ten slowest
# tests and each area's total (tests/conftest.py).
QUICK_SELECTION := -m "not e2e and not browser and not slurm" -k "not postgresql" -x -q
test-quick: install
	$(BIN)/python -m pytest $(QUICK_SELECTION) $(PYTEST_ARGS)

# Linters (ruff.toml, mypy.ini; extensions/eslint.config.mjs, extensions/.prettierrc): `make test`
# runs them first; the TypeScript is also type-checked by the extension's build (tsc).
# `cd extensions && npm run lint` applies prettier's formatting and eslint's fixes.
lint: install mypy
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	cd extensions && npm run -s lint:check

mypy: install
	$(BIN)/mypy services/yitong_services spawner/yitong_spawner extensions/yitong_lab

# %yt in every Python kernel of this installation, the default "Python 3" one included
# (IPython reads <venv>/etc/ipython); a rule of its own so editing it does not reinstall the rest
IPYTHON_CONFIG := $(VENV)/etc/ipython/ipython_kernel_config.py
$(IPYTHON_CONFIG): kernels/ipython/ipython_kernel_config.py | $(STAMP)
	install -D -m 644 $< $@

install: $(STAMP) $(IPYTHON_CONFIG)

$(STAMP): package.json spawner/pyproject.toml services/pyproject.toml extensions/pyproject.toml \
          extensions/package.json requirements-dev.txt kernels/yitong-python3/kernel.json
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Yitong needs Python 3.11+")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -U pip wheel
	npm ci --no-audit --no-fund --loglevel=error
	$(MAKE) labextension
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	$(BIN)/python -m pip install -q --no-build-isolation \
	    -e 'spawner[kubernetes,slurm]' -e 'services[postgres,kubernetes]' -e 'extensions[kernel]'
	$(BIN)/jupyter-builder develop --overwrite extensions >/dev/null
	$(BIN)/jupyter kernelspec install --sys-prefix --replace kernels/yitong-python3 >/dev/null
	touch $@

# code-server (VS Code in the browser) and its Node, pinned, from npm into .tools/code-server
# (~600 MB, a few minutes): scripts/install-code-server.sh. `make run` starts it in the
# background, at low priority, so the hub comes up at once; the launcher card and
# <server>/code-server/ show its progress meanwhile (docs/vscode.md). Its log:
# $(DATA_DIR)/logs/code-server-install.log. Ctrl-C on `make run` leaves it running to the end.
CODE_SERVER := .tools/code-server/bin/code-server
CODE_SERVER_LOG := $(DATA_DIR)/logs/code-server-install.log
CODE_SERVER_FAILED := .tools/code-server.failed

code-server: $(CODE_SERVER)

$(CODE_SERVER): scripts/install-code-server.sh
	scripts/install-code-server.sh

# What the install needs is checked first (it says what to apt-get install, and the platform starts
# without VS Code); an earlier failure is said again before the retry; a failure of the background
# install is printed to this terminal (/dev/tty; no terminal: its log), among the hub's lines,
# with its reason; its output never holds make's stdout open (`make run | tee` ends with the hub).
code-server-background:
	@if [ ! -x $(CODE_SERVER) ] && ! command -v code-server >/dev/null; then \
	    mkdir -p "$(dir $(CODE_SERVER_LOG))"; \
	    if ! need=$$(scripts/install-code-server.sh --check 2>&1); then \
	        echo "$$need" | sed 's/^\[code-server\] /Yitong: /'; \
	        scripts/install-code-server.sh >>"$(CODE_SERVER_LOG)" 2>&1 </dev/null; \
	        echo "Yitong: starting without VS Code (install that, then make code-server; docs/vscode.md)"; \
	    else \
	        if [ -f $(CODE_SERVER_FAILED) ]; then \
	            echo "Yitong: the last VS Code install failed: $$(head -n 1 $(CODE_SERVER_FAILED)); trying again"; \
	        fi; \
	        echo "Yitong: installing VS Code in the background (log: $(CODE_SERVER_LOG))"; \
	        if [ -t 1 ]; then say=/dev/tty; else say="$(CODE_SERVER_LOG)"; fi; \
	        ( trap '' HUP; nice -n 19 scripts/install-code-server.sh >>"$(CODE_SERVER_LOG)" 2>&1 || \
	          echo "Yitong: installing VS Code failed: $$(head -n 1 $(CODE_SERVER_FAILED)) (log: $(CODE_SERVER_LOG))" >>"$$say" \
	        ) </dev/null >/dev/null 2>&1 & \
	    fi; \
	fi
# MLServer (model endpoints) in its own environment: it pins an older FastAPI than the platform.
# Its runtimes (scikit-learn, XGBoost, LightGBM; ONNX and custom Python are the platform's own
# classes, yitong_lab.models.runtimes, run here with onnxruntime), the converters beside it
# (skl2onnx; torch's CPU build with onnxscript for torch.onnx) and pyarrow for Parquet batch
# inputs: `yt model convert --python .venv-mlserver/bin/python`. The stamp's name changes when
# the list does, so an existing environment is brought up to date.
MLSERVER_VENV := .venv-mlserver
MLSERVER_STAMP := $(MLSERVER_VENV)/.yitong-installed-2
mlserver: $(MLSERVER_STAMP)

$(MLSERVER_STAMP):
	test -x $(MLSERVER_VENV)/bin/python || $(PYTHON) -m venv $(MLSERVER_VENV)
	$(MLSERVER_VENV)/bin/python -m pip install -q 'mlserver==1.7.1' 'mlserver-sklearn==1.7.1' \
	    'mlserver-xgboost==1.7.1' 'mlserver-lightgbm==1.7.1' 'xgboost==3.2.0' 'lightgbm==4.7.0' \
	    'skl2onnx==1.20.0' 'onnxruntime==1.32.0' 'onnxscript==0.7.2' 'torch==2.13.0' 'pyarrow==26.0.1'
	touch $@

# kserve's Python SDK in its own environment: its REST client is one of the two V2 clients nobody
# here wrote that tests/services/models/test_v2_conformance.py drives through the platform (in a
# subprocess); it pins other versions than MLServer's environment and the platform's venv.
KSERVE_VENV := .venv-kserve
KSERVE_STAMP := $(KSERVE_VENV)/.yitong-installed
kserve: $(KSERVE_STAMP)

$(KSERVE_STAMP):
	test -x $(KSERVE_VENV)/bin/python || $(PYTHON) -m venv $(KSERVE_VENV)
	$(KSERVE_VENV)/bin/python -m pip install -q 'kserve==0.21.0'
	touch $@

# Build the JupyterLab extension into extensions/yitong_lab/labextension (needs jupyterlab in
# the venv for the builder, hence the ordered install).
labextension:
	$(BIN)/python -m pip install -q 'jupyterlab>=4.6,<5' 'hatch-jupyter-builder>=0.9' hatchling editables
	cd extensions && npm ci --no-audit --no-fund --loglevel=error && \
	    PATH="$(CURDIR)/$(BIN):$$PATH" npm run build:prod

docs: install
	$(BIN)/python docs/generate.py
	$(BIN)/python helm/values_schema.py
	$(BIN)/python helm/alert_kinds.py

clean:
	rm -rf $(VENV) $(MLSERVER_VENV) $(KSERVE_VENV) node_modules extensions/node_modules extensions/lib extensions/yitong_lab/labextension
