"""multigres.pools Python side: the data-plane agent, the operator loop and the render CLI."""
