"""The job side of a hosted run, used by the harness image and the local worker: harness and sandbox (stdlib only; no service code)."""
