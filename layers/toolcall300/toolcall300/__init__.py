"""TOOLCALL-300: a conformance suite for the layer between a language model and its tools.

The suite core (``canonical``, ``schema``, ``catalog``, ``generator``, ``scorer``,
``toolshim``, ``argcheck`` and the CLI) uses the Python standard library only, so the free
kit runs anywhere with ``python3``. ``toolcall300.service`` holds the AWS service code and
is imported only by the service.
"""

__version__ = "1.0.0"
