"""The history pipeline on Spark: check Parquet histories at scale, keep the nightly record.

- `session`: a SparkSession, embedded `local[*]` with bounded memory by default, or the cluster
  `--spark-master` / the standard Spark environment (`SPARK_MASTER`, `spark-defaults.conf`) names.
- `engine`: the seven properties of many run histories in one Spark job. Rows are grouped per
  share-partition (each group also gets the history's global rows: config, commits without a
  partition, crashes, faults...) and every group runs the SAME model replay as the in-process engine
  (`harness.checkers.replay`), through `applyInArrow`; the partial findings merge with the same
  code (`replay.observation`). Set-based facts (how many events, polls with records, produced and
  delivered records, the run's time span) are DataFrame aggregations.
- `nightly`: the nightly table (one row per checked run, appended as Parquet files) and its report.
"""
