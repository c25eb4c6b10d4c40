"""One bench run's state: options, the operator and its samplers, the model watch, the result rows."""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import sys

from .common import OPERATOR_LOG, OUT, PULL_SECONDS, ROOT, RUN_LABEL, RUNNER_ROOT, kubectl, log, run
from .control import Guard, Operator, cluster, operator_identity
from .models import ModelWatcher
from .parsing import OperatorLog
from .report import table
from .sampling import Sampler


class Bench:
    def __init__(self, opts: argparse.Namespace):
        self.opts = opts
        self.run_id = dt.datetime.now(dt.UTC).strftime("%H%M%S")
        self.rows: list[tuple[str, str, str, str]] = []
        self.details: dict = {"run_id": self.run_id, "options": vars(opts)}
        self.oplog = OperatorLog(OPERATOR_LOG)

    def row(self, metric: str, value: str, target: str = "", ok: bool | None = None) -> None:
        self.rows.append((metric, value, target, "info" if ok is None else ("PASS" if ok else "FAIL")))

    def namespaces(self) -> list[str]:
        return [f"bench-{self.run_id}-{i:02d}" for i in range(self.opts.namespaces)]

    def setup(self) -> None:
        OUT.mkdir(parents=True, exist_ok=True)
        # Runner directories of earlier bench runs only (others' runs stay).
        for old in RUNNER_ROOT.glob("bench-*") if RUNNER_ROOT.exists() else []:
            run(["rm", "-rf", str(old)], check=False)
        if OPERATOR_LOG.exists():
            OPERATOR_LOG.rename(OUT / "operator.previous.log")
        if not self.opts.reuse_cluster:
            log(f"restarting the local cluster with LLM_TESTBED_JOB_SECONDS={PULL_SECONDS}")
            cluster("down")
            cluster("up", job_seconds=PULL_SECONDS)
        if self.opts.prometheus_operator_crds:
            crds = run([sys.executable, str(ROOT / "hack" / "prometheus_operator_crds.py")]).stdout.strip()
            log(f"installing the Prometheus Operator's CRDs from {crds}")
            kubectl("apply", "--server-side", "-f", crds)
            kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", crds)
        self.guard = Guard()
        self.guard.start()
        kubeconfig = operator_identity()
        # As the operator's Deployment runs it (config/manager/manager.yaml): the optional kinds'
        # discovery remembered in a directory of its own, new like a new pod's /tmp (--env overrides).
        env = {"LLMMODEL_DISCOVERY_CACHE": str(OUT / "discovery")}
        shutil.rmtree(OUT / "discovery", ignore_errors=True)
        env.update(dict(e.split("=", 1) for e in self.opts.env))
        self.operator = Operator(self.opts.operator_args, kubeconfig, env)
        log(f"starting the operator: {' '.join(self.opts.env)} ansible-operator run {self.opts.operator_args}")
        self.root = self.operator.start()
        self.guard.expected_pid = self.root
        self.sampler = Sampler(self.root)
        self.sampler.start()
        self.watcher = ModelWatcher(f"{RUN_LABEL}={self.run_id}")
        self.watcher.start()
        self.details["operator"] = {"args": self.opts.operator_args, "pid": self.root}

    def stop(self) -> None:
        """Stop the samplers and the operator this run started."""
        for thread in ("guard", "sampler", "watcher"):
            if hasattr(self, thread):
                getattr(self, thread).stopped.set()
        if hasattr(self, "operator"):
            self.operator.stop()

    def table(self) -> str:
        return table(self.rows)
