"""Outages of network targets for the conformance suite: a TCP forwarder on a loopback port.

The server is "down" while nothing listens on the port the target's URL names, and "up" while
`forward` pipes that port to the real server; leaving `forward` cuts the connections it
carried, as a failing server would:

    @pytest.fixture
    def outage(self, target_url):
        yield tcp_outage(target_url, "127.0.0.1", 5432)   # the server target_url names
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from synclog_testing.outage import Outage

HOST = "127.0.0.1"
_CHUNK = 1 << 16


def free_port(host: str = HOST) -> int:
    """A port nothing listens on right now (another process may still take it: retry on a clash)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def tcp_outage(url: str, host: str, port: int) -> Outage:
    """The server at `host:port`, which `url` names, behind a loopback port nothing listens on
    until `up` forwards it there; leaving `up` cuts the connections (`goes_down_again`)."""
    local = free_port()
    down = url.replace(f"{host}:{port}", f"{HOST}:{local}", 1)
    if down == url:
        raise ValueError(f"the URL does not name {host}:{port}")
    return Outage(down, lambda: forward(local, host, port), goes_down_again=True)


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
