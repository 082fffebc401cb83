"""Scoring: corpus parsing, grading, reports and comparison, rendering, the adapters under test and their process protocol (stdlib only; imports only the foundation)."""
