"""The harness's version: the installed distribution's (pyproject.toml's `version`, its one definition).
Every verdict, certificate, conformance report and matrix page records it; `share-harness --version` prints it.
(A module of its own, not the package's `__init__`: a folder named `harness` in a user's working directory can
make the package a namespace package whose `__init__` never runs; its modules still load.)"""

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("kafka-share-harness")
except PackageNotFoundError:  # imported from a folder nothing installed: no version to claim
    VERSION = "0+unknown"
