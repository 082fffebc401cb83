"""template.yaml as ``sam deploy`` would hand it to CloudFormation (samtranslator's transform).

Code locations are stubbed as in a package; the template names managed policies by ARN or by
Ref only, so the managed-policy loader knows no names. samtranslator reads the region from the
environment (``AWS_DEFAULT_REGION``): callers set it.
"""

from __future__ import annotations

import copy
from typing import Any


def translated(template: dict[str, Any], region: str = "us-east-1") -> dict[str, Any]:
    from samtranslator.translator.transform import transform

    sam = copy.deepcopy(template)
    for resource in sam["Resources"].values():
        props = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str):
                props[key] = "s3://toolcall300-code/package.zip"

    class NoManagedPolicyNames:
        def load(self) -> dict[str, str]:
            return {}

    out: dict[str, Any] = transform(sam, {"AWS::Region": region}, NoManagedPolicyNames())
    return out
