"""``make peers``: score the peer adapters beside the two controls, on the public sample and
(when it is here) the private corpus, and record which library versions ran.

Run with the peers' own interpreter (peers/.venv/bin/python), after ``make peers`` installed
them. Writes peers/versions.json; prints one side-by-side table per corpus. Extra arguments
go to ``toolcall300 score`` (``--summary FILE`` for the tables as Markdown).
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import sys
from importlib.metadata import version
from pathlib import Path

from toolcall300.cli import dispatch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYTHON_LIBRARIES = (
    "json-repair",
    "jsonschema",
    "partial-json-parser",
    "pydantic",
    "langchain-core",
    "openai",
    "anthropic",
)
NPM_LIBRARIES = (
    "jsonrepair",
    "ajv",
    "ai",
    "@ai-sdk/openai",
    "@ai-sdk/anthropic",
    "@ai-sdk/google",
    "@langchain/core",
)
CORPORA = (
    ROOT / "layers/toolcall300/toolcall300/data/sample30.jsonl",
    ROOT / "corpus_private/toolcall300.jsonl",
)
#: The parallel track's corpus and its peers (peers/parallel_peers.py), each answering a list.
PARALLEL_CORPORA = (ROOT / "corpus_private/parallel/toolcall300-parallel.jsonl",)
PARALLEL_PEERS = (
    "langchain_message",
    "langchain_parser",
    "sdk_parsed",
    "json_repair_gate",
    "json_repair_schema",
    "pydantic_lax",
)


#: The deltas track's free sample and its peers (peers/deltas_peers.py), each a deltas adapter.
DELTAS_CORPORA = (ROOT / "layers/toolcall300/toolcall300/data/deltas-sample.jsonl",)
DELTAS_PEERS = (
    "sdk_accumulate",
    "langchain_chunks",
    "langchain_progressive",
    "partial_json_gate",
    "json_repair_gate",
)


def node_installed(package: str) -> bool:
    """node is on PATH and ``make peers`` installed ``package`` into peers/node."""
    return bool(shutil.which("node")) and (HERE / "node" / "node_modules" / package).is_dir()


def deltas_flags() -> list[str]:
    """The controls (C1, C2 on the accumulated call), then every deltas peer (LangChain.js's,
    plain and committing, and the Vercel AI SDK's, deltas process-protocol programs, when node
    and they are here)."""
    flags = ["--adapter", "naive", "--adapter", "integrator"]
    for name in DELTAS_PEERS:
        flags += ["--adapter", f"peers/deltas_peers.py:{name}"]
    if node_installed("@langchain/core"):
        script = "peers/node/deltas_langchain.mjs"
        flags += [
            "--adapter-cmd",
            f"node {script}",
            "--adapter-cmd",
            f"node {script} --progressive",
        ]
    if node_installed("ai"):
        flags += ["--adapter-cmd", "node peers/node/deltas_vercel.mjs"]
    return flags


def parallel_flags() -> list[str]:
    """The controls (C1, C3), then every parallel peer (LangChain.js's and the Vercel AI SDK's,
    plain and with an Ajv validator, list stream-protocol programs, when node and they are here)."""
    flags = ["--adapter", "naive", "--adapter", "integrator"]
    for name in PARALLEL_PEERS:
        flags += ["--adapter", f"peers/parallel_peers.py:{name}"]
    if node_installed("@langchain/core"):
        flags += ["--adapter-stream", "node peers/node/parallel_langchain.mjs"]
    if node_installed("ai"):
        script = "peers/node/parallel_vercel.mjs"
        flags += ["--adapter-stream", f"node {script}", "--adapter-stream", f"node {script} --ajv"]
    return flags


def adapter_flags() -> list[str]:
    """The controls first, then every peer (the npm ones only when node and them are here)."""
    flags = ["--adapter", "naive", "--adapter", "integrator"]
    for spec in (
        "json_repair_peers.py:plain",
        "json_repair_peers.py:gate",
        "json_repair_peers.py:schema",
        "partial_json_peer.py:gate",
        "pydantic_peer.py:lax",
        "jsonschema_peer.py:gate",
        "langchain_peer.py:parse",
    ):
        flags += ["--adapter", f"peers/{spec}"]
    script = "peers/node/jsonrepair_stream.mjs"
    if node_installed("jsonrepair"):
        flags += ["--adapter-stream", f"node {script}", "--adapter-stream", f"node {script} --ajv"]
    return flags


def versions() -> dict[str, str]:
    found = {name: version(name) for name in PYTHON_LIBRARIES}
    for name in NPM_LIBRARIES:
        manifest = HERE / "node" / "node_modules" / name / "package.json"
        if manifest.is_file():
            found[f"npm:{name}"] = json.loads(manifest.read_text(encoding="utf-8"))["version"]
    return found


def main() -> int:
    os.chdir(ROOT)  # the adapters are named relative to the repository root, as a user types them
    record = {
        "date": datetime.date.today().isoformat(),
        "python": sys.version.split()[0],
        **versions(),
    }
    (HERE / "versions.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print("peers: " + ", ".join(f"{k} {v}" for k, v in record.items()))
    worst = 0
    runs = (
        [(c, adapter_flags()) for c in CORPORA]
        + [(c, parallel_flags()) for c in PARALLEL_CORPORA]
        + [(c, deltas_flags()) for c in DELTAS_CORPORA]
    )
    for corpus, flags in runs:
        if not corpus.is_file():
            print(f"\n(skipped {corpus.relative_to(ROOT)}: not here)")
            continue
        name = corpus.relative_to(ROOT)
        print(f"\n{name}")
        argv = ["score", "--corpus", str(name), *flags, *sys.argv[1:]]
        worst = max(worst, dispatch(argv, sys.stdout, sys.stderr))
    return worst


if __name__ == "__main__":
    sys.exit(main())
