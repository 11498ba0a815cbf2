"""A local stand-in for Dagster's GraphQL endpoint, for unit tests of what talks to it: the
HTTP edge is real, the answers are the test's."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class GraphQLStandIn(BaseHTTPRequestHandler):
    """Subclasses answer in ``do_POST`` with :meth:`answer`; requests are not logged."""

    def query_text(self) -> str:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()

    def answer(self, data: dict[str, Any]) -> None:
        payload = json.dumps({"data": data}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        return


@contextmanager
def serving(handler: type[GraphQLStandIn]) -> Iterator[int]:
    """Serve ``handler`` on a free port of 127.0.0.1 until the block ends; yields the port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
