"""SDK wrappers: the only modules that import boto3, botocore or stripe (and Powertools' SDK helpers).

Each translates SDK errors into ``toolcall300.service.errors`` at its boundary and creates
its SDK client lazily, with an injectable override for tests.
"""
