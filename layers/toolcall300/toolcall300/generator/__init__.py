"""The generator: builds a labelled corpus from a tool catalog and named mutation rules (stdlib only; imports only the foundation)."""
