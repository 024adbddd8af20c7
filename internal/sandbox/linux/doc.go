// Package linux is the host side of the native Linux sandbox backend. For
// each call it starts the airlock binary (from a sealed memfd copy) in its
// hidden init mode inside fresh user, mount, PID, network, IPC, UTS and
// cgroup namespaces, places it in per-call cgroups, sends it the
// configuration, relays its streams under the output cap, enforces the wall
// time, and tears everything down. The in-sandbox side is package inside;
// the protocol between them is drawn in package initproto.
package linux
