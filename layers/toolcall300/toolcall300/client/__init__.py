"""Commands customers run against the service: the HTTP client, download, ci, dev purchase (stdlib only; no service code)."""
