"""The signature of the unit tier's ``call`` fixture: a request through the real handlers.

``call("GET", "/licence", headers={...}, body=b"...", ip="1.2.3.4")`` returns
``(status, headers, parsed JSON body or None)``; the fixture itself (moto in process, the
routes bound from ``template.yaml``) is in ``tests/unit/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Call = Callable[..., tuple[int, dict[str, str], Any]]
