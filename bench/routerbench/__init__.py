"""`make bench-router`: the router against the same load sent directly and through nginx.

procs.py starts and measures the processes (fake server, router, nginx); load.py drives them (wrk
for request rates and latency, an asyncio client for streams, held requests); report.py prints.
"""
