"""Clusters: the `Cluster` protocol, optional capabilities, and the backends."""
