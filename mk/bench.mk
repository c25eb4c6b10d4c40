##@ Benchmark (mk/bench.mk)
#
# bench    how fast and how light the operator is (bench/bench.py, its parts in bench/llmbench/):
#          1 model and 100 models up, no-op reconciles, idle, restart, a mixed steady state (10 % of
#          the specs changing a minute), 100 models and 1 model deleted; restarts the local cluster
#          with 5 s simulated pulls, runs the real ansible-operator, prints one table (each row with
#          its target, the Go peer's figures as reference) and writes it with all details to
#          bench/out/; refuses to start while ansible processes run. Not part of `make test`.
#
# Knobs:   OPERATOR_ARGS=...   the operator's flags, as for operator-start (e.g. another
#                              --max-concurrent-reconciles); the bench adds rfc3339nano log times
#          BENCH_ARGS=...      options of bench/bench.py, e.g. --label try-x, --env ANSIBLE_X=...,
#                              --models 20, --skip mixed,idle, --steady-minutes 1,
#                              --wait-free 2400 (wait for other tests/operators to end)
# Results and the changes tried: bench/RESULTS.md.

VENV ?= .venv
BENCH_OPERATOR_ARGS ?= $(OPERATOR_ARGS) --zap-time-encoding=rfc3339nano
BENCH_ARGS ?=

.PHONY: bench
bench: venv tools ## Benchmark the operator: models up, steady, down, on a fresh local cluster (table in bench/out/; not in make test).
	$(VENV)/bin/python bench/bench.py --operator-args '$(BENCH_OPERATOR_ARGS)' $(BENCH_ARGS)
