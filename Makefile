# Two commands matter: `make run` and `make test` (see README.md).
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000

.PHONY: run test test-postgres lint format migrate bench clean

# Finds the newest Python >= 3.12 that actually runs: $PYTHON if given, then python3.14/
# 3.13/3.12 on PATH, then pyenv's versions folder (its shims only run with PYENV_VERSION).
define FIND_PYTHON
ok() { "$$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }; \
if [ -n "$$PYTHON" ]; then \
  if ok "$$PYTHON"; then echo "$$PYTHON"; exit 0; fi; \
  echo "PYTHON=$$PYTHON is not a working Python >= 3.12" >&2; exit 1; \
fi; \
for c in python3.14 python3.13 python3.12 python3; do \
  p=$$(command -v $$c 2>/dev/null) && ok "$$p" && { echo "$$p"; exit 0; }; \
done; \
root=$$(pyenv root 2>/dev/null || echo "$$HOME/.pyenv"); \
for p in $$(ls -d "$$root"/versions/3.*/bin/python3 2>/dev/null | sort -V -r); do \
  ok "$$p" && { echo "$$p"; exit 0; }; \
done; \
echo "No Python >= 3.12 found. Install one (Debian 12 packages none: pyenv install 3.13, or uv python install 3.13) or set PYTHON=/path/to/python3.12" >&2; exit 1
endef
export FIND_PYTHON

$(PY):
	@py=$$(bash -c "$$FIND_PYTHON") && echo "Using $$py ($$($$py --version))" && "$$py" -m venv $(VENV)
	@$(PY) -m pip install --quiet --upgrade pip

# Stamp files: re-running when pyproject.toml has not changed installs nothing.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	@touch $@

$(VENV)/.installed-dev: pyproject.toml $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

$(VENV)/.installed-postgres: pyproject.toml $(VENV)/.installed-dev
	$(PY) -m pip install --quiet -e '.[dev,postgres]'
	@touch $@

migrate: $(VENV)/.installed
	$(PY) manage.py migrate --noinput

run: migrate
	$(PY) manage.py ensure_superuser
	PORT=$(PORT) $(PY) manage.py serve

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Test processes (pytest-xdist): most tests wait on a job, a browser or a server, so two share
# 2 cores well; each test file stays in one process (--dist loadfile). TEST_PROCESSES=0 runs
# everything in this process (as `pytest` does alone). Tests marked `alone` (they hold the
# jobs' parent cgroup, which every process's jobs share, to a few hundred MiB, or time CPU
# shares) run after the rest, by themselves. Exit code 5 is pytest's "no test selected": a
# PYTEST_ARGS naming only files of one kind leaves the other run empty.
TEST_PROCESSES ?= 2
XDIST := -n $(TEST_PROCESSES) --dist loadfile

# --durations: the slowest tests are listed at the end, so a CI log shows where its time went.
test: lint
	$(PY) manage.py makemigrations --check --dry-run
	@# Exit code 5 (no test selected) is no failure of either run, as PYTEST_ARGS may pick
	@# tests of one kind only; of both, it is: PYTEST_ARGS matched no test (a -k or -m).
	$(VENV)/bin/pytest $(XDIST) -m "not alone" --durations=30 $(PYTEST_ARGS); \
	  rest=$$?; [ $$rest -eq 0 ] || [ $$rest -eq 5 ] || exit $$rest; \
	  $(VENV)/bin/pytest -m alone --durations=10 $(PYTEST_ARGS); \
	  alone=$$?; [ $$alone -eq 0 ] || [ $$alone -eq 5 ] || exit $$alone; \
	  if [ $$rest -eq 5 ] && [ $$alone -eq 5 ]; then \
	    echo "make test: PYTEST_ARGS='$(PYTEST_ARGS)' selected no test" >&2; exit 5; fi

# The tests that lean on the database (window functions, JSON lookups, date and duration
# arithmetic, row locks, LIKE) against PostgreSQL at $DATABASE_URL; `make test` runs on SQLite.
# The role needs CREATEDB: pytest-django creates and drops test_<database> beside it.
POSTGRES_TESTS := tests/test_pools.py tests/test_usage_report.py tests/test_usage_cards.py tests/test_quotas.py \
	tests/test_api.py tests/test_api_v2.py tests/test_job_pages.py tests/test_job_bulk.py \
	tests/test_wizard.py tests/test_wizard_rules.py tests/test_admin.py tests/test_models.py \
	tests/test_review.py tests/test_upgrade.py tests/test_my_usage.py tests/test_workers.py tests/test_worker_remote_thread.py \
	tests/test_lost_jobs.py tests/test_network_check.py tests/test_sessions.py \
	tests/test_concurrent_limits.py tests/test_api_keys.py tests/test_alerts.py \
	tests/test_worker_refusal.py tests/test_scale.py tests/test_job_labels.py \
	tests/test_last_cards.py tests/test_next_pass_agrees.py tests/test_standalone_first.py \
	tests/test_api_standalone.py tests/test_pool_held_for_waiting_job.py tests/test_hostile_users.py \
	tests/test_admin_owner_filter.py tests/test_usage_csv_bad_input.py tests/test_job_card_hours.py \
	tests/test_markers.py

test-postgres: $(VENV)/.installed-postgres
	@case "$$DATABASE_URL" in postgres://*|postgresql://*|pgsql://*) ;; \
	  *) echo "test-postgres: set DATABASE_URL=postgres://user:pass@127.0.0.1/db (README: PostgreSQL)" >&2; exit 1;; esac
	$(VENV)/bin/pytest $(XDIST) $(POSTGRES_TESTS) $(PYTEST_ARGS)

bench: $(VENV)/.installed-dev
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) var
