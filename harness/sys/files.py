"""Reading files a user points the harness at (manifests, spec.json, verdict.json, junit.xml): a regular
file of bounded size, or one line saying what is wrong with it.

`Path.read_text()` on a fifo blocks until a writer comes, and on a link to `/dev/zero` reads until memory
runs out. Here the file is opened without blocking (O_NONBLOCK: a fifo with no writer opens at once),
checked to be a regular file with `fstat` on the open descriptor (no window between the check and the
read), and read to at most `limit` bytes; a longer file is refused, never cut.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

#: What a small document of the harness (a manifest, a spec, a verdict, a junit report) may weigh.
SMALL = 64 * 1024 * 1024


class BadFile(HarnessError):
    """A file that is not a regular file, is too big, or cannot be read or parsed."""


def read_bytes(path: str | os.PathLike, what: str = "file", limit: int = SMALL) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them; BadFile otherwise."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise BadFile(f"{what} {path} does not exist") from None
    except OSError as exc:
        raise BadFile(f"{what} {path} cannot be read ({exc.strerror}): check its permissions") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadFile(f"{what} {path} is not a regular file (a fifo, a device or a directory): "
                          f"give a file")
        if info.st_size > limit:
            raise BadFile(f"{what} {path} is {info.st_size:,} bytes, more than the {limit:,} a {what} may "
                          f"have: give the right file")
        os.set_blocking(fd, True)
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise BadFile(f"{what} {path} grew past {limit:,} bytes while read: give the right file")
        return b"".join(chunks)
    except OSError as exc:
        raise BadFile(f"{what} {path} cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike, what: str = "file", limit: int = SMALL) -> str:
    """`read_bytes` decoded as UTF-8; BadFile if it is not text."""
    data = read_bytes(path, what, limit)
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise BadFile(f"{what} {path} is not UTF-8 text: give the right file") from None


def read_json(path: str | os.PathLike, what: str = "file", limit: int = SMALL) -> Any:
    """`read_text` parsed as JSON; BadFile naming the line if it is not JSON."""
    text = read_text(path, what, limit)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise BadFile(f"{what} {path} is not valid JSON ({exc}): rewrite or remove it") from None


def read_json_object(path: str | os.PathLike, what: str = "file", limit: int = SMALL) -> dict:
    """`read_json` that must be an object."""
    data = read_json(path, what, limit)
    if not isinstance(data, dict):
        raise BadFile(f"{what} {path} is not a JSON object: rewrite or remove it")
    return data
