"""``GET /corpus`` (presigned links, daily cap) and ``GET /cases/{id}/rationale``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Path
from pydantic import BaseModel

from toolcall300.service.api import deps
from toolcall300.service.api.auth import require_licence
from toolcall300.service.api.resolver import error_responses, make_router, ok_response
from toolcall300.service.domain import corpus, usage
from toolcall300.service.observability import count

router = make_router()


class CorpusFile(BaseModel):
    name: str
    sha256: str
    bytes: int | None = None
    count: int | None = None
    url: str


class TrackCorpus(BaseModel):
    """A track's corpus (docs/tracks.md): its manifest and files under ``<track>/``."""

    track: str
    version: str
    spec_version: str | None = None
    manifest: CorpusFile
    files: list[CorpusFile]


class CorpusView(BaseModel):
    version: str
    spec_version: str | None = None
    #: the manifest itself, pinned by its sha256: it holds every other pin
    manifest: CorpusFile
    files: list[CorpusFile]
    #: the generator's recorded inputs (``inputs/recipe.json``, the catalog, the pools)
    inputs: list[CorpusFile] = []
    #: the track corpora served beside it (the parallel and deltas tracks), when uploaded
    tracks: list[TrackCorpus] = []
    expires_in: int


class RationaleView(BaseModel):
    id: str
    rule: str | int | None
    rationale: str | None


@router.get(
    "/corpus",
    summary="The corpus: version, sha256 pins and short-lived presigned download links",
    responses={**ok_response(CorpusView, "the corpus"), **error_responses(401, 403, 404, 429, 503)},
    tags=["corpus"],
)
def get_corpus(served: deps.TheEdition, settings: deps.Corpus) -> CorpusView:
    licence = require_licence(router.current_event.headers, store=served.licences)
    usage.take_download(
        served.corpus_usage,
        licence.account_id,  # a team's member keys share its purchase's cap
        per_day=settings.downloads_per_day,
        now=datetime.now(UTC),
    )
    links = corpus.corpus_links(
        served.corpus_objects, seconds=settings.presign_seconds, max_age=settings.manifest_max_age_s
    )
    count("CorpusDownloads")
    return CorpusView.model_validate(links)


@router.get(
    "/cases/<id>/rationale",
    summary="One case's rationale (ids are exactly tc300-NNNN)",
    responses={
        **ok_response(RationaleView, "the rationale"),
        **error_responses(400, 401, 403, 404, 503),
    },
    tags=["corpus"],
)
def get_rationale(
    id: Annotated[str, Path(pattern=corpus.CASE_ID_PATTERN)],
    served: deps.TheEdition,
    settings: deps.Corpus,
) -> RationaleView:
    require_licence(router.current_event.headers, store=served.licences)
    record = corpus.case_rationale(served.corpus_objects, id, max_age=settings.manifest_max_age_s)
    return RationaleView.model_validate(record)
