// Package interop tests airlock's MCP front door against clients no one here
// wrote: the official TypeScript SDK (installed from npm by the test) over
// stdio and streamable HTTP, and the Go SDK against the built binary.
package interop
