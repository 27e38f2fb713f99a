"""The drift job (`tox -e latest`, nightly): the newest release of every dependency, run, and the drift table.

    python scripts/drift.py [--clients confluent,java,franz,spring] [--lines 4.4] [--tests "suites/conformance"]
                            [--skip-certify] [--resolve-only] [--workers 2] [--no-baseline-reruns]
                            [--baseline CLIENT=JUNIT ...] [--from reports/drift/<time>] [--page docs/drift.md]

Writes docs/drift.md; the work is `harness.drift` (its `main` says the phases and exit codes), docs/drift.md says
how to read the page.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's harness, wherever it is run from

from harness.drift.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
