"""The drift job's pure parts (harness.drift): release ordering and the "what moved" rows, JUnit XML into the rows'
statuses and the new failures, certificates against the published ones, the page; no network, no cluster."""
