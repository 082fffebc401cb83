"""The Lambda edge: the resolver with the one error map, the composition root (wiring), auth, OpenAPI, routes."""
