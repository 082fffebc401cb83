"""AWS orchestration of hosted runs: Batch job definitions, submission, job-state events, the run flow."""
