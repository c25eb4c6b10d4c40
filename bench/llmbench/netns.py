"""A second operator on the same machine, in a network namespace of its own.

ansible-operator v1.42.2 writes the kubeconfig of every run with its proxy at http://localhost:8888
(internal/ansible/controller/reconcile.go), whatever --proxy-port says, so two operators cannot share
one network namespace: the second one's runs would talk to the first one's proxy. In Kubernetes each
shard is a pod with its own network namespace; locally, bench/shards.py starts the second shard with
`unshare --net`, where localhost is its own. The local API server listens on 127.0.0.1 of the
machine only, so a byte-for-byte bridge carries its port into the namespace through a Unix socket
(Unix sockets are files: they cross network namespaces):

    TCP 127.0.0.1:PORT in the namespace  ->  Unix socket  ->  TCP 127.0.0.1:PORT of the machine

TLS passes through untouched; the kubeconfig stays as it is.

    python -m llmbench.netns outside SOCKET PORT      (machine side; runs until killed)
    python -m llmbench.netns inside SOCKET PORT       (namespace side; runs until killed)
"""

from __future__ import annotations

import asyncio
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            writer.close()
        except OSError:
            pass


async def serve(side: str, socket_path: str, port: int) -> None:
    async def bridge(reader, writer):
        try:
            if side == "outside":
                upstream = await asyncio.open_connection("127.0.0.1", port)
            else:
                upstream = await asyncio.open_unix_connection(socket_path)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, upstream[1]), pipe(upstream[0], writer))

    if side == "outside":
        server = await asyncio.start_unix_server(bridge, path=socket_path)
    else:
        server = await asyncio.start_server(bridge, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def main() -> int:
    side, socket_path, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if side not in ("outside", "inside"):
        print(__doc__, file=sys.stderr)
        return 2
    asyncio.run(serve(side, socket_path, port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
