##@ Benchmark (mk/bench.mk)
#
# bench    how fast and how light the operator is at 1 and at 100 models (bench/bench.py): restarts
#          the local cluster with 5 s simulated pulls, runs the real ansible-operator, prints one
#          table and writes it with all details to bench/out/; stops the operator and brings the
#          cluster back up with its default job time at the end. Not part of `make test`.
#
# Knobs:   OPERATOR_ARGS=...   the operator's flags, as for operator-start (e.g. another
#                              --max-concurrent-reconciles); the bench adds rfc3339nano log times
#          BENCH_ARGS=...      options of bench/bench.py, e.g. --label try-x, --env ANSIBLE_X=...,
#                              --models 20, --wait-free 2400 (wait for other tests/operators to end)
# Results and the changes tried: bench/RESULTS.md.

VENV ?= .venv
BENCH_OPERATOR_ARGS ?= $(OPERATOR_ARGS) --zap-time-encoding=rfc3339nano
BENCH_ARGS ?=

.PHONY: bench
bench: venv tools ## Benchmark the operator at 1 and 100 models on a fresh local cluster (table in bench/out/; not in make test).
	$(VENV)/bin/python bench/bench.py --operator-args '$(BENCH_OPERATOR_ARGS)' $(BENCH_ARGS)
