"""The TOOLCALL-300 service: licences, the licence-gated corpus, the argument checker, the local stack.

Everything here may import boto3, Powertools, pydantic and stripe; the suite core beside it
(``toolcall300.*`` outside ``service``) may not import anything from here. Only the modules in
``adapters`` import AWS or Stripe SDKs; domain modules take their collaborators as parameters.
"""
