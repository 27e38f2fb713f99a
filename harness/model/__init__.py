"""The reference model of a KIP-932 share-partition, its version profiles and the named allowances."""
