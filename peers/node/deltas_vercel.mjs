// The Vercel AI SDK assembling a streamed tool call: a deltas peer speaking the deltas process
// protocol (docs/adapter-protocols.md, "The deltas track"), one long-lived node process.
//
// Each stream's events are handed to the SDK's own provider, as its docs wire one: `createOpenAI`
// (`.chat` for Chat Completions chunks, `.responses` for Responses events), `createAnthropic`,
// `createGoogleGenerativeAI`, each given a `fetch` that answers with those events as the
// provider's server-sent events; `streamText` runs with the case's tools declared through
// `jsonSchema(parameters)` (the docs' form for JSON Schema, which validates nothing), and the
// answer is the first of `result.toolCalls` (none, or an `invalid` one: a refusal). The SDK
// commits nothing before the end. Vertex's `partialArgs` is not a form it reads: refused.
import readline from "node:readline";
import { streamText, jsonSchema, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createGoogleGenerativeAI } from "@ai-sdk/google";

// The SDK logs its warnings with console.info / console.warn, and console.info is stdout: the
// first warning of a process (Anthropic's "maxOutputTokens ... compatibility mode" for an
// unknown model id) put "AI SDK Warning System: ..." on the protocol's stdout, a line that is
// not the answer, so that stream errored and the process was restarted. The SDK's documented
// switch, AI_SDK_LOG_WARNINGS, takes a function: the warnings go to stderr.
globalThis.AI_SDK_LOG_WARNINGS = ({ warnings, provider, model }) => {
  for (const w of warnings) process.stderr.write(`AI SDK warning (${provider} / ${model}): ${JSON.stringify(w)}\n`);
};

function sse(events, named, done) {
  const lines = events.map((e) => (named ? `event: ${e.type}\n` : "") + `data: ${JSON.stringify(e)}\n\n`);
  if (done) lines.push("data: [DONE]\n\n");
  return async () => new Response(lines.join(""), { status: 200, headers: { "content-type": "text/event-stream" } });
}

function modelFor(events) {
  const first = events[0] || {};
  if ("choices" in first) return createOpenAI({ apiKey: "none", fetch: sse(events, false, true) }).chat("model");
  if (String(first.type || "").startsWith("response.")) {
    return createOpenAI({ apiKey: "none", fetch: sse(events, true, false) }).responses("model");
  }
  if (first.type === "message_start") return createAnthropic({ apiKey: "none", fetch: sse(events, true, false) })("model");
  const call = first.candidates?.[0]?.content?.parts?.[0]?.functionCall;
  if (call && "args" in call) return createGoogleGenerativeAI({ apiKey: "none", fetch: sse(events, false, false) })("model");
  return null;
}

async function answer(events, tools) {
  const model = modelFor(events);
  if (model === null) return null;
  const declared = {};
  for (const t of tools) {
    const fn = t.function || {};
    declared[fn.name] = tool({ description: fn.description || "", inputSchema: jsonSchema(fn.parameters || { type: "object", properties: {} }) });
  }
  try {
    const result = streamText({ model, prompt: "-", tools: declared, onError: () => {} });
    const calls = await result.toolCalls;
    const first = calls[0];
    if (!first || first.invalid) return null;
    return { name: first.toolName, arguments: first.input };
  } catch {
    return null;
  }
}

const streams = new Map();
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    continue;
  }
  const id = message.id;
  if ("tools" in message) {
    streams.set(id, { tools: message.tools, events: [] });
  } else if ("event" in message && streams.has(id)) {
    streams.get(id).events.push(message.event);
    process.stdout.write(JSON.stringify({ id, commits: [] }) + "\n");
  } else if (message.end === true && streams.has(id)) {
    const { tools, events } = streams.get(id);
    streams.delete(id);
    process.stdout.write(JSON.stringify({ id, call: await answer(events, tools) }) + "\n");
  }
}
