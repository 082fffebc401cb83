"""tool-argument/v1, the strict argument checker: request checks, whitelist repairs, criteria and vectors (stdlib only; knows refusal codes, not HTTP statuses)."""
