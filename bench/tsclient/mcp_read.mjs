// mcp_read.mjs drives MCP servers with the official TypeScript SDK's client
// for callbench's mcp mode (-client ts): sequential reads of one file
// through each server over stdio, and spawns of `cat` of that file from
// this same node process, interleaved call by call with the order turning
// by one each round, as callbench does with the Go SDK's client. Usage:
//
//	node mcp_read.mjs SPEC.json
//
// SPEC: {"sdk": DIR of @modelcontextprotocol/sdk, "dir", "file" (absolute),
// "want" (the file's first bytes, which every answer must hold), "n",
// "warmup", "pause_ms", "servers": [{"system", "argv", "tool", "args"}]}.
// It prints {"samples_ms": [[cat...], [server 1...], ...]}.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const { Client } = await import(path.join(spec.sdk, 'dist/esm/client/index.js'));
const { StdioClientTransport } = await import(path.join(spec.sdk, 'dist/esm/client/stdio.js'));

const size = readFileSync(spec.file).length;
const clients = [];
for (const s of spec.servers) {
  const client = new Client({ name: 'callbench-ts', version: '1' });
  await client.connect(new StdioClientTransport({ command: s.argv[0], args: s.argv.slice(1), cwd: spec.dir, stderr: 'inherit' }));
  clients.push(client);
}

const read = async (j) => {
  const s = spec.servers[j];
  const res = await clients[j].callTool({ name: s.tool, arguments: s.args });
  const text = res.content?.[0]?.text ?? '';
  if (res.isError || !text.includes(spec.want)) {
    throw new Error(`${s.system}: the answer lacks the file's text: ${JSON.stringify(res).slice(0, 300)}`);
  }
};
const cat = () => new Promise((resolve, reject) => {
  const c = spawn('cat', [spec.file], { stdio: ['ignore', 'pipe', 'inherit'] });
  let n = 0;
  c.stdout.on('data', (d) => { n += d.length; });
  c.on('error', reject);
  c.on('close', (code) => (code === 0 && n === size ? resolve() : reject(new Error(`cat: exit ${code}, ${n} of ${size} bytes`))));
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const k = spec.servers.length + 1;
const samples = Array.from({ length: k }, () => []);
for (let i = 0; i < spec.warmup + spec.n; i++) {
  for (let o = 0; o < k; o++) {
    const j = (i + o) % k;
    if (spec.pause_ms > 0) await sleep(spec.pause_ms);
    const t = process.hrtime.bigint();
    await (j === 0 ? cat() : read(j - 1));
    const d = Number(process.hrtime.bigint() - t) / 1e6;
    if (i >= spec.warmup) samples[j].push(d);
  }
}
for (const c of clients) await c.close();
process.stdout.write(JSON.stringify({ samples_ms: samples }) + '\n');
