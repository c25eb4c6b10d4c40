"""A plain HTTP file server on 127.0.0.1 for the image tests, in a thread, stopped on exit."""

from __future__ import annotations

import functools
import http.server
import pathlib
import subprocess
import threading
import time
import urllib.request


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class FileServer:
    def __init__(self, directory: pathlib.Path):
        handler = functools.partial(QuietHandler, directory=str(directory))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{name}"

    def __enter__(self) -> "FileServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def wait_for_http(url: str, process: subprocess.Popen, log: pathlib.Path, timeout: float, interval: float = 1) -> None:
    """Until `url` answers 200, as long as the container's `process` runs; fails with its log's end."""
    deadline = time.monotonic() + timeout
    while True:
        assert process.poll() is None, f"the container exited: {log.read_text()[-3000:]}"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass  # not listening yet, or not ready (503 while loading)
        assert time.monotonic() < deadline, f"{url} did not answer in {timeout}s: {log.read_text()[-3000:]}"
        time.sleep(interval)
