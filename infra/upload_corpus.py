"""Upload ``corpus_private/`` (whatever its ``manifest.json`` lists) to the deployed corpus bucket.

Usage: ``python infra/upload_corpus.py [--dir corpus_private] [--bucket NAME | --stack NAME]``.
With ``--stack`` the bucket is read from the CloudFormation output ``CorpusBucketName``.
Every file is checked against its sha256 pin before upload; the manifest goes last.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import boto3

from toolcall300.service.domain.corpus import manifest_entries
from toolcall300.service.sdk.s3 import CorpusObjects, upload_corpus


def bucket_of_stack(stack: str) -> str:
    outputs = (
        boto3.client("cloudformation")
        .describe_stacks(StackName=stack)["Stacks"][0]
        .get("Outputs", [])
    )
    for out in outputs:
        if out["OutputKey"] == "CorpusBucketName":
            return str(out["OutputValue"])
    raise SystemExit(f"stack {stack} has no CorpusBucketName output")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path("corpus_private"))
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--bucket")
    group.add_argument("--stack", default="toolcall300")
    args = parser.parse_args(argv)
    bucket = args.bucket or bucket_of_stack(args.stack)
    manifest = upload_corpus(args.dir, CorpusObjects(bucket))
    print(f"uploaded {len(manifest_entries(manifest))} files and manifest.json to s3://{bucket}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
