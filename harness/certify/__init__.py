"""Certification of share-consumer libraries: the client rules and the contract sentences they check
(`rules`), one certification's run and its certificate and comparison page (`certificate`), and the
release x client matrix (`matrix`)."""
