"""Generated runs: operations of the whole share-group surface interleaved with faults, checked by the
oracle, failures shrunk to minimal schedules and stored as findings (`share-harness explore`).

- `surface`: the operation kinds (each with the sentence it exercises) and the seeded generator;
- `schedule`: a run as data (setup and steps), JSON, replayable;
- `runner`: one schedule on a real cluster (a conformance session, a nemesis), checked;
- `triage`: a run's anomaly signature and outcome; who a finding is about (KNOWN_BUGS by id);
- `shrink`: delta debugging over steps, then the setup;
- `store`: reports/findings (findings by signature, report.md, coverage, merging machines);
- `explorer`: the loop under a budget.
"""
