"""A TCP forwarder on a loopback port: the server behind it is "down" until it runs.

Tests point a target at the forwarder's port to stage an outage and a recovery with a real
server: nothing listens there before `forward()` starts and after it ends.

    port = free_port()
    url = f"postgresql://user@127.0.0.1:{port}/db"      # down: connection refused
    with forward(port, pg.host, pg.port):              # up: bytes flow to the real server
        ...
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

HOST = "127.0.0.1"
_CHUNK = 1 << 16


@contextmanager
def forward(port: int, to_host: str, to_port: int) -> Iterator[None]:
    """Accept on `port` and pipe every connection to `to_host:to_port` until the block ends.

    On exit it stops listening and cuts the connections it carried, as a failing server would.
    """
    listener = socket.create_server((HOST, port))
    open_sockets: list[socket.socket] = [listener]
    lock = threading.Lock()

    def pipe(source: socket.socket, sink: socket.socket) -> None:
        with suppress(OSError):
            while data := source.recv(_CHUNK):
                sink.sendall(data)
        with suppress(OSError):
            sink.shutdown(socket.SHUT_WR)

    def accept() -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # the listener was closed
            server = socket.create_connection((to_host, to_port))
            with lock:
                open_sockets.extend((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=pipe, args=(source, sink), daemon=True).start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield
    finally:
        with lock:
            for sock in open_sockets:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        acceptor.join(timeout=5)
