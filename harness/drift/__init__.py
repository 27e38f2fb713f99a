"""The drift job (`tox -e latest`, nightly; issue 73): the newest release of everything the harness pins, tried.

The tested set (`harness.tested_set`) is what CI runs; this job resolves the newest of each part of it (every
Python dependency through uv, the newest Kafka patch release of each supported line and spring-kafka from
Maven Central, franz-go and kfake from the Go module proxy), runs the conformance suite and certifies each
client on them in a throw-away virtual environment, and writes the drift table (docs/drift.md): what moved,
which deviation and known-bug rows still reproduce, which no longer do, what newly fails. A new release is news,
not a red gate; updating the lock is then one reviewed commit.

- `versions`: release ordering and the "what moved" rows (pure).
- `outcomes`: JUnit XML into per-test outcomes, the rows' statuses and the new failures (pure).
- `certs`: a client's certificate on the newest set against the published one (pure).
- `tables`: the rows, read from the deviation and known-bug tables (the one coupling to them).
- `render`: the markdown page (pure).
- `resolve`: the registries asked (network), each failure one line naming the registry.
- `runner`: the virtual environment, the pytest and certify children, their clean-up, their files read back.
- `baseline`: a run's unexplained failures run again on the tested set (drift, or failing before?).
- `options`, `main`: the command line (`scripts/drift.py`) and its phases.

Fail closed: a registry that cannot be reached is an unresolved part, never "no drift"; a row no run exercised
is "not exercised", never "still reproduces".
"""
