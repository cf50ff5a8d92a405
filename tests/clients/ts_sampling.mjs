// An MCP client on the pinned TypeScript SDK that declares the sampling capability and answers
// `sampling/createMessage` as a model would, driven by tests/clients/test_sampling_clients.py.
//
// It connects to Switchboard (running the toy connector of tests/integration/peers/toy_bridge.py),
// reads its inbox until the toy's scenario is in (`toy-m3`), publishes `ask: PROMPT` to the toy's
// lobby (the toy then asks for inference), and reads until the toy's `toy-answer-*` message
// arrives. It prints one JSON report on stdout: {asked: [sampling params], answer: text}. It
// decides nothing: the Python test asserts on the report.
//
// Usage:
//   node ts_sampling.mjs --prompt PROMPT --url http://127.0.0.1:PORT/mcp [--token TOKEN]
//   node ts_sampling.mjs --prompt PROMPT -- COMMAND [ARGS...]     (stdio: the client spawns it)

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { parseArgs, transportFor } from "./common.mjs";
import { CreateMessageRequestSchema } from "@modelcontextprotocol/sdk/types.js";


async function readUntil(client, seen, done, deadline) {
  while (!done(seen)) {
    if (Date.now() > deadline) throw new Error(`timed out; seen ${JSON.stringify(seen)}`);
    const result = await client.callTool({ name: "inbox", arguments: { wait_seconds: 5 } });
    if (result.isError) throw new Error(`inbox refused: ${JSON.stringify(result.content)}`);
    seen.push(...result.structuredContent.messages);
  }
}

async function main() {
  const options = parseArgs(process.argv.slice(2), "prompt", "PROMPT");
  const client = new Client(
    { name: "switchboard-ts-sampling", version: "1.0.0" },
    { capabilities: { sampling: {} } },
  );
  const asked = [];
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    asked.push(request.params);
    const last = request.params.messages[request.params.messages.length - 1].content;
    return {
      role: "assistant",
      content: { type: "text", text: `ts says: ${last.text}` },
      model: "ts-model-1",
      stopReason: "endTurn",
    };
  });
  await client.connect(transportFor(options));
  const deadline = Date.now() + 60_000;
  const seen = [];
  let answer = null;
  try {
    await readUntil(client, seen, (s) => s.some((m) => m.message_id === "toy-m3"), deadline);
    const published = await client.callTool({
      name: "channel_publish",
      arguments: { channel: "toy:lobby", text: `ask: ${options.prompt}` },
    });
    if (published.isError) throw new Error(`publish refused: ${JSON.stringify(published)}`);
    const answered = (s) => s.find((m) => m.message_id.startsWith("toy-answer-"));
    await readUntil(client, seen, answered, deadline);
    answer = answered(seen).text;
  } finally {
    await client.close();
  }
  process.stdout.write(`${JSON.stringify({ asked, answer })}\n`);
}

main().catch((error) => {
  process.stderr.write(`ts_sampling: ${error?.stack ?? error}\n`);
  process.exit(2);
});
