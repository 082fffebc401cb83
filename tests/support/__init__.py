"""Test support code, in one place: builders, in-memory fakes and helpers the test tiers share.

``tests/`` is on ``sys.path`` when pytest runs (it holds ``conftest.py`` and is not a package,
so pytest inserts it), so test modules import these as ``support.<module>``; ``bench/`` scripts put ``tests/`` on
the path first. Nothing here is a test module or a fixture: fixtures stay in the
``conftest.py`` of the tier that uses them.

- ``corpus``: small corpora with the real file names, manifest shape and licence;
- ``stores``: the service's ports in memory, with DynamoDB's conditional-write semantics;
- ``runs``: a small scored corpus, misbehaving adapter programs and ``wait_for_run`` for
  hosted runs;
- ``stripe``: Stripe events in Stripe's own shape, signed with the stripe library, and a
  fake Stripe API behind the library's HTTP-client hook;
- ``gateway``: the signature of the unit tier's ``call`` fixture;
- ``dashboard``: a contract-shaped team API over real HTTP and the browser helpers;
- ``schema_strategies``: Hypothesis strategies for schemas and values in the supported subset.
"""
