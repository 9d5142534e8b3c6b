# An HTTP + WebSocket echo server the TLS edge tests upload into a sandbox and start there
# (the base rootfs has python3 but no WebSocket library, so: standard library only).
#   python3 ws_echo.py PORT [HOST]        (HOST default 0.0.0.0; an IPv6 literal binds IPv6)
# Requests:
#   GET /ws with "Upgrade: websocket"  101, then echoes text and binary messages, answers a
#                                      ping with a pong, and a close with a close.
#   OPTIONS /own-cors                  answers the preflight itself: 204, X-Cors-By: upstream and
#                                      Access-Control-Allow-Origin: https://own.example
#   GET /stream?n=N&ms=M&tag=T         200, chunked: N lines "tick <i>\n", one every M ms (a server
#                                      that sends as it goes, like SSE); prints "stream T aborted"
#                                      on stdout when the connection breaks before the end
#   anything else                      200 JSON {"method","path","headers","body"}: what arrived
#                                      (header names lower-cased), for checks of what the edge
#                                      forwards (a chunked request body is decoded).
# Every HTTP answer ends the connection; one thread per connection.
import base64
import hashlib
import json
import socket
import socketserver
import struct
import sys
import time
import urllib.parse

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_LINE = 65536


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline(MAX_LINE)
        parts = line.decode("latin-1").rstrip("\r\n").split(" ")
        if len(parts) != 3:
            return
        method, path, _version = parts
        headers = {}
        while True:
            raw = self.rfile.readline(MAX_LINE)
            if raw in (b"\r\n", b"\n", b""):
                break
            name, _, value = raw.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if path == "/ws" and headers.get("upgrade", "").lower() == "websocket":
            self.websocket(headers)
            return
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = self.read_chunked()
        else:
            length = int(headers.get("content-length") or 0)
            body = self.rfile.read(length) if length > 0 else b""
        if method == "GET" and path.startswith("/stream?"):
            self.stream(urllib.parse.parse_qs(path.split("?", 1)[1]))
            return
        if method == "OPTIONS" and path == "/own-cors":
            self.answer(204, b"", [("X-Cors-By", "upstream"), ("Access-Control-Allow-Origin", "https://own.example")])
            return
        out = {"method": method, "path": path, "headers": headers, "body": body.decode("utf-8", "replace")}
        self.answer(200, json.dumps(out).encode(), [("Content-Type", "application/json")])

    def read_chunked(self):
        body = b""
        while True:
            size = int(self.rfile.readline(MAX_LINE).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(MAX_LINE) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return body
            body += self.rfile.read(size)
            self.rfile.readline(MAX_LINE)  # the CRLF after each chunk

    def answer(self, status, body, extra):
        reason = {200: "OK", 204: "No Content"}[status]
        head = "HTTP/1.1 %d %s\r\n" % (status, reason)
        for name, value in extra:
            head += "%s: %s\r\n" % (name, value)
        if status != 204:
            head += "Content-Length: %d\r\n" % len(body)
        head += "Connection: close\r\n\r\n"
        self.wfile.write(head.encode("latin-1") + body)

    def stream(self, query):
        count = int(query.get("n", ["5"])[0])
        pause = int(query.get("ms", ["300"])[0]) / 1000.0
        tag = query.get("tag", ["-"])[0]
        try:
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
                             b"Connection: close\r\n\r\n")
            for i in range(count):
                if i:
                    time.sleep(pause)
                line = ("tick %d\n" % i).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            print("stream %s aborted" % tag, flush=True)

    def websocket(self, headers):
        key = headers.get("sec-websocket-key", "").encode("latin-1")
        accept = base64.b64encode(hashlib.sha1(key + GUID).digest()).decode()
        self.wfile.write(
            ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
             "Sec-WebSocket-Accept: %s\r\n\r\n" % accept).encode("latin-1"))
        while True:
            head = self.rfile.read(2)
            if len(head) < 2:
                return
            opcode = head[0] & 0x0F
            length = head[1] & 0x7F
            if length == 126:
                length = struct.unpack(">H", self.rfile.read(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
            data = self.rfile.read(length)
            if len(data) < length:
                return
            # Unmask a word at a time: a Python loop per byte is slow for large messages.
            pad = (-length) % 4
            words = int.from_bytes(data + b"\0" * pad, "big") ^ int.from_bytes(mask * ((length + pad) // 4), "big")
            payload = words.to_bytes(length + pad, "big")[:length]
            if opcode == 0x8:
                self.frame(0x8, payload[:2])
                return
            if opcode == 0x9:
                self.frame(0xA, payload)
            elif opcode in (0x1, 0x2):
                self.frame(opcode, payload)

    def frame(self, opcode, payload):
        n = len(payload)
        if n < 126:
            head = struct.pack(">BB", 0x80 | opcode, n)
        elif n < 65536:
            head = struct.pack(">BBH", 0x80 | opcode, 126, n)
        else:
            head = struct.pack(">BBQ", 0x80 | opcode, 127, n)
        self.wfile.write(head + payload)


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def main():
    port = int(sys.argv[1])
    host = sys.argv[2] if len(sys.argv) > 2 else "0.0.0.0"
    if ":" in host:
        Server.address_family = socket.AF_INET6
    server = Server((host, port), Handler)
    print("listening on %s port %d" % (host, port), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
