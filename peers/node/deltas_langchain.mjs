// LangChain.js assembling a streamed tool call: a deltas peer speaking the deltas process protocol
// (docs/adapter-protocols.md, "The deltas track"), one long-lived node process, on
// @langchain/core alone.
//
// LangChain.js's chat model integrations turn each provider event into an `AIMessageChunk`
// whose `tool_call_chunks` carry the call's pieces; the caller merges the chunks with `concat`
// (what `model.stream()` users write, and what `invoke` does under a streaming callback), and
// the merged message's `tool_calls` / `invalid_tool_calls` come from @langchain/core's
// `collapseToolCallChunks`: the pieces joined, parsed with its partial-JSON parser, a call
// without an id or whose arguments are not an object landing in `invalid_tool_calls`. The
// integrations are packages of their own (`@langchain/openai` needs node 22), so rather than
// add them, their stream conversions are mirrored below, one per wire shape, from the
// langchainjs source (libs/providers):
//
// - OpenAI Chat Completions: `convertCompletionsDeltaToBaseMessageChunk`
//   (langchain-openai/src/converters/completions.ts) as `_streamResponseChunks` of
//   chat_models/completions.ts calls it: the first choice's delta, the role carried over from an
//   earlier delta, one tool_call_chunk per `delta.tool_calls[]` entry (`index`, `id`,
//   `function.name`, `function.arguments`); `finish_reason` is not read.
// - OpenAI Responses: `convertResponsesDeltaToChatGenerationChunk` (converters/responses.ts):
//   `response.output_item.added` of a `function_call` gives name, `call_id` and the item's
//   `arguments` at `output_index`, each `response.function_call_arguments.delta` its `delta`;
//   `.done` and `response.output_item.done` are not read. Its `response.completed` /
//   `.incomplete` branch fills only metadata and usage (from `response.output`, which the
//   corpus's terminal events do not carry): left out, it never reaches `tool_calls`.
// - Anthropic Messages: `_makeMessageChunkFromAnthropicEvent` (langchain-anthropic/src/utils/
//   message_outputs.ts), with tools declared (content kept as blocks): `content_block_start`
//   of a `tool_use` gives id, name and `args: ""` at the block's index, each `input_json_delta`
//   its `partial_json`; `stop_reason` (`max_tokens` included) only lands in additional_kwargs.
// - Gemini: `convertResponseContentToChatGenerationChunk` (langchain-google-genai/src/utils/
//   common.ts): each `functionCall` part a whole tool_call_chunk (`JSON.stringify(args)`, a
//   fresh id, no index). A candidate without `content` makes it throw (a TypeError on
//   `candidateContent.parts`), as it does in the integration: that stream's answer is null.
// - Vertex AI's `partialArgs` (`jsonPath`, `willContinue`): no LangChain.js integration reads
//   them (none mentions `partialArgs`), so such a stream is refused, never guessed at.
//
// The answer is the merged message's first `tool_calls` entry as it stands (LangChain checks no
// schema and no tool name), or null when there is none. With `--progressive`, every top-level
// value of that entry's partial `args` is committed as it appears or changes after each event
// (what a UI showing a call as it streams does), the twin of deltas_peers.py's
// `langchain_progressive`.
import readline from "node:readline";
import { randomUUID } from "node:crypto";
import { AIMessageChunk, ChatMessageChunk } from "@langchain/core/messages";
import { concat } from "@langchain/core/utils/stream";

// The protocol owns stdout: anything LangChain logs goes to stderr (core warns with
// console.warn, the OpenAI integration logs unsupported content with console.log).
for (const level of ["log", "info", "debug"]) console[level] = (...args) => console.error(...args);

const PROGRESSIVE = process.argv.includes("--progressive");

// ------------------------------------------------------------------ OpenAI Chat Completions

function completionsDelta(delta, rawResponse, defaultRole) {
  const role = delta.role ?? defaultRole;
  const content = delta.content ?? "";
  let additional_kwargs;
  if (delta.function_call) additional_kwargs = { function_call: delta.function_call };
  else if (delta.tool_calls) additional_kwargs = { tool_calls: delta.tool_calls };
  else additional_kwargs = {};
  const response_metadata = { model_provider: "openai", usage: { ...rawResponse.usage } };
  if (role === "assistant") {
    const toolCallChunks = [];
    if (Array.isArray(delta.tool_calls)) {
      for (const rawToolCall of delta.tool_calls) {
        toolCallChunks.push({
          name: rawToolCall.function?.name,
          args: rawToolCall.function?.arguments,
          id: rawToolCall.id,
          index: rawToolCall.index,
          type: "tool_call_chunk",
        });
      }
    }
    return new AIMessageChunk({
      content,
      tool_call_chunks: toolCallChunks,
      additional_kwargs,
      id: rawResponse.id,
      response_metadata,
    });
  }
  // user, system, developer, function and tool roles never come in an assistant's stream;
  // the converter's last branch stands for them here
  return new ChatMessageChunk({ content, role, response_metadata });
}

function openaiChat() {
  let defaultRole;
  return (data) => {
    const choice = data?.choices?.[0];
    if (!choice) return null;
    const { delta } = choice;
    if (!delta) return null;
    const chunk = completionsDelta(delta, data, defaultRole);
    defaultRole = delta.role ?? defaultRole;
    return typeof chunk.content === "string" ? chunk : null; // non-string content is skipped
  };
}

// ------------------------------------------------------------------ OpenAI Responses

function openaiResponses() {
  return (event) => {
    const tool_call_chunks = [];
    let id;
    if (event.type === "response.output_item.added" && event.item?.type === "function_call") {
      tool_call_chunks.push({
        type: "tool_call_chunk",
        name: event.item.name,
        args: event.item.arguments,
        id: event.item.call_id,
        index: event.output_index,
      });
    } else if (event.type === "response.function_call_arguments.delta") {
      tool_call_chunks.push({ type: "tool_call_chunk", args: event.delta, index: event.output_index });
    } else if (event.type === "response.created") {
      id = event.response?.id;
    } else if (event.type === "response.completed" || event.type === "response.incomplete") {
      id = event.response?.id;
    } else {
      return null; // `.done` events, and every event the converter has no branch for
    }
    return new AIMessageChunk({
      id,
      content: [],
      tool_call_chunks,
      additional_kwargs: {},
      response_metadata: { model_provider: "openai" },
    });
  };
}

// ------------------------------------------------------------------ Anthropic Messages

function anthropic() {
  const response_metadata = { model_provider: "anthropic" };
  return (data) => {
    if (data.type === "message_start") {
      const { content, usage, ...rest } = data.message ?? {};
      const kept = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined && v !== null));
      return new AIMessageChunk({ content: [], additional_kwargs: kept, response_metadata, id: data.message?.id });
    }
    if (data.type === "message_delta") {
      return new AIMessageChunk({ content: [], additional_kwargs: { ...data.delta } });
    }
    if (data.type === "content_block_start" && data.content_block?.type === "tool_use") {
      const block = data.content_block;
      return new AIMessageChunk({
        content: [{ index: data.index, ...block, input: "" }],
        response_metadata,
        additional_kwargs: {},
        tool_call_chunks: [{ id: block.id, index: data.index, name: block.name, args: "" }],
      });
    }
    if (data.type === "content_block_start" && data.content_block?.type === "text") {
      if (data.content_block.text === undefined) return null;
      return new AIMessageChunk({ content: [{ index: data.index, ...data.content_block }], response_metadata, additional_kwargs: {} });
    }
    if (data.type === "content_block_delta" && data.delta?.type === "text_delta") {
      return new AIMessageChunk({ content: [{ index: data.index, ...data.delta, type: "text" }], response_metadata });
    }
    if (data.type === "content_block_delta" && data.delta?.type === "input_json_delta") {
      return new AIMessageChunk({
        content: [{ index: data.index, input: data.delta.partial_json, type: data.delta.type }],
        response_metadata,
        additional_kwargs: {},
        tool_call_chunks: [{ index: data.index, args: data.delta.partial_json }],
      });
    }
    return null; // content_block_stop, message_stop, ping: no chunk
  };
}

// ------------------------------------------------------------------ Gemini

function gemini() {
  return (response) => {
    if (!response.candidates || response.candidates.length === 0) return null;
    const [candidate] = response.candidates;
    const { content: candidateContent } = candidate;
    // the integration reads `candidateContent.parts` unguarded: no content throws here as there
    const functionCalls = candidateContent.parts?.reduce((acc, p) => {
      if ("functionCall" in p && p.functionCall) {
        acc.push({ ...p, id: typeof p.functionCall.id === "string" ? p.functionCall.id : randomUUID() });
      }
      return acc;
    }, []);
    const parts = candidateContent?.parts;
    let content;
    if (Array.isArray(parts) && parts.every((p) => "text" in p && !p.thought)) content = parts.map((p) => p.text).join("");
    else if (Array.isArray(parts)) {
      content = parts.map((p) => {
        if ("text" in p) return { type: "text", text: p.text };
        if ("functionCall" in p) return { type: "functionCall", functionCall: p.functionCall };
        return p;
      });
    } else content = [];
    const tool_call_chunks = (functionCalls ?? []).map((fc) => ({
      type: "tool_call_chunk",
      id: fc.id,
      name: fc.functionCall.name,
      args: JSON.stringify(fc.functionCall.args),
    }));
    return new AIMessageChunk({
      content: content || "",
      name: candidateContent.role,
      tool_call_chunks,
      additional_kwargs: {},
      response_metadata: { model_provider: "google-genai" },
    });
  };
}

// ------------------------------------------------------------------ the stream

const isVertexPartial = (event) =>
  (event?.candidates ?? []).some((c) =>
    (c?.content?.parts ?? []).some((p) => p?.functionCall && ("partialArgs" in p.functionCall || "willContinue" in p.functionCall)),
  );

function converterFor(first) {
  if (first && "choices" in first) return openaiChat();
  if (String(first?.type ?? "").startsWith("response.")) return openaiResponses();
  if (first?.type === "message_start" || String(first?.type ?? "").startsWith("content_block")) return anthropic();
  if (first && "candidates" in first) return gemini();
  return null;
}

class Stream {
  constructor() {
    this.convert = undefined;
    this.merged = undefined;
    this.failed = false;
    this.vertex = false;
    this.shown = new Map();
  }

  push(event) {
    if (this.convert === undefined) this.convert = converterFor(event);
    if (isVertexPartial(event)) this.vertex = true;
    if (this.convert === null || this.failed || this.vertex) return;
    try {
      const chunk = this.convert(event);
      if (chunk) this.merged = this.merged === undefined ? chunk : concat(this.merged, chunk);
    } catch (err) {
      this.failed = true; // the integration's stream throws: the caller gets no message
      process.stderr.write(`langchain: ${err?.message ?? err}\n`);
    }
  }

  call() {
    if (this.merged === undefined || this.failed || this.vertex) return null;
    const first = this.merged.tool_calls?.[0];
    return first ? { name: first.name, arguments: first.args } : null;
  }

  commits() {
    if (!PROGRESSIVE) return [];
    const out = [];
    for (const [key, value] of Object.entries(this.call()?.arguments ?? {})) {
      const spelled = stable(value);
      if (this.shown.get(key) !== spelled) {
        this.shown.set(key, spelled);
        out.push({ path: [key], value });
      }
    }
    return out;
  }
}

function stable(value) {
  if (Array.isArray(value)) return `[${value.map(stable).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${stable(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
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
    streams.set(id, new Stream());
  } else if ("event" in message && streams.has(id)) {
    const stream = streams.get(id);
    stream.push(message.event);
    process.stdout.write(JSON.stringify({ id, commits: stream.commits() }) + "\n");
  } else if (message.end === true && streams.has(id)) {
    const stream = streams.get(id);
    streams.delete(id);
    process.stdout.write(JSON.stringify({ id, call: stream.call() }) + "\n");
  }
}
