"""SDK-free rules of the service: licences, webhook events, usage, corpus, callbacks, dashboard, runs (no boto3, stripe or Powertools)."""
