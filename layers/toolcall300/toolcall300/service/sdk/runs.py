"""AWS adapters for hosted runs: the runs table, the reports bucket and AWS Batch.

``RunTable`` is a ``runs.RunStore`` on the template's ``RunsTable`` (key ``run_id``; GSIs
``by_team`` on team + created_at, and the sparse ``by_active_status`` and ``baselines_by_team``), with the same optimistic ``version`` as the licence table.
``ReportObjects`` stores each report once (``If-None-Match: *``, plus a HEAD first because
not every S3 emulator honours it). ``BatchApi`` is the thin Batch surface ``service.batch``
uses. SDK errors become ``StoreConflict``, ``NotFound`` or ``UpstreamUnavailable`` here.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from boto3.dynamodb.conditions import Attr, Key

from toolcall300.service.domain.runs import FINAL
from toolcall300.service.errors import PayloadTooLarge
from toolcall300.service.sdk.aws import LazyBucket, LazyTable, client, translated
from toolcall300.service.sdk.dynamo import _plain, _stored


def _translated(what: str) -> AbstractContextManager[None]:
    return translated(what)


class RunTable(LazyTable):
    """``RunStore`` on DynamoDB."""

    def get(self, run_id: str) -> dict[str, Any] | None:
        with _translated("the runs table"):
            item = self.table.get_item(Key={"run_id": run_id}, ConsistentRead=True).get("Item")
        return _plain(item) if item else None

    def put(self, item: dict[str, Any], *, expected_version: int | None) -> None:
        cond = (
            Attr("run_id").not_exists()
            if expected_version is None
            else Attr("version").eq(expected_version)
        )
        with _translated("the runs table"):
            self.table.put_item(Item=_stored(item), ConditionExpression=cond)

    def by_team(self, team: str, *, limit: int) -> list[dict[str, Any]]:
        """The team's ``limit`` newest runs: a descending Query with ``Limit``, so it reads
        those runs and not a page of 1 MB (the public badge reads this on every miss)."""
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "IndexName": "by_team",
            "KeyConditionExpression": Key("team").eq(team),
            "ScanIndexForward": False,
            "Limit": max(1, limit),
        }
        with _translated("the runs table"):
            while len(items) < limit:
                page = self.table.query(**kwargs)
                items.extend(_plain(i) for i in page["Items"])
                if "LastEvaluatedKey" not in page:
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
                kwargs["Limit"] = max(1, limit - len(items))
        return items[:limit]

    def _query_all(self, **kwargs: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        with _translated("the runs table"):
            while True:
                page = self.table.query(**kwargs)
                items.extend(_plain(i) for i in page["Items"])
                if "LastEvaluatedKey" not in page:
                    return items
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def by_status(self, status: str) -> list[dict[str, Any]]:
        """Every queued or running run, from the sparse ``by_active_status`` index (no Scan).

        The index is eventually consistent: callers re-read each run (consistently) before
        they change it, as every transition does.
        """
        if status in FINAL:
            raise ValueError("only runs in flight are indexed by status")
        return self._query_all(
            IndexName="by_active_status", KeyConditionExpression=Key("active_status").eq(status)
        )

    def baselines_page(
        self, team: str, *, limit: int, after: tuple[str, str] | None
    ) -> list[dict[str, Any]]:
        """RunStore.baselines_page: ``baselines_by_team`` is sorted by ``baseline_set_at``, so
        a descending Query with ``Limit`` reads one page, not the history; ``after`` resumes
        as ``ExclusiveStartKey`` (the index key plus the table key ``run_id``), so baselines
        set in the same second are neither skipped nor repeated."""
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "IndexName": "baselines_by_team",
            "KeyConditionExpression": Key("team").eq(team),
            "ScanIndexForward": False,
            "Limit": max(1, limit),
        }
        if after is not None:
            kwargs["ExclusiveStartKey"] = {
                "team": team,
                "baseline_set_at": after[0],
                "run_id": after[1],
            }
        with _translated("the runs table"):
            while len(items) < limit:
                page = self.table.query(**kwargs)
                items.extend(_plain(i) for i in page["Items"])
                if "LastEvaluatedKey" not in page:
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
                kwargs["Limit"] = max(1, limit - len(items))
        return items[:limit]


class ReportObjects(LazyBucket):
    """``ReportStore`` on the reports bucket: write-once objects."""

    def put_once(self, key: str, body: bytes) -> None:
        """One conditional write (``If-None-Match: *``): S3 answers 412 when the key exists,
        which ``translated`` makes a ``StoreConflict``. No ``HeadObject`` probe first: it
        was a second request, racy between the two, and it needed ``s3:ListBucket`` for a
        missing key to be a 404 rather than a 403 (docs/runs-contract.md)."""
        with _translated("the reports bucket"):
            self.s3.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=body,
                ContentType="application/json",
                IfNoneMatch="*",
            )

    def presign(self, method: str, key: str, *, seconds: int) -> str:
        """A SigV4 link for one GET or PUT of one key (a Batch job holds no credentials)."""
        op = {"GET": "get_object", "PUT": "put_object"}[method]
        url: str = self.s3.generate_presigned_url(
            op, Params={"Bucket": self.bucket, "Key": key}, ExpiresIn=seconds
        )
        return url

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        """The object's bytes, streamed; more than ``max_bytes`` is ``PayloadTooLarge``.

        The cap is checked on the declared length and again while reading, so an object
        written from inside a job (up to 5 GB by a presigned PUT) is never held whole.
        """
        with _translated("the reports bucket"):
            found = self.s3.get_object(Bucket=self.bucket, Key=key)
            body = found["Body"]
            if max_bytes is None:
                data: bytes = body.read()
                return data
            if int(found.get("ContentLength") or 0) > max_bytes:
                body.close()
                raise PayloadTooLarge(f"{key} is larger than {max_bytes} bytes", code="too_large")
            chunks, size = [], 0
            for chunk in body.iter_chunks(chunk_size=1024 * 1024):
                size += len(chunk)
                if size > max_bytes:
                    body.close()
                    raise PayloadTooLarge(
                        f"{key} is larger than {max_bytes} bytes", code="too_large"
                    )
                chunks.append(chunk)
        return b"".join(chunks)

    def read(self, key: str) -> bytes:
        """Alias of :meth:`get` (the corpus reader's name for the same thing)."""
        return self.get(key)


class BatchApi:
    """The few AWS Batch calls hosted runs make."""

    def __init__(self, batch: Any = None) -> None:
        self._batch = batch

    @property
    def batch(self) -> Any:
        if self._batch is None:
            self._batch = client("batch")
        return self._batch

    def active_definition(self, name: str) -> str | None:
        """The ARN of the newest ACTIVE revision of job definition ``name``, if any."""
        with _translated("AWS Batch"):
            found = self.batch.describe_job_definitions(jobDefinitionName=name, status="ACTIVE")
        defs = sorted(found.get("jobDefinitions", []), key=lambda d: int(d.get("revision", 0)))
        return str(defs[-1]["jobDefinitionArn"]) if defs else None

    def describe_definition(self, name_or_arn: str) -> dict[str, Any] | None:
        with _translated("AWS Batch"):
            found = self.batch.describe_job_definitions(jobDefinitions=[name_or_arn])
        defs = sorted(found.get("jobDefinitions", []), key=lambda d: int(d.get("revision", 0)))
        return dict(defs[-1]) if defs else None

    def register(self, **kwargs: Any) -> str:
        with _translated("AWS Batch"):
            return str(self.batch.register_job_definition(**kwargs)["jobDefinitionArn"])

    def submit(self, **kwargs: Any) -> str:
        with _translated("AWS Batch"):
            return str(self.batch.submit_job(**kwargs)["jobId"])

    def terminate(self, job_id: str, reason: str) -> None:
        """End a job whatever its state (a job not yet STARTING is cancelled)."""
        with _translated("AWS Batch"):
            self.batch.terminate_job(jobId=job_id, reason=reason)

    def describe_job(self, job_id: str) -> dict[str, Any] | None:
        """The job as Batch describes it, or None when Batch no longer knows it."""
        with _translated("AWS Batch"):
            jobs = self.batch.describe_jobs(jobs=[job_id]).get("jobs", [])
        return dict(jobs[0]) if jobs else None

    def job_status(self, job_id: str) -> str | None:
        """The job's status, or None when Batch no longer knows it."""
        job = self.describe_job(job_id)
        return str(job["status"]) if job else None
