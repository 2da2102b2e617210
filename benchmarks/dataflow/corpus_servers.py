"""Servers with a network's pace for labelling the corpus's network functions (run as its own process).

Loopback moves data at memory speed, which no network does; these servers pace what they send and
receive at ``RATE`` bytes per second after ``LATENCY`` seconds, as a link between two machines would:
HTTP (GET /bytes/N, POST sinks its body), XML-RPC (echo), a TCP echo server and a minimal SMTP server.
Writes the ports as JSON to the file named on the command line, then serves until killed.
"""

from __future__ import annotations

import json
import socket
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from xmlrpc.server import SimpleXMLRPCRequestHandler, SimpleXMLRPCServer

RATE = 25e6
LATENCY = 0.002
CHUNK = 65536


def _paced_send(write, total: int) -> None:
    sent = 0
    block = b"x" * CHUNK
    start = time.perf_counter()
    while sent < total:
        n = min(CHUNK, total - sent)
        write(block[:n])
        sent += n
        ahead = sent / RATE - (time.perf_counter() - start)
        if ahead > 0:
            time.sleep(ahead)


class PacedHTTP(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        time.sleep(LATENCY)
        size = int(self.path.rsplit("/", 1)[-1]) if self.path.startswith("/bytes/") else 1024
        self.send_response(200)
        self.send_header("Content-Length", str(size))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        _paced_send(self.wfile.write, size)

    def do_POST(self) -> None:  # noqa: N802
        time.sleep(LATENCY)
        left = int(self.headers.get("Content-Length", "0"))
        start = time.perf_counter()
        got = 0
        while left > 0:
            data = self.rfile.read(min(CHUNK, left))
            if not data:
                break
            left -= len(data)
            got += len(data)
            ahead = got / RATE - (time.perf_counter() - start)
            if ahead > 0:
                time.sleep(ahead)
        body = json.dumps({"received": got}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class PacedXMLRPC(SimpleXMLRPCRequestHandler):
    def log_message(self, *args) -> None:
        pass


class Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while True:
            data = self.request.recv(CHUNK)
            if not data:
                return
            time.sleep(len(data) / RATE)
            self.request.sendall(data)


class SMTP(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        self.wfile.write(b"220 corpus ESMTP\r\n")
        while True:
            line = self.rfile.readline()
            if not line:
                return
            verb = line[:4].upper()
            time.sleep(LATENCY)
            if verb in (b"EHLO", b"HELO"):
                self.wfile.write(b"250-corpus\r\n250 SIZE 100000000\r\n")
            elif verb == b"DATA":
                self.wfile.write(b"354 go on\r\n")
                start, got = time.perf_counter(), 0
                while True:
                    data = self.rfile.readline()
                    got += len(data)
                    ahead = got / RATE - (time.perf_counter() - start)
                    if ahead > 0:
                        time.sleep(ahead)
                    if data in (b".\r\n", b""):
                        break
                self.wfile.write(b"250 queued\r\n")
            elif verb == b"QUIT":
                self.wfile.write(b"221 bye\r\n")
                return
            else:
                self.wfile.write(b"250 ok\r\n")


class _Threaded(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main() -> None:
    """Start every server, write their ports, serve."""
    http = ThreadingHTTPServer(("127.0.0.1", 0), PacedHTTP)
    rpc = SimpleXMLRPCServer(("127.0.0.1", 0), requestHandler=PacedXMLRPC, logRequests=False, allow_none=True)

    def echo(value):
        time.sleep(LATENCY + len(repr(value)) / RATE)
        return value

    rpc.register_function(echo, "echo")
    echo_server = _Threaded(("127.0.0.1", 0), Echo)
    smtp = _Threaded(("127.0.0.1", 0), SMTP)
    servers = {"http": http, "xmlrpc": rpc, "echo": echo_server, "smtp": smtp}
    for server in servers.values():
        threading.Thread(target=server.serve_forever, daemon=True).start()
    ports = {name: server.server_address[1] for name, server in servers.items()}
    with open(sys.argv[1] + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(ports, fh)
    import os

    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    socket.setdefaulttimeout(30)
    main()
