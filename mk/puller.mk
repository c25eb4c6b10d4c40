# The model puller (puller/): its tests and its benchmark. Included by the main Makefile.

VENV ?= .venv

##@ Model puller
.PHONY: puller-test bench-puller
puller-test: venv ## pytest of the model puller (real HTTP servers on 127.0.0.1, no internet).
	$(VENV)/bin/python -m pytest -q puller/tests

bench-puller: venv ## Peak RSS and throughput of the puller on a 200 MiB file from a local server.
	$(VENV)/bin/python bench/puller_rss.py --json bench/out/puller_rss.json
