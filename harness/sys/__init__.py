"""The machine the harness runs on: processes and the reaper that outlives them (`procs`, `reaper`),
ports (`ports`), waiting on a condition with a timeout (`wait`), the cache's paths (`paths`), Go builds
(`gobuild`), files a user points at (`files`) and pytest children (`pytest_child`)."""
