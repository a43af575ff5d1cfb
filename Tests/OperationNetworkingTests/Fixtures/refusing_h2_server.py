#!/usr/bin/python3
"""A deliberately hostile HTTP/2 server for the tests of requests a server never processed.

It speaks HTTP/2 over TLS (ALPN h2) on 127.0.0.1 and, on its connections in turn:

- processes only the first `streams_per_connection` streams a client opens, then sends GOAWAY whose
  last-stream-id is the last of them: every later stream is refused (never processed, never answered),
  and the connection closes (lingering) once the processed streams are answered;
- refuses every `refuse_every`-th stream with RST_STREAM(REFUSED_STREAM) instead of processing it.

The two take turns by connection rather than meet on one: when a stream reset by its server is the
last one left on a connection a GOAWAY ended, libcurl 7.88 reports it as a bare "partial file", the
same as a stream reset after it was processed, so a client cannot know that one was never processed.

A processed request is logged (one line, flushed before its response is sent) to `log`:
`<method> <path> <body in hex>`. A GET is answered with `body_for(path)`, any other method with the
request's body, so a client can check every byte.

Usage: refusing_h2_server.py CONFIG.json, where the JSON names port, cert, key, log,
streams_per_connection and refuse_every. Needs Debian's python3-h2 (scripts/setup installs it).
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
from hyperframe.frame import GoAwayFrame


def body_for(path):
    """The bytes a GET of `path` answers with: 1,000 to 3,999 bytes derived from the path (the tests
    derive them the same way)."""
    seed = sum(path.encode())
    length = 1000 + seed * 37 % 3000
    return bytes((index * 31 + seed) % 251 for index in range(length))


class Connection:
    """One client connection and what this server decided about each of its streams."""

    def __init__(self, reader, writer, config, log):
        self.reader = reader
        self.writer = writer
        self.limit = config["streams_per_connection"]
        self.refuse_every = config["refuse_every"]
        self.log = log
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.ends_with_goaway = config["connections"] % 2 == 1  # else it refuses some streams
        self.seen = 0               # streams the client opened, in order
        self.last_stream_id = None  # set once GOAWAY went out
        self.requests = {}          # stream id -> [method, path, body] of streams being processed
        self.pending = {}           # stream id -> response bytes not yet sent (flow control)

    async def run(self):
        self.h2.initiate_connection()
        self.flush()
        while True:
            data = await self.reader.read(65536)
            if not data:
                break
            for event in self.h2.receive_data(data):
                self.handle(event)
            self.flush()
            if self.last_stream_id is not None and not self.requests and not self.pending:
                break
        await self.linger()
        await self.close()

    async def linger(self):
        """Reads (and drops) what the client still sends until it closes, for at most 5 s, as nginx's
        lingering close does: a connection closed at once would make the client's system answer its
        last writes with a reset, and the client lose the GOAWAY unread."""
        try:
            while await asyncio.wait_for(self.reader.read(65536), 5):
                pass
        except (asyncio.TimeoutError, ConnectionError, ssl.SSLError):
            pass

    def handle(self, event):
        if isinstance(event, h2.events.RequestReceived):
            self.opened(event)
        elif isinstance(event, h2.events.DataReceived):
            self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            if event.stream_id in self.requests:
                self.requests[event.stream_id][2] += event.data
        elif isinstance(event, h2.events.StreamEnded):
            if event.stream_id in self.requests:
                self.respond(event.stream_id)
        elif isinstance(event, h2.events.WindowUpdated):
            for stream_id in list(self.pending):
                self.send_pending(stream_id)
        elif isinstance(event, h2.events.StreamReset):
            self.requests.pop(event.stream_id, None)
            self.pending.pop(event.stream_id, None)

    def opened(self, event):
        self.seen += 1
        if self.last_stream_id is not None:
            return  # above GOAWAY's last-stream-id: refused, never processed
        if self.ends_with_goaway and self.seen == self.limit:
            # Hand-made GOAWAY: h2's own close_connection() would stop the connection from answering
            # the streams at or below the last-stream-id.
            self.last_stream_id = event.stream_id
            frame = GoAwayFrame(0)
            frame.last_stream_id = event.stream_id
            frame.error_code = 0
            self.flush()
            self.writer.write(frame.serialize())
        if not self.ends_with_goaway and self.refuse_every and self.seen % self.refuse_every == 0:
            self.h2.reset_stream(event.stream_id, error_code=h2.errors.ErrorCodes.REFUSED_STREAM)
            return
        headers = dict(event.headers)
        self.requests[event.stream_id] = [headers.get(":method", ""), headers.get(":path", ""), b""]
        if event.stream_ended:
            self.respond(event.stream_id)

    def respond(self, stream_id):
        method, path, body = self.requests.pop(stream_id)
        self.log.write(f"{method} {path} {body.hex()}\n")
        self.log.flush()
        content = body_for(path) if method == "GET" else body
        self.h2.send_headers(stream_id, [(":status", "200"), ("content-length", str(len(content))),
                                         ("content-type", "application/octet-stream")])
        self.pending[stream_id] = content
        self.send_pending(stream_id)

    def send_pending(self, stream_id):
        content = self.pending[stream_id]
        while content:
            window = min(self.h2.local_flow_control_window(stream_id), self.h2.max_outbound_frame_size)
            if window <= 0:
                break
            self.h2.send_data(stream_id, content[:window])
            content = content[window:]
        if content:
            self.pending[stream_id] = content
        else:
            del self.pending[stream_id]
            self.h2.end_stream(stream_id)

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            self.writer.write(data)

    async def close(self):
        self.flush()
        try:
            await self.writer.drain()
            self.writer.close()
            await self.writer.wait_closed()
        except (ConnectionError, ssl.SSLError):
            pass


async def main(config):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(config["cert"], config["key"])
    context.set_alpn_protocols(["h2"])
    log = open(config["log"], "a", encoding="utf-8")

    async def serve(reader, writer):
        config["connections"] = config.get("connections", 0) + 1
        try:
            await Connection(reader, writer, config, log).run()
        except (ConnectionError, ssl.SSLError, h2.exceptions.ProtocolError) as error:
            print(f"connection ended: {error!r}", file=sys.stderr, flush=True)
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", config["port"], ssl=context, backlog=1024)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as file:
        asyncio.run(main(json.load(file)))
