"""Our own subset of the era-A Multigres protos and the stubs generated from them (gen/)."""
