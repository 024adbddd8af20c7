// Package grant owns the grant: what one session's tool calls may touch. A
// grant is loaded from TOML (Load, Parse) or built from command-line values
// (FromFlags, Default), validated once, and resolved once: every granted path
// has its symlinks resolved and is checked to be safe to mount before any call
// runs. After that, checking a call (Grant.Check) is pure code with no I/O but
// the resolution of the call's own paths, so it is table-tested.
//
// A grant says:
//
//   - paths: read-write and read-only trees, and denied sub-paths masked
//     inside them. Protected paths inside read-write trees (.git/hooks,
//     .git/config, nested repositories, shell rc files, .mcp.json, editor and
//     agent settings directories) stay read-only unless the grant lists them
//     under paths.writable_protected. See ProtectedNames.
//   - network: host names and *.suffix patterns with an optional port (80 and
//     443 by default), explicit private addresses, and hosts where plain http
//     is allowed.
//   - limits: time, memory, processes, output bytes, file size and /tmp size,
//     with defaults (DefaultLimits) and per-tool overrides.
//   - tools: which tools are enabled.
//   - secrets: which secret goes to which tool and host, in which header. The
//     grant names a secret's source, never its value.
//
// examples/grant.toml in the repository documents every key.
package grant
