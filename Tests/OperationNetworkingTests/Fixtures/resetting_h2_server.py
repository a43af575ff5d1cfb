#!/usr/bin/python3
"""An HTTP/2 server (TLS, ALPN h2, 127.0.0.1) that resets chosen streams, for the tests of what a
client sends again after an RST_STREAM.

A request for `/reset/<code>/<count>/<name>` is reset with RST_STREAM(<code>) — `internal` for
INTERNAL_ERROR, `refused` for REFUSED_STREAM — the first <count> times its path arrives, and answered
afterwards; every other path is answered at once. Each request received (its headers and end of
stream) is logged, one line flushed before the server acts on it, to `log`:
`<connection number> <method> <path> <reset|answered>`. The answer is 200 with the body `ok`.

Usage: resetting_h2_server.py CONFIG.json, where the JSON names port, cert, key and log. Needs
Debian's python3-h2 (scripts/setup installs it).
"""
import asyncio
import json
import ssl
import sys

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions

CODES = {"internal": h2.errors.ErrorCodes.INTERNAL_ERROR, "refused": h2.errors.ErrorCodes.REFUSED_STREAM}


class Server:
    def __init__(self, config):
        self.log = open(config["log"], "a", encoding="utf-8")
        self.connections = 0
        self.seen = {}  # path -> times received

    def decide(self, connection, method, path):
        """The reset code for this arrival of `path`, or None to answer it; logged either way."""
        self.seen[path] = self.seen.get(path, 0) + 1
        code = None
        parts = path.split("/")
        if len(parts) >= 5 and parts[1] == "reset" and parts[2] in CODES and parts[3].isdigit():
            if self.seen[path] <= int(parts[3]):
                code = CODES[parts[2]]
        self.log.write(f"{connection} {method} {path} {'answered' if code is None else 'reset'}\n")
        self.log.flush()
        return code

    async def serve(self, reader, writer):
        self.connections += 1
        number = self.connections
        connection = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        connection.initiate_connection()
        writer.write(connection.data_to_send())
        requests = {}
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                for event in connection.receive_data(data):
                    if isinstance(event, h2.events.RequestReceived):
                        headers = dict(event.headers)
                        requests[event.stream_id] = (headers.get(":method", ""), headers.get(":path", ""))
                    elif isinstance(event, h2.events.DataReceived):
                        connection.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    elif isinstance(event, h2.events.StreamEnded):   # follows the headers of a GET too
                        method, path = requests.pop(event.stream_id, ("", ""))
                        code = self.decide(number, method, path)
                        if code is not None:
                            connection.reset_stream(event.stream_id, error_code=code)
                        else:
                            connection.send_headers(event.stream_id, [(":status", "200"), ("content-length", "2")])
                            connection.send_data(event.stream_id, b"ok", end_stream=True)
                writer.write(connection.data_to_send())
                await writer.drain()
        except (ConnectionError, ssl.SSLError, h2.exceptions.ProtocolError) as error:
            print(f"connection {number} ended: {error!r}", file=sys.stderr, flush=True)
        writer.close()


async def main(config):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config["cert"], config["key"])
    context.set_alpn_protocols(["h2"])
    server = Server(config)
    listener = await asyncio.start_server(server.serve, "127.0.0.1", config["port"], ssl=context, backlog=1024)
    async with listener:
        await listener.serve_forever()


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as file:
        asyncio.run(main(json.load(file)))
