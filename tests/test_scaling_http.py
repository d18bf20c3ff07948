"""The launchers' blocking HTTP (aiohttp on a private loop) and their scrape of vLLM's gauges."""

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("aiohttp", reason="the serve extra (aiohttp) is not installed")
pytest.importorskip("prometheus_client", reason="the serve extra (prometheus-client) is not installed")

from slocore.scaling import blocking_http  # noqa: E402
from slocore.scaling.launcher import _requests_in_engine  # noqa: E402

PAGE = """# HELP vllm:num_requests_running r
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0"} 2.0
vllm:num_requests_running{engine="1"} 1.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0"} 4.0
# TYPE vllm:num_requests_waiting_by_reason gauge
vllm:num_requests_waiting_by_reason{reason="capacity"} 100.0
"""


def test_requests_in_engine_sums_running_and_waiting_only():
    assert _requests_in_engine(PAGE) == 7
    assert _requests_in_engine("# TYPE other gauge\nother 3\n") is None
    with pytest.raises(ValueError):
        _requests_in_engine("vllm:num_requests_running{engine= 2\n")


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_GET(self):
        self.send_response(404 if self.path == "/missing" else 200)
        self.end_headers()
        self.wfile.write(b"nope" if self.path == "/missing" else b"hello")

    def do_POST(self):
        n = int(self.headers["Content-Length"])
        body = self.rfile.read(n)
        self.send_response(201)
        self.end_headers()
        self.wfile.write(self.headers["Authorization"].encode() + b" " + body)


def test_request_returns_any_status_and_raises_oserror_on_transport_failure():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    try:
        assert blocking_http.request("GET", url + "/x") == (200, b"hello")
        assert blocking_http.request("GET", url + "/missing") == (404, b"nope")
        code, raw = blocking_http.request("POST", url + "/y", json={"a": 1}, headers={"Authorization": "Bearer t"})
        assert code == 201 and raw == b'Bearer t {"a": 1}'
    finally:
        srv.shutdown()
        srv.server_close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    with pytest.raises(OSError):
        blocking_http.request("GET", f"http://127.0.0.1:{free}/", timeout=2)
