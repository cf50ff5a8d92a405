// A real MCP client built on the TypeScript SDK (@modelcontextprotocol/sdk, the one Claude
// Desktop, Claude Code, Cursor and the MCP Inspector use), driven by
// tests/clients/test_ts_clients.py.
//
// It connects to Switchboard, lists the tools (which makes the SDK cache and enforce each
// tool's outputSchema, as those clients do), then makes the calls of a plan in order and prints
// one JSON report on stdout. It decides nothing: the Python test asserts on the report.
//
// Usage:
//   node ts_client.mjs --plan PLAN.json --url http://127.0.0.1:PORT/mcp [--token TOKEN]
//   node ts_client.mjs --plan PLAN.json -- COMMAND [ARGS...]      (stdio: the client spawns it)
//
// A plan is a JSON list of calls: {"label": "...", "tool": "...", "arguments": {...}}. An
// argument value {"$from": LABEL, "field": NAME} is the `field` of the structuredContent of
// the earlier call labelled LABEL (a stream's inference_id, say).
//
// The report: {"tools": [names], "calls": [{label, tool, arguments, threw, error, isError,
// text, structuredContent, meta}]}. `threw` is true when the SDK threw instead of returning a
// result (as it does with -32602 for structured content that does not match the outputSchema).

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { parseArgs, transportFor } from "./common.mjs";


function resolve(value, done) {
  if (value !== null && typeof value === "object" && "$from" in value) {
    const earlier = done.get(value.$from);
    if (earlier === undefined || !earlier.structuredContent) {
      throw new Error(`no structured result labelled ${value.$from} to take ${value.field} from`);
    }
    return earlier.structuredContent[value.field];
  }
  return value;
}

async function main() {
  const options = parseArgs(process.argv.slice(2), "plan", "PLAN.json");
  const plan = JSON.parse(readFileSync(options.plan, "utf8"));
  const client = new Client({ name: "switchboard-ts-compat", version: "1.0.0" });
  await client.connect(transportFor(options));
  const report = { tools: [], calls: [] };
  try {
    const listed = await client.listTools();
    report.tools = listed.tools.map((tool) => tool.name);
    const done = new Map();
    for (const step of plan) {
      const args = Object.fromEntries(
        Object.entries(step.arguments ?? {}).map(([k, v]) => [k, resolve(v, done)]),
      );
      const call = { label: step.label, tool: step.tool, arguments: args, threw: false };
      try {
        const result = await client.callTool({ name: step.tool, arguments: args });
        call.isError = result.isError === true;
        call.text = (result.content ?? [])
          .filter((block) => block.type === "text")
          .map((block) => block.text)
          .join("\n");
        call.structuredContent = result.structuredContent ?? null;
        call.meta = result._meta ?? null;
      } catch (error) {
        call.threw = true;
        call.error = String(error?.message ?? error);
      }
      done.set(step.label, call);
      report.calls.push(call);
    }
  } finally {
    await client.close();
  }
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((error) => {
  process.stderr.write(`ts_client: ${error?.stack ?? error}\n`);
  process.exit(2);
});
