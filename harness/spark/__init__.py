"""The history pipeline on Spark: check Parquet histories at scale, keep the nightly record.

- `engine`: the front: which engine checks (`check_histories`), the Spark engine (`check_files`) and
  its knobs. The seven properties of many run histories in a few Spark jobs: each share-partition's
  rows are replayed in one slot (a Python task) together with the run's global rows (config, commits
  without a partition, crashes, faults...), by the SAME model replay as the in-process engine
  (`harness.checkers.replay`); the partial findings merge with the same code (`replay.observation`).
  Its parts, one idea each: `histories` (which histories, readable), `results` (a check, written
  beside its history), `inprocess` (the in-process front), `slots` (slot planning), `direct` and
  `shuffle` (the two layouts that bring rows to slots), `merge` (slots' findings to checks),
  `pruning` (the "commit returned" rows a slot may leave out) and `tables` (shared Arrow helpers).
- `session`: a SparkSession, embedded `local[*]` with bounded memory by default, or the cluster
  `--spark-master` / the standard Spark environment (`SPARK_MASTER`, `spark-defaults.conf`) names.
- `standalone`: a Spark standalone cluster on loopback (a master and workers started from the pyspark
  package's own launcher), for the tests and benchmarks of `--spark-master spark://...`.
- `nightly`: the nightly table (one row per checked run, appended as Parquet files) and its report.
"""
