# Tiny static HTTP server for run.sh: the "outside" host and the host canary.
#   python3 httpd.py DIR HOST PORT PORTFILE
# Serves DIR on HOST:PORT (PORT 0: any free port), then writes the bound port to PORTFILE
# (atomically). Unlike `python3 -m http.server` it does no reverse DNS lookup of HOST on bind,
# which stalls for seconds in a network namespace without a resolver.
import functools
import http.server
import os
import socketserver
import sys


class Server(http.server.ThreadingHTTPServer):
    def server_bind(self):
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))


def main():
    directory, host, port, portfile = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    server = Server((host, port), functools.partial(Quiet, directory=directory))
    with open(portfile + ".tmp", "w") as f:
        f.write(str(server.server_port))
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()


if __name__ == "__main__":
    main()
