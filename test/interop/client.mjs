// An MCP client no one here wrote: the official TypeScript SDK, driving
// airlock over stdio (spawning `airlock mcp`) or streamable HTTP (a running
// `airlock serve`). interop_test.go installs the SDK and runs this script.
//
// Environment:
//   MODE          "stdio" or "http"
//   AIRLOCK_BIN   the airlock binary (stdio)
//   AIRLOCK_ARGS  JSON array of extra arguments for `airlock mcp` (stdio)
//   MCP_URL       the server's /mcp URL (http)
//   MCP_TOKEN     the bearer token (http)
//   OUTSIDE       a file outside the grant, whose reading must be refused
//
// It prints one line per check and exits 1 if any failed.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const env = process.env;
let failed = 0;

function check(name, ok, detail) {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok ? "" : ": " + detail}`);
  if (!ok) failed++;
}

function textOf(res) {
  return (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");
}

function transport() {
  if (env.MODE === "stdio") {
    return new StdioClientTransport({
      command: env.AIRLOCK_BIN,
      args: ["mcp", ...JSON.parse(env.AIRLOCK_ARGS ?? "[]")],
      env: { PATH: env.PATH, AIRLOCK_STATE_DIR: env.AIRLOCK_STATE_DIR, HOME: env.HOME ?? "/tmp" },
      stderr: "inherit",
    });
  }
  return new StreamableHTTPClientTransport(new URL(env.MCP_URL), {
    requestInit: { headers: { Authorization: `Bearer ${env.MCP_TOKEN}` } },
  });
}

const client = new Client({ name: "airlock-interop", version: "1.0.0" });
await client.connect(transport());

// tools/list: every tool, with our schema.
const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
const want = ["edit_file", "glob", "grep", "read_file", "shell", "write_file"];
check("tools/list names", JSON.stringify(want.filter((n) => !names.includes(n))) === "[]", `got ${names}`);
const rf = tools.find((t) => t.name === "read_file");
check("read_file schema", rf?.inputSchema?.type === "object" && rf.inputSchema.properties?.path?.type === "string" &&
  rf.inputSchema.additionalProperties === false, JSON.stringify(rf?.inputSchema));
check("read_file description", (rf?.description ?? "").length > 40, rf?.description);
// Annotations: every hint stated, true to what the tool does.
const hints = (t) => { const a = t?.annotations ?? {}; return [a.readOnlyHint, a.destructiveHint, a.idempotentHint, a.openWorldHint].join(","); };
check("read_file annotations", hints(rf) === "true,false,true,false" && rf?.title === "Read file", JSON.stringify(rf?.annotations));
const sh = tools.find((t) => t.name === "shell");
check("shell annotations", hints(sh) === "false,true,false,true", JSON.stringify(sh?.annotations));

// read_file: labelled text and metadata.
let res = await client.callTool({ name: "read_file", arguments: { path: "hello.txt" } });
let text = textOf(res);
check("read_file text", text.startsWith("[airlock: read_file · ") && text.includes("hello from interop"), text);
check("read_file not an error", !res.isError, JSON.stringify(res));
check("read_file _meta", res._meta?.["airlock/call"]?.class === "ok" && res._meta["airlock/call"].call_id?.startsWith("call_"),
  JSON.stringify(res._meta));

// shell: output, exit line, exit code in _meta.
res = await client.callTool({ name: "shell", arguments: { command: "echo $((6*7)); exit 4" } });
text = textOf(res);
check("shell text", text.includes("42") && text.includes("[exit 4]"), text);
check("shell exit code", res._meta?.["airlock/call"]?.exit_code === 4, JSON.stringify(res._meta));
check("a non-zero exit is a result, not an error", res.isError !== true, JSON.stringify(res));

// A refused call is a result with isError, not a protocol error.
res = await client.callTool({ name: "read_file", arguments: { path: env.OUTSIDE } });
text = textOf(res);
check("refused is isError", res.isError === true, JSON.stringify(res));
check("refused text", text.includes("refused by grant") && !text.includes("interop secret"), text);
check("refused _meta", res._meta?.["airlock/call"]?.class === "refused", JSON.stringify(res._meta));

// Progress: a call longer than a second reports once a second.
let progress = [];
res = await client.callTool({ name: "shell", arguments: { command: "sleep 2.5; echo slept" } }, undefined, {
  onprogress: (p) => progress.push(p.progress),
  timeout: 60000,
});
check("progress notifications", progress.length >= 2 && progress[0] === 1 && progress[1] === 2, JSON.stringify(progress));
check("progress call result", textOf(res).includes("slept"), textOf(res));

// Cancellation: aborting a call ends it at once; the session goes on.
const abort = new AbortController();
const started = Date.now();
setTimeout(() => abort.abort("test cancels"), 500);
let rejected = false;
try {
  await client.callTool({ name: "shell", arguments: { command: "sleep 30" } }, undefined, { signal: abort.signal, timeout: 60000 });
} catch (e) {
  rejected = true;
}
check("cancelled call rejects quickly", rejected && Date.now() - started < 5000, `rejected=${rejected} after ${Date.now() - started}ms`);
res = await client.callTool({ name: "glob", arguments: { pattern: "*.txt" } });
check("session works after a cancel", textOf(res).includes("hello.txt"), textOf(res));

if (env.MODE === "http") {
  // What a page of another site would send: refused with 403, and a malformed
  // body gets a JSON-RPC error object.
  const post = (headers, body) => fetch(env.MCP_URL, {
    method: "POST",
    headers: { Authorization: `Bearer ${env.MCP_TOKEN}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream", ...headers },
    body,
  });
  let r = await post({ Origin: "https://evil.example" }, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
  check("foreign origin refused", r.status === 403, `status ${r.status}`);
  r = await post({}, "{");
  const j = await r.json().catch(() => null);
  check("malformed body is a JSON-RPC error", r.status === 400 && j?.error?.code === -32700 && j?.id === null, JSON.stringify(j));
}

await client.close();
console.log(failed === 0 ? "PASS" : `${failed} checks failed`);
process.exit(failed === 0 ? 0 : 1);
