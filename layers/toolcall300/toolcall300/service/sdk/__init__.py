"""SDK wrappers: the AWS edition's adapters and the only modules that import boto3, botocore or
stripe (and Powertools' SDK helpers). The one-machine edition's adapters (SQLite and files)
are ``service.statefolder``.

Each translates SDK errors into ``toolcall300.service.errors`` at its boundary and creates
its SDK client lazily, with an injectable override for tests.
"""
