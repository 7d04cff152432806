// An independent client of inboxd's /mcp: the official MCP TypeScript SDK
// over streamable HTTP, as a Node agent would use it. It lists the tools,
// calls list_threads, then wait_for_message (the Go test sends a message
// once the server logs the wait), and prints one JSON line of what it saw.
// The SDK checks each result's structured content against the tool's
// output schema.
//
// Install: npm ci --prefix mcp/testdata (.ci/run does)
// Run by mcp_test.go at the repository root: node client.mjs URL KEY INBOX_ID
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key, inbox] = process.argv.slice(2);
const client = new Client({ name: "inboxd-ts-check", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
await client.connect(transport);

const { tools } = await client.listTools();
const threads = await client.callTool({ name: "list_threads", arguments: { inbox_id: inbox } });
if (threads.isError) throw new Error(`list_threads: ${JSON.stringify(threads.content)}`);
const wait = await client.callTool({ name: "wait_for_message", arguments: { inbox_id: inbox, timeout_seconds: 30 } });
if (wait.isError) throw new Error(`wait_for_message: ${JSON.stringify(wait.content)}`);
const fence = wait.structuredContent.fence;
const unfence = (s) => (s.startsWith(fence.open) && s.endsWith(fence.close) ? s.slice(fence.open.length, s.length - fence.close.length) : null);

console.log(JSON.stringify({
  server: client.getServerVersion()?.name,
  tools: tools.map((t) => t.name).sort(),
  readOnly: tools.filter((t) => t.annotations?.readOnlyHint).length,
  threads: threads.structuredContent.threads.length,
  threadsText: threads.content[0].text.length > 0,
  waited: wait.structuredContent.messages.map((m) => unfence(m.subject)),
  cursor: wait.structuredContent.cursor,
}));
await client.close();
