"""The one-machine edition's storage: the state folder's SQLite database and files.

The adapters ``toolcall300 serve`` puts behind the same ports the AWS adapters (``sdk/``)
serve: ``sqlite`` (licences, usage, the check ledger, runs), ``idempotency`` (Powertools'
persistence layer on SQLite), ``files`` (buckets as folders, signed links) and ``folder``
(the state folder itself, its keys and secrets, backup and restore). Like ``sdk/``, they
import only the domain, the errors and the core (tests/core/test_import_rules.py);
tests/unit/test_store_contract.py runs one contract per port against both sets.
"""
