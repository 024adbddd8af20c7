// Package toolserver is remote mode, both ends: the hands (Server, behind
// `airlock tool-server`), which run each call in a fresh sandbox of their
// own after checking it against their own grant, and the broker's remote
// backend (Backend, a sandbox.Backend), which ships each sandbox to the
// hands over one persistent connection and reconnects when it dies. The
// broker knows the remote only as a Backend; grant, secrets and audit stay
// with it.
//
// The protocol (docs/remote.md has the whole of it): frames of JSON, one
// wire frame each on stdio, one binary message each on WebSocket, 64 MiB
// at most, decoded strictly (DecodeFrame).
//
//	broker (Backend)                               hands (Server)
//	  control{hello, versions} ─────────────────────▶
//	  ◀──────────────── control{welcome, version, identity, report}
//	  call{id, input | command} ────────────────────▶  grant.Check, fresh sandbox
//	  input{id, seq} ... ───────────────────────────▶  (a command's stdin)
//	  ◀───────────────────────────── output{id, seq, stream} ...
//	  ◀──────────────────────────────────────────── result{id}
//	  control{id, cancel | stop | signal} ──────────▶
//	  ◀─────────── heartbeat ──────────────────────── heartbeat ──▶ (both ways)
//
// When the connection dies, calls in flight that only read (read_file,
// glob, grep) are sent again under the same id on the next connection and
// answered from the hands' record if they ran; every other call in flight
// ends with sandbox.ErrLost and is never sent again.
package toolserver
