"""The harness's version: pyproject.toml's `version` (its one definition), read from the clone the harness runs
from, else from the installed distribution's metadata. Every verdict, certificate, conformance report and matrix
page records it; `share-harness --version` prints it. (A module of its own, not the package's `__init__`: a
folder named `harness` in a user's working directory can make the package a namespace package whose `__init__`
never runs; its modules still load.)"""

import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

_PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _version() -> str:
    if _PYPROJECT.is_file():  # a clone: its own version, whichever checkout an editable install names
        found = re.search(r'^version = "([^"]+)"', _PYPROJECT.read_text(), re.M)
        if found:
            return found[1]
    try:
        return version("kafka-share-harness")
    except PackageNotFoundError:  # imported from a folder nothing installed: no version to claim
        return "0+unknown"


VERSION = _version()
