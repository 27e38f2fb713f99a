"""FindCoordinator v6 as `harness.kafka.wire` speaks it (the readiness probe's head start on the
coordinator topics): the request's bytes field by field, and a response read back, including tagged
fields and a varint longer than one byte, a malformed and an oversized answer. A real broker's answer
is checked by tests/real/test_faults_real.py (readiness ignores a failure: it is only a head start)."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from harness.kafka import wire


def test_request_bytes_field_by_field():
    frame = wire.find_coordinator_request(wire.SHARE_COORDINATOR, ["g:AAAAAAAAAAAAAAAAAAAAAA:0"], 13)
    size, = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    api_key, version, correlation, client_len = struct.unpack_from(">hhih", frame, 4)
    assert (api_key, version, correlation) == (10, 6, 13)
    at = 4 + 10 + client_len
    assert frame[14:at] == b"ksh-warm"
    assert frame[at] == 0  # header tagged fields
    assert frame[at + 1] == 2  # key type SHARE
    assert frame[at + 2] == 2  # compact array of one
    key = b"g:AAAAAAAAAAAAAAAAAAAAAA:0"
    assert frame[at + 3] == len(key) + 1 and frame[at + 4:at + 4 + len(key)] == key
    assert frame[at + 4 + len(key):] == b"\x00"  # body tagged fields, nothing after


def test_uvarint_spans_bytes():
    assert wire._uvarint(0) == b"\x00"
    assert wire._uvarint(127) == b"\x7f"
    assert wire._uvarint(300) == b"\xac\x02"
    assert wire._CompactReader(b"\xac\x02").uvarint() == 300


def _response(coordinators: list[tuple[str, int, int, str | None]], header_tag: bytes = b"") -> bytes:
    body = struct.pack(">i", 13)
    body += (b"\x01" + b"\x00" + wire._uvarint(len(header_tag)) + header_tag) if header_tag else b"\x00"
    body += struct.pack(">i", 0) + wire._uvarint(len(coordinators) + 1)
    for key, node, error, message in coordinators:
        body += wire._compact_string(key) + struct.pack(">i", node) + wire._compact_string("127.0.0.1")
        body += struct.pack(">ih", 9092, error)
        body += wire._compact_string(message) if message is not None else b"\x00"
        body += b"\x00"
    return body + b"\x00"


def test_parse_response_with_tags_and_errors():
    payload = _response([("grp", 2, 0, None), ("g:x:0", -1, 15, "not yet")], header_tag=b"xyz")
    assert wire.parse_find_coordinator(payload) == {"grp": (2, 0), "g:x:0": (-1, 15)}


def test_find_coordinators_against_a_socket_and_malformed_answer():
    def serve(server: socket.socket, frame: bytes) -> None:
        conn, _ = server.accept()
        with conn:
            conn.settimeout(5)
            size, = struct.unpack(">i", wire._recv_exactly(conn, 4))
            wire._recv_exactly(conn, size)
            conn.sendall(frame)

    def framed(answer: bytes) -> bytes:
        return struct.pack(">i", len(answer)) + answer

    for frame, expect in ((framed(_response([("grp", 1, 0, None)])), {"grp": (1, 0)}),
                          (framed(b"\x00\x00"), "malformed"),
                          (struct.pack(">i", 400 << 20), "a response of 419430400 bytes")):
        server = socket.create_server(("127.0.0.1", 0))
        server.settimeout(5)
        thread = threading.Thread(target=serve, args=(server, frame), daemon=True)
        thread.start()
        try:
            port = server.getsockname()[1]
            if isinstance(expect, str):
                with pytest.raises(ValueError, match=expect):
                    wire.find_coordinators(port, wire.GROUP_COORDINATOR, ["grp"], timeout=5)
            else:
                assert wire.find_coordinators(port, wire.GROUP_COORDINATOR, ["grp"], timeout=5) == expect
        finally:
            thread.join(5)
            server.close()


def test_bootstrap_addresses():
    assert wire.addresses("127.0.0.1:9092, localhost:9093,[::1]:9094") == [
        ("127.0.0.1", 9092), ("localhost", 9093), ("::1", 9094)]
    with pytest.raises(ValueError):
        wire.addresses("127.0.0.1")
