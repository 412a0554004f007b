# Two commands do everything on a fresh machine:
#   make train   - a short self-play training run with a report at the end
#   make test    - the test suite
# Both create .venv and install what they need first.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
CONFIG ?= configs/train/main.yaml

.PHONY: install train test test-fast bench lint demo clean test-distributed screenshots

# Ray RLlib and the other RL clients pin other releases (Ray 2.60: gymnasium 1.2.2;
# PettingZoo < 1.27 for gin_rummy_v4), so they get their own virtualenv.
DVENV  ?= .venv-distributed
DPY    := $(DVENV)/bin/python
DSTAMP := $(DVENV)/.installed-stamp

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade --quiet pip
	# torch first, from the pinned CPU build, so nothing later can pull a CUDA build.
	$(PY) -m pip install --quiet -c constraints.txt torch==2.13.0
	$(PY) -m pip install --quiet -c constraints.txt -e ".[all]"
	# PufferLib's kernel is compiled here against the torch above (pyproject.toml's puffer extra).
	$(PY) -m pip install --quiet -c constraints.txt "setuptools>=70.1"
	$(PY) -m pip install --quiet --no-build-isolation -c constraints.txt -e ".[puffer]"
	touch $(STAMP)

install: $(STAMP)

train: $(STAMP)
	$(PY) -m training.train --config $(CONFIG)

test: $(STAMP) lint
	$(PY) -m pytest -n 2 -q

test-fast: $(STAMP)
	$(PY) -m pytest -n 2 -q -m "not slow"

bench: $(STAMP)
	$(VENV)/bin/keltis bench

demo: $(STAMP)
	$(VENV)/bin/keltis demo

# The picture of keltis serve in docs/ (docs/serve.png), taken in Debian's chromium by the
# browser tests' driver; the test run itself writes nothing into the repository.
screenshots: $(STAMP)
	$(PY) tests/test_serve_browser.py docs/serve.png

$(DSTAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(DVENV)
	$(DPY) -m pip install --upgrade --quiet pip
	$(DPY) -m pip install --quiet -c constraints.txt torch==2.13.0
	$(DPY) -m pip install --quiet -c constraints.txt -e ".[train,dev,distributed,clients,peers]"
	touch $(DSTAMP)

# RLlib (with its training smoke test in local mode), the other clients, the peers
# benchmark, and the environment conformance tests on that stack's gymnasium/PettingZoo.
DTESTS := tests/test_rllib_cluster.py tests/test_rllib.py tests/test_rllib_backend.py tests/test_rllib_batched.py tests/test_clients.py tests/test_conformance.py tests/test_env_keltis.py \
          tests/test_dice_env.py tests/test_learner.py tests/test_budget_rllib.py
test-distributed: $(DSTAMP)
	$(DPY) -m pytest -n 2 -q -p no:cacheprovider $(DTESTS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) $(DVENV) .pytest_cache .ruff_cache build *.egg-info
