"""Collect real tool catalogs as their ecosystems emit them, into tests/data/real-catalogs/.

Nothing here is written by hand: each fixture is what a released package answers or emits.

- **MCP servers** (PyPI and npm), started over stdio and asked ``tools/list`` by the official
  ``mcp`` Python client; the result is saved as the server sent it (``{"tools": [...]}``),
  with the package and version in ``_source.json``.
- **Framework outputs**: LangChain's ``convert_to_openai_tool``, the OpenAI SDK's
  ``pydantic_function_tool`` and Gemini's ``FunctionDeclaration.from_callable``, each run on
  the same few ordinary Python tools (typed functions and pydantic models, the way their docs
  write them), saved as the array each emits.

It runs outside the project's environments, in a throwaway one (its packages are no
dependency of the project)::

    python3 -m venv /tmp/rc && /tmp/rc/bin/pip install mcp mcp-server-fetch mcp-server-time \\
        mcp-server-git langchain-core openai google-genai pydantic
    mkdir /tmp/rc-npm && cd /tmp/rc-npm && npm init -y && npm install \\
        @modelcontextprotocol/server-filesystem @modelcontextprotocol/server-memory \\
        @modelcontextprotocol/server-everything @modelcontextprotocol/server-sequential-thinking
    /tmp/rc/bin/python bench/collect_real_catalogs.py --npm /tmp/rc-npm [--only NAME]

Servers that need a token or a service list their tools without one (they fail only when a
tool is called); one that lists nothing is reported and skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "real-catalogs"
#: Where each fixture came from (package, version, how): beside the fixtures, not one of them.
SOURCES = "SOURCES.json.txt"

#: package -> how to start it: argv after the interpreter (PyPI) or node (npm)
PYPI_SERVERS = {
    "mcp-server-fetch": ["-m", "mcp_server_fetch"],
    "mcp-server-time": ["-m", "mcp_server_time"],
    "mcp-server-git": ["-m", "mcp_server_git"],
}
NPM_SERVERS = {
    "@modelcontextprotocol/server-filesystem": ["dist/index.js", "{tmp}"],
    "@modelcontextprotocol/server-memory": ["dist/index.js"],
    "@modelcontextprotocol/server-everything": ["dist/index.js", "stdio"],
    "@modelcontextprotocol/server-sequential-thinking": ["dist/index.js"],
    "@modelcontextprotocol/server-github": ["dist/index.js"],
    "@modelcontextprotocol/server-gitlab": ["dist/index.js"],
    "@modelcontextprotocol/server-brave-search": ["dist/index.js"],
    "@modelcontextprotocol/server-google-maps": ["dist/index.js"],
    "@modelcontextprotocol/server-slack": ["dist/index.js"],
}
#: Placeholder settings some servers read at start (never a real credential: listing tools
#: calls no API).
PLACEHOLDER_ENV = {
    "GITHUB_PERSONAL_ACCESS_TOKEN": "placeholder",
    "GITLAB_PERSONAL_ACCESS_TOKEN": "placeholder",
    "BRAVE_API_KEY": "placeholder",
    "GOOGLE_MAPS_API_KEY": "placeholder",
    "SLACK_BOT_TOKEN": "placeholder",
    "SLACK_TEAM_ID": "placeholder",
}


def fixture_name(package: str) -> str:
    return "mcp-" + package.split("/")[-1].removeprefix("mcp-").removeprefix("server-")


async def list_tools(command: str, args: list[str]) -> list[dict[str, Any]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=command, args=args, env={**os.environ, **PLACEHOLDER_ENV}
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.list_tools()
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in result.tools]


def npm_version(root: Path, package: str) -> str:
    meta = json.loads((root / "node_modules" / package / "package.json").read_text())
    return str(meta["version"])


def collect_servers(npm: Path | None, only: str | None) -> dict[str, dict[str, Any]]:
    sources: dict[str, dict[str, Any]] = {}
    jobs: list[tuple[str, str, str, str, list[str]]] = []
    for package, argv in PYPI_SERVERS.items():
        version = importlib.metadata.version(package)
        jobs.append(("PyPI", package, version, sys.executable, argv))
    if npm is not None:
        for package, argv in NPM_SERVERS.items():
            if not (npm / "node_modules" / package).is_dir():
                continue
            base = npm / "node_modules" / package
            jobs.append(
                (
                    "npm",
                    package,
                    npm_version(npm, package),
                    "node",
                    [str(base / argv[0]), *argv[1:]],
                )
            )
    for registry, package, version, command, argv in jobs:
        name = fixture_name(package)
        if only and only != name:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            args = [a.replace("{tmp}", tmp) for a in argv]
            try:
                tools = asyncio.run(asyncio.wait_for(list_tools(command, args), 60))
            except Exception as exc:  # a server that will not list is reported, not fatal
                print(f"{name}: no tools/list ({type(exc).__name__}: {exc})", file=sys.stderr)
                continue
        if not tools:
            print(f"{name}: listed no tools", file=sys.stderr)
            continue
        path = OUT / f"{name}.tools-list.json"
        path.write_text(json.dumps({"tools": tools}, indent=1, ensure_ascii=False) + "\n")
        sources[path.name] = {
            "registry": registry,
            "package": package,
            "version": version,
            "how": "tools/list over stdio, official mcp Python client "
            f"{importlib.metadata.version('mcp')}",
            "tools": len(tools),
        }
        print(f"{name}: {len(tools)} tools ({package} {version})")
    return sources


# ---------------------------------------------------------------- framework outputs


def frameworks() -> dict[str, tuple[Any, dict[str, Any]]]:
    """Each framework's output on the same ordinary tools, and where it came from."""
    from enum import Enum
    from typing import Literal

    from pydantic import BaseModel, Field

    class Unit(str, Enum):  # noqa: UP042 (as pydantic's docs write it; the fixture came from it)
        celsius = "celsius"
        fahrenheit = "fahrenheit"

    class GetWeather(BaseModel):
        """Get the current weather in a city."""

        city: str = Field(description="City name, e.g. Lisbon")
        unit: Unit = Unit.celsius
        days: int = Field(default=1, ge=1, le=7, description="Forecast days")

    class Address(BaseModel):
        street: str
        postcode: str = Field(pattern=r"^\d{4}-\d{3}$")

    class CreateOrder(BaseModel):
        """Create an order for a customer."""

        customer_email: str = Field(description="Customer e-mail")
        items: list[str] = Field(min_length=1)
        quantity: int = Field(gt=0)
        express: bool = False
        note: str | None = None
        ship_to: Address

    class SearchDocs(BaseModel):
        """Search the documentation."""

        query: str
        version: str = Field(default="latest", pattern=r"^(latest|v\d+(?:\.\d+)*)$")
        limit: int = 10
        sort: Literal["relevance", "date"] = "relevance"

    class Card(BaseModel):
        number: str
        expiry: str = Field(pattern=r"^\d{2}/\d{2}$")

    class Transfer(BaseModel):
        iban: str

    class Pay(BaseModel):
        """Pay an invoice by card or transfer (a real union: either object)."""

        invoice_id: str
        method: Card | Transfer

    class Tag(BaseModel):
        """Tag a resource with free-form labels (a map: any key, string values)."""

        resource: str
        labels: dict[str, str]

    def book_meeting(
        title: str, attendees: list[str], duration_minutes: int = 30, private: bool = False
    ) -> str:
        """Book a meeting.

        Args:
            title: The meeting's title.
            attendees: E-mail addresses of the attendees.
            duration_minutes: How long it lasts.
            private: Whether the details are hidden.
        """
        return title

    out: dict[str, tuple[Any, dict[str, Any]]] = {}
    models = [GetWeather, CreateOrder, SearchDocs, Pay, Tag]

    from langchain_core.utils.function_calling import convert_to_openai_tool

    out["langchain-convert-to-openai-tool.tools.json"] = (
        [convert_to_openai_tool(t) for t in [*models, book_meeting]],
        {
            "registry": "PyPI",
            "package": "langchain-core",
            "version": importlib.metadata.version("langchain-core"),
            "how": "langchain_core.utils.function_calling.convert_to_openai_tool on five "
            "pydantic models (one with a real union, one with a map) and one typed function",
        },
    )
    import openai

    out["openai-pydantic-function-tool.tools.json"] = (
        [openai.pydantic_function_tool(m) for m in models],
        {
            "registry": "PyPI",
            "package": "openai",
            "version": importlib.metadata.version("openai"),
            "how": "openai.pydantic_function_tool on five pydantic models (strict mode; one "
            "with a real union, one with a map)",
        },
    )
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="placeholder")  # builds declarations; calls nothing
    declarations = [
        types.FunctionDeclaration.from_callable(client=client, callable=book_meeting).model_dump(
            mode="json", exclude_none=True
        )
    ]

    def get_weather(city: str, days: int = 1, unit: str = "celsius") -> str:
        """Get the current weather in a city."""
        return city

    declarations.append(
        types.FunctionDeclaration.from_callable(client=client, callable=get_weather).model_dump(
            mode="json", exclude_none=True
        )
    )
    json_schema = [
        types.FunctionDeclaration.from_callable(
            client=client, callable=f, use_json_schema=True
        ).model_dump(mode="json", exclude_none=True)
        for f in (book_meeting, get_weather)
    ]
    out["gemini-from-callable-json-schema.tools.json"] = (
        {"functionDeclarations": json_schema},
        {
            "registry": "PyPI",
            "package": "google-genai",
            "version": importlib.metadata.version("google-genai"),
            "how": "google.genai.types.FunctionDeclaration.from_callable(use_json_schema=True) "
            "on two typed functions (parametersJsonSchema)",
        },
    )
    out["gemini-from-callable.tools.json"] = (
        {"functionDeclarations": declarations},
        {
            "registry": "PyPI",
            "package": "google-genai",
            "version": importlib.metadata.version("google-genai"),
            "how": "google.genai.types.FunctionDeclaration.from_callable on two typed functions",
        },
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--npm", type=Path, help="a folder where the npm servers are installed")
    parser.add_argument("--only", help="collect this one fixture (e.g. mcp-fetch)")
    parser.add_argument("--no-frameworks", action="store_true")
    args = parser.parse_args(argv)
    sources_path = OUT / SOURCES
    sources = json.loads(sources_path.read_text()) if sources_path.exists() else {}
    sources.update(collect_servers(args.npm, args.only))
    if not args.no_frameworks and not args.only:
        for name, (data, source) in frameworks().items():
            (OUT / name).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
            sources[name] = source
            print(f"{name}: written ({source['package']} {source['version']})")
    sources_path.write_text(json.dumps(dict(sorted(sources.items())), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
