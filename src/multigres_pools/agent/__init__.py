"""The data-plane agent: drain state machine, role labels, topology registration and backup health."""
