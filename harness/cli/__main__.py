"""`python -m harness.cli`: the `share-harness` command."""

from harness.cli import main

raise SystemExit(main())
