// LangChain.js reading a turn of several tool calls: a parallel-track peer speaking the JSON
// Lines stream protocol (docs/adapter-protocols.md, "The parallel track"): one line
// {"id", "text", "tools"} in, {"id", "call": [...] | null} out, one long-lived node process.
//
// The JS twin of parallel_peers.py's `langchain_message`, with @langchain/core. The calls are
// found as there (an array's items, an OpenAI message's `tool_calls`, or one call), each put in
// OpenAI's wire form, the form a chat model integration hands to LangChain, then read as
// @langchain/openai reads them when it builds an `AIMessage`: `parseToolCall` on every raw call
// (its `tool_calls`), a call it cannot parse being an `invalid_tool_calls` entry; the answer
// keeps one slot per raw call, `null` for an invalid one. As in the Python peers, a parsed call
// stands when its name is a declared tool's, exactly, and its arguments are an object; text
// that does not parse refuses the turn. (`JsonOutputToolsParser` over that message lists its
// `tool_calls` only, so it drops the invalid slots and scores the same calls: not a peer of its own.)
import readline from "node:readline";
import { parseToolCall } from "@langchain/core/output_parsers/openai_tools";

const ARGUMENT_KEYS = ["arguments", "input", "parameters"];

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

function turnEntries(value) {
  const out = [];
  for (const item of Array.isArray(value) ? value : [value]) {
    if (isObject(item) && Array.isArray(item.tool_calls)) out.push(...item.tool_calls);
    else out.push(item);
  }
  return out;
}

function wire(entry) {
  if (!isObject(entry)) return null;
  if (isObject(entry.function)) return entry;
  const key = ARGUMENT_KEYS.find((k) => k in entry);
  const raw = key === undefined ? {} : entry[key];
  return {
    id: entry.id ?? "",
    type: "function",
    function: { name: entry.name, arguments: typeof raw === "string" ? raw : JSON.stringify(raw) },
  };
}

function declared(name, args, tools) {
  const known = tools.some((t) => isObject(t) && isObject(t.function) && t.function.name === name);
  return typeof name === "string" && isObject(args) && known ? { name, arguments: args } : null;
}

function answer(text, tools) {
  let entries;
  try {
    entries = turnEntries(JSON.parse(text));
  } catch {
    return null;
  }
  return entries.map((entry) => {
    const raw = wire(entry);
    let parsed;
    try {
      parsed = raw === null ? undefined : parseToolCall(raw, { returnId: true });
    } catch {
      return null; // an invalid_tool_calls entry (makeInvalidToolCall) in the message
    }
    return parsed === undefined ? null : declared(parsed.name, parsed.args, tools);
  });
}

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const row = JSON.parse(line);
  process.stdout.write(JSON.stringify({ id: row.id, call: answer(row.text, row.tools) }) + "\n");
}
