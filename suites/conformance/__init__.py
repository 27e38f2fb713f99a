"""The suites (installed as `ksh_suites`: harness.sys.suites)."""
