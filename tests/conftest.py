"""Shared pytest configuration: nothing here imports third-party service code."""
