"""The install bundle's generators (CRD, RBAC, monitoring, API reference); only the CLI uses them."""
