// Package mcpserver is airlock's MCP front door: it offers the grant's tools
// to any Model Context Protocol client, over stdio (Server.Serve with a
// stdio transport) or streamable HTTP (Server.Handler), using the official Go
// SDK (github.com/modelcontextprotocol/go-sdk).
//
// Every MCP session gets its own broker session, opened on the session's
// first tool call by the injected OpenFunc and closed when the MCP session
// ends; every call goes through that broker session, so the grant, the
// sandbox and the audit record apply exactly as on the command line.
//
// What a client sees:
//
//   - tools/list: the enabled tools, each with the raw JSON schema and the
//     description of its tool.Def (registered through the SDK's low-level
//     Server.AddTool, so the schema is ours byte for byte and the SDK does no
//     validation of its own: the broker parses arguments strictly).
//   - tools/call: one text content block holding airlock's labelled output.
//     A tool-level failure, a refusal by the grant, a sandbox failure or a
//     cancelled call is a result with isError set, never a protocol error.
//   - _meta["airlock/call"] on every result: structured metadata (call id,
//     outcome class, exit code, signal, truncation, the limit that ended the
//     call, the isolation that ran it, and for a refusal the grant rule).
//     It travels in _meta rather than structuredContent because the tools
//     declare no output schema and clients may show structuredContent to the
//     model in place of the labelled text.
//   - notifications/progress once a second while a call runs, when the
//     request carried a progressToken.
//   - notifications/cancelled for a call cancels the context handed to the
//     broker, which kills the call's sandbox.
package mcpserver
