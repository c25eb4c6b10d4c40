"""Prometheus metrics per model, kept as plain counters and rendered in the text format on demand.

Labels carry only the names of models the router serves (`<namespace>/<name>`) or "" for a request
that named none of them: never a string a client chose, so no client can grow the series.
A hand-written registry because an update here is a dict increment on the request's path.
"""

import bisect
import collections
import re

# The numbers of an OpenAI `usage` object: what follows `"usage":` up to its first `}` (nested
# *_details objects come after these fields in every server's output we know; llama.cpp, vLLM, OpenAI).
USAGE = re.compile(rb'"usage"\s*:\s*\{[^}]*')
USAGE_FIELD = re.compile(rb'"(prompt|completion)_tokens"\s*:\s*(\d+)')
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class Histogram:
    __slots__ = ("counts", "total", "count")

    def __init__(self):
        self.counts = [0] * (len(BUCKETS) + 1)
        self.total = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(BUCKETS, value)] += 1
        self.total += value
        self.count += 1


class Metrics:
    def __init__(self):
        self.requests = collections.Counter()  # (model, code)
        self.in_flight = collections.Counter()  # model
        self.waiting = collections.Counter()  # model
        self.rejected = collections.Counter()  # model: queue full
        self.retries = collections.Counter()  # model
        self.upstream_errors = collections.Counter()  # (model, kind)
        self.upstream_latency = collections.defaultdict(Histogram)  # model: until response headers
        self.wait_latency = collections.defaultdict(Histogram)  # model: in the queue
        self.first_byte_latency = collections.defaultdict(Histogram)  # model: until the first body byte
        self.duration = collections.defaultdict(Histogram)  # model: until the response's end
        self.tokens = collections.Counter()  # (model, kind): prompt or completion, as the server reported

    def request_done(self, model: str, code: int) -> None:
        self.requests[(model, code)] += 1

    def queued(self, model: str, delta: int) -> None:
        self.waiting[model] += delta

    def queue_rejected(self, model: str) -> None:
        self.rejected[model] += 1

    def queue_wait(self, model: str, seconds: float) -> None:
        self.wait_latency[model].observe(seconds)

    def usage(self, model: str, tail: bytes) -> None:
        """Counts the tokens of the last `usage` object in the end of an answer (a JSON body, or a
        stream's last chunks with `stream_options.include_usage`); nothing when there is none."""
        start = tail.rfind(b'"usage"')
        if start < 0:
            return
        found = USAGE.match(tail, start)
        if found is None:  # "usage": null, as vLLM writes it in every chunk but the last
            return
        tokens = self.tokens
        for kind, count in USAGE_FIELD.findall(found.group()):
            tokens[(model, kind.decode())] += int(count)

    def render(self) -> bytes:
        lines = []

        def family(name, kind, text):
            lines.append(f"# HELP llm_router_{name} {text}")
            lines.append(f"# TYPE llm_router_{name} {kind}")

        for name, kind, text, labels, values in (
            (
                "requests_total",
                "counter",
                "Requests answered, by model and HTTP status.",
                ("model", "code"),
                self.requests,
            ),
            (
                "in_flight_requests",
                "gauge",
                "Requests forwarded to a model's server and not yet answered.",
                ("model",),
                self.in_flight,
            ),
            ("queue_waiting_requests", "gauge", "Requests waiting for a replica with room.", ("model",), self.waiting),
            (
                "queue_rejected_total",
                "counter",
                "Requests refused with 429 because the model's queue was full.",
                ("model",),
                self.rejected,
            ),
            (
                "retries_total",
                "counter",
                "Requests retried on another replica after failing before any byte.",
                ("model",),
                self.retries,
            ),
            (
                "upstream_errors_total",
                "counter",
                "Failures talking to a model's server, by kind.",
                ("model", "kind"),
                self.upstream_errors,
            ),
            (
                "tokens_total",
                "counter",
                "Tokens the model's server reported in its answers' usage, by kind (prompt, completion).",
                ("model", "kind"),
                self.tokens,
            ),
        ):
            family(name, kind, text)
            for key, value in sorted(values.items()):
                key = key if isinstance(key, tuple) else (key,)
                pairs = ",".join(f'{label}="{part}"' for label, part in zip(labels, key, strict=True))
                lines.append(f"llm_router_{name}{{{pairs}}} {value}")
        for name, text, table in (
            (
                "upstream_latency_seconds",
                "Time until the model's server sent its response headers.",
                self.upstream_latency,
            ),
            ("queue_wait_seconds", "Time a request waited for a replica with room.", self.wait_latency),
            (
                "upstream_first_byte_seconds",
                "Time until the first body byte from the model's server (a stream's first token).",
                self.first_byte_latency,
            ),
            (
                "upstream_duration_seconds",
                "Time until the model's server ended its answer.",
                self.duration,
            ),
        ):
            family(name, "histogram", text)
            for model, histogram in sorted(table.items()):
                cumulative = 0
                for bound, count in zip(BUCKETS + (float("inf"),), histogram.counts, strict=True):
                    cumulative += count
                    le = "+Inf" if bound == float("inf") else repr(bound)
                    lines.append(f'llm_router_{name}_bucket{{model="{model}",le="{le}"}} {cumulative}')
                lines.append(f'llm_router_{name}_sum{{model="{model}"}} {histogram.total}')
                lines.append(f'llm_router_{name}_count{{model="{model}"}} {histogram.count}')
        return ("\n".join(lines) + "\n").encode()
