"""The harness's own tests: `real` ones start processes; the rest are pure and fast."""
