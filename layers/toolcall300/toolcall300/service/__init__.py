"""The TOOLCALL-300 service, split by role: ``domain`` (SDK-free rules), ``api`` (the Lambda
edge), ``sdk`` (boto3 and stripe wrappers), ``hosted`` (AWS orchestration of runs) and
``local`` (the one-machine stack).

Everything here may import Powertools and pydantic; only ``sdk`` imports boto3, botocore and
stripe; the suite core beside it (``toolcall300.*`` outside ``service``) imports nothing from
here. ``tests/core/test_import_rules.py`` checks each rule.
"""
