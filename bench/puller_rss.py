"""Peak memory and throughput of llm-model-puller on a large file from a server on 127.0.0.1.

    .venv-puller/bin/python bench/puller_rss.py [--mib 200] [--mode url|hf|both] [--json bench/out/puller.json]

Serves a random file (default 200 MiB) from the test suite's FileServer (MODEL_URL path) and from its
FakeHub (HF_REPO path, the real huggingface_hub client), runs the puller as a subprocess for each, and
reads the child's own peak RSS from wait4(2). A second run with the same source (nothing to download)
gives the baseline of the interpreter and its imports. Server and puller share the machine's cores, so
the throughput is a lower bound of what the puller alone can do.

The server runs in its own (spawned) process: Linux carries the parent's peak RSS over to a child that
Python starts with vfork, so this process must never hold the file itself.
"""

import argparse
import hashlib
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "puller" / "tests"))
from puller_servers import FakeHub, FileServer, HubRepo  # noqa: E402 (path set just above)

MiB = 1 << 20


def run_puller(env: dict[str, str]) -> dict:
    """Run the puller; return its exit code, wall time and peak RSS (from the child's own rusage)."""
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-m", "llm_model_puller"],
        env={**os.environ, "PYTHONPATH": str(REPO / "puller" / "src"), **env},
        stdout=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return {
        "exit_code": child.returncode,
        "seconds": time.monotonic() - started,
        "peak_rss_mib": usage.ru_maxrss / 1024,  # KiB on Linux
    }


def measure(label: str, env: dict[str, str], size: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="puller-bench-") as dest:
        full = {"MODEL_DEST": dest, "HF_HOME": str(Path(dest).parent / f"{Path(dest).name}-hf"), **env}
        first = run_puller(full)
        again = run_puller(full)
    if first["exit_code"] != 0 or again["exit_code"] != 0:
        raise SystemExit(f"{label}: the puller failed (exit {first['exit_code']}, then {again['exit_code']})")
    result = {
        "mode": label,
        "size_mib": size / MiB,
        "seconds": round(first["seconds"], 2),
        "throughput_mib_s": round(size / MiB / first["seconds"], 1),
        "peak_rss_mib": round(first["peak_rss_mib"], 1),
        "baseline_rss_mib": round(again["peak_rss_mib"], 1),
    }
    print(
        f"{label:>4}: {result['size_mib']:.0f} MiB in {result['seconds']:.2f}s = {result['throughput_mib_s']} MiB/s; "
        f"peak RSS {result['peak_rss_mib']} MiB (idle run: {result['baseline_rss_mib']} MiB)",
        flush=True,
    )
    return result


def serve(mode: str, size: int, conn) -> None:
    """In a separate process: make the file, serve it, report (env, sha256), wait for the word to stop."""
    data = os.urandom(size)
    digest = hashlib.sha256(data).hexdigest()
    if mode == "url":
        server = FileServer({"/model.gguf": data})
        env = {"MODEL_URL": server.url + "/model.gguf", "MODEL_SHA256": digest}
    else:
        server = FakeHub({"bench/model": HubRepo({"config.json": b"{}", "model.safetensors": data})})
        env = {"HF_REPO": "bench/model", "HF_ENDPOINT": server.url}
    with server:
        conn.send(env)
        conn.recv()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=200, help="file size in MiB (default 200)")
    parser.add_argument("--mode", choices=("url", "hf", "both"), default="both")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    size = args.mib * MiB
    spawn = multiprocessing.get_context("spawn")
    results = []
    for mode in ("url", "hf") if args.mode == "both" else (args.mode,):
        ours, theirs = spawn.Pipe()
        server = spawn.Process(target=serve, args=(mode, size, theirs), daemon=True)
        server.start()
        try:
            results.append(measure(mode, ours.recv(), size))
        finally:
            ours.send("stop")
            server.join(timeout=10)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
