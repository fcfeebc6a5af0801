// The official MCP TypeScript SDK's client, driven line by line for
// tests/integration/test_mcp.py: it spawns the server command given as
// arguments over stdio (StdioClientTransport), connects (initialize and
// the initialized notification, the SDK's own checks of the answer), then
// reads one JSON request per line on stdin and writes one JSON answer per
// line on stdout (with the request's "tag"):
//   {"op":"list"}                           -> {"ok":true,"result":{tools}}
//   {"op":"call","name":N,"arguments":{..}} -> {"ok":true,"result":{content,isError}}
//   {"op":"ping"}                           -> {"ok":true,"result":{}}
// A request the SDK throws for is {"ok":false,"error":MESSAGE,"code":CODE}.
// The first line out says what the server announced at initialize.
//
//   BUREAU_MCP_SDK=.deps/mcp/node_modules/@modelcontextprotocol/sdk \
//       node tests/mcp/client.mjs build/bureau mcp NAME
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";

const sdk = process.env.BUREAU_MCP_SDK;
if (!sdk) {
	console.error("client.mjs: set BUREAU_MCP_SDK to the SDK's directory");
	process.exit(2);
}
const load = (p) => import(pathToFileURL(path.join(sdk, "dist/esm", p)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const { LATEST_PROTOCOL_VERSION } = await load("types.js");

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({
	command,
	args,
	env: process.env,
	stderr: "inherit",
});
const client = new Client({ name: "bureau-test", version: "1.0.0" });
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

await client.connect(transport);
out({
	connected: true,
	server: client.getServerVersion(),
	capabilities: client.getServerCapabilities(),
	instructions: client.getInstructions(),
	latest: LATEST_PROTOCOL_VERSION,
	pid: transport.pid,
});

// Requests run concurrently, as an MCP host's may: each answer carries
// its request's "tag", in the order the answers come.
const rl = readline.createInterface({ input: process.stdin });
const pending = [];
for await (const line of rl) {
	if (!line.trim()) continue;
	const req = JSON.parse(line);
	pending.push(
		(async () => {
			try {
				let result;
				if (req.op === "list") result = await client.listTools();
				else if (req.op === "call")
					result = await client.callTool(
						{ name: req.name, arguments: req.arguments },
						undefined,
						{ timeout: req.timeout_ms || 120000 },
					);
				else if (req.op === "ping") result = await client.ping();
				else throw new Error("client.mjs: unknown op " + req.op);
				out({ tag: req.tag, ok: true, result });
			} catch (e) {
				out({ tag: req.tag, ok: false, error: String((e && e.message) || e), code: e && e.code });
			}
		})(),
	);
}
await Promise.all(pending);
await client.close();
