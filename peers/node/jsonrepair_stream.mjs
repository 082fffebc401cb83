// jsonrepair (npm) as a --stream adapter: JSON Lines {"id","text","tools"} in, {"id","call"} out.
// Plain: repair the text, take the first call, pass it on. With --ajv: the arguments then go
// through Ajv with its coercing options (coerceTypes "array", useDefaults, removeAdditional),
// and the call is refused unless they validate. The envelope steps mirror peers/glue.py.
import { createInterface } from "node:readline";
import { jsonrepair } from "jsonrepair";
import Ajv from "ajv";

const useAjv = process.argv.includes("--ajv");
const ajv = new Ajv({ coerceTypes: "array", useDefaults: true, removeAdditional: "all", strict: false });
const ARGUMENT_KEYS = ["arguments", "parameters", "input"];
const FUNCTION_KEYS = ["function", "function_call"];

function parse(text) {
  return JSON.parse(jsonrepair(text));
}

function firstCall(value) {
  if (Array.isArray(value)) value = value.length ? value[0] : null;
  if (value && typeof value === "object" && Array.isArray(value.tool_calls)) {
    value = value.tool_calls.length ? value.tool_calls[0] : null;
  }
  if (value && typeof value === "object") {
    const key = FUNCTION_KEYS.find((k) => value[k] && typeof value[k] === "object");
    if (key) value = value[key];
  }
  return value && typeof value === "object" && typeof value.name === "string" ? value : null;
}

function normalise(text, tools) {
  const found = firstCall(parse(text));
  if (!found) return null;
  const key = ARGUMENT_KEYS.find((k) => k in found);
  let args = key ? found[key] : {};
  if (typeof args === "string") args = parse(args);
  if (!args || typeof args !== "object" || Array.isArray(args)) return null;
  const tool = tools.find((t) => t && t.function && t.function.name === found.name);
  if (!tool) return null;
  if (useAjv) {
    const validate = ajv.compile(tool.function.parameters || { type: "object", properties: {} });
    if (!validate(args)) return null;
  }
  return { name: found.name, arguments: args };
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const row = JSON.parse(line);
  let answer = null;
  try {
    answer = normalise(row.text, row.tools);
  } catch {
    answer = null; // jsonrepair throws on text it cannot repair: a refusal
  }
  process.stdout.write(JSON.stringify({ id: row.id, call: answer }) + "\n");
}
