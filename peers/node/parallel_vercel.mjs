// The Vercel AI SDK reading a turn of several tool calls: a parallel-track peer speaking the
// JSON Lines stream protocol (docs/adapter-protocols.md, "The parallel track"): one line
// {"id", "text", "tools"} in, {"id", "call": [...] | null} out, one long-lived node process.
//
// The turn's text is handed to the SDK's own provider as the provider's response body, the way
// a JS user meets it: an OpenAI message with `tool_calls` as a Chat Completions response
// (`createOpenAI(...).chat`), a list of Anthropic `tool_use` blocks as a Messages response
// (`createAnthropic`), each given a `fetch` that answers with that body. `generateText` runs
// with the turn's tools declared through `jsonSchema(parameters)` and reads the calls into
// `result.toolCalls`, in order: each call the SDK parsed is `{name, arguments}`, each it marked
// `invalid` (no such tool, arguments that are not JSON, or, with --ajv, rejected by the schema)
// is `null` in its slot. A text that does not parse, a bare array (neither provider's wire form,
// as the Python sdk_parsed peer) and a response the provider's own schema rejects refuse the turn.
//
// Plain: `jsonSchema(parameters)`, the docs' form for a JSON Schema, which validates nothing.
// --ajv: the same with the `validate` option the docs give for it, an Ajv validator (no coercion).
import readline from "node:readline";
import { generateText, jsonSchema, tool } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { createAnthropic } from "@ai-sdk/anthropic";
import Ajv from "ajv";

// console.info is stdout: the SDK's first warning would put a line on the protocol's stdout.
globalThis.AI_SDK_LOG_WARNINGS = ({ warnings, provider, model }) => {
  for (const w of warnings) process.stderr.write(`AI SDK warning (${provider} / ${model}): ${JSON.stringify(w)}\n`);
};

const useAjv = process.argv.includes("--ajv");
const ajv = new Ajv({ strict: false, logger: false });
const validators = new Map();

function validatorFor(parameters) {
  const key = JSON.stringify(parameters);
  if (!validators.has(key)) validators.set(key, ajv.compile(parameters));
  const check = validators.get(key);
  return (value) => (check(value) ? { success: true, value } : { success: false, error: new Error(ajv.errorsText(check.errors)) });
}

function respond(body) {
  return async () => new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json" } });
}

function modelFor(value) {
  if (value && typeof value === "object" && !Array.isArray(value) && Array.isArray(value.tool_calls)) {
    const body = {
      id: "chatcmpl-0",
      object: "chat.completion",
      created: 0,
      model: "model",
      choices: [{ index: 0, message: value, finish_reason: "tool_calls" }],
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    };
    return createOpenAI({ apiKey: "none", fetch: respond(body) }).chat("model");
  }
  if (Array.isArray(value) && value.length > 0 && value.every((b) => b && typeof b === "object" && b.type === "tool_use")) {
    const body = {
      type: "message",
      id: "msg_0",
      role: "assistant",
      model: "model",
      content: value,
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0 },
    };
    return createAnthropic({ apiKey: "none", fetch: respond(body) })("model");
  }
  return null;
}

function declare(tools) {
  const declared = {};
  for (const t of tools) {
    const fn = (t && t.function) || {};
    if (typeof fn.name !== "string") continue;
    const parameters = fn.parameters || { type: "object", properties: {} };
    const schema = useAjv ? jsonSchema(parameters, { validate: validatorFor(parameters) }) : jsonSchema(parameters);
    declared[fn.name] = tool({ description: fn.description || "", inputSchema: schema });
  }
  return declared;
}

async function answer(text, tools) {
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  const model = modelFor(value);
  if (model === null) return null;
  try {
    const result = await generateText({ model, prompt: "-", tools: declare(tools), maxOutputTokens: 1024, maxRetries: 0 });
    return result.toolCalls.map((c) => (c.invalid ? null : { name: c.toolName, arguments: c.input }));
  } catch {
    return null; // the provider's response schema rejected the body: the SDK throws, no calls
  }
}

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const row = JSON.parse(line);
  process.stdout.write(JSON.stringify({ id: row.id, call: await answer(row.text, row.tools) }) + "\n");
}
