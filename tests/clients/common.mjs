// What the test clients on the pinned TypeScript SDK share: their command line (one required
// option, then an HTTP URL or a command to spawn over stdio) and the transport it names.

import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

// `--NAME VALUE` (required), then either `--url URL [--token TOKEN]` or `-- COMMAND [ARGS...]`.
export function parseArgs(argv, name, placeholder) {
  const options = { [name]: null, url: null, token: null, command: [] };
  const flags = [`--${name}`, "--url", "--token"];
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i];
    if (arg === "--") {
      options.command = argv.slice(i + 1);
      break;
    } else if (flags.includes(arg)) {
      options[arg.slice(2)] = argv[i + 1];
      i += 1;
    } else {
      throw new Error(`unknown argument ${arg}`);
    }
  }
  if (options[name] === null) throw new Error(`--${name} ${placeholder} is required`);
  if ((options.url === null) === (options.command.length === 0)) {
    throw new Error("give exactly one of --url URL or -- COMMAND ARGS...");
  }
  return options;
}

export function transportFor(options) {
  if (options.url !== null) {
    const headers = options.token ? { Authorization: `Bearer ${options.token}` } : {};
    return new StreamableHTTPClientTransport(new URL(options.url), { requestInit: { headers } });
  }
  const [command, ...args] = options.command;
  return new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
}
