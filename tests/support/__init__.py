"""Test support code, in one place: builders, in-memory fakes and helpers the test tiers share.

``tests/`` is on ``sys.path`` when pytest runs (``tests/conftest.py`` is a rootdir conftest),
so test modules import these as ``support.<module>``; ``bench/`` scripts put ``tests/`` on
the path first. Nothing here is a test module or a fixture: fixtures stay in the
``conftest.py`` of the tier that uses them.

- ``corpus``: small corpora with the real file names, manifest shape and licence;
- ``stores``: the service's ports in memory, with DynamoDB's conditional-write semantics;
- ``runs``: a small scored corpus and misbehaving adapter programs for hosted runs;
- ``stripe``: Stripe events in Stripe's own shape, signed with the stripe library;
- ``dashboard``: a contract-shaped team API over real HTTP and the browser helpers;
- ``schema_strategies``: Hypothesis strategies for schemas and values in the supported subset.
"""
