"""Clients: the producer, and share-consumer drivers that run in their own processes."""
