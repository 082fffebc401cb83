"""Shared pytest configuration: nothing here imports third-party service code."""

# Hypothesis imports this module lazily the first time a test draws `st.randoms()`. pytest then
# rewrites and parses it, and CPython 3.11.7 can fail that parse with "AST constructor recursion
# depth mismatch" when an earlier test recovered from a RecursionError (deep-JSON tests do).
# Importing it here, at collection, parses it before any such test has run.
import hypothesis.strategies._internal.random  # noqa: F401
