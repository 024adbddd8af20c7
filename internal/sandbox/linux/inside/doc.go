// Package inside is the in-sandbox side of the Linux backend: the init
// that `airlock __sandbox` runs as PID 1 of a fresh set of namespaces. It
// builds the new root, locks the process down (capabilities, no_new_privs,
// Landlock, seccomp, rlimits) and runs the payload. The host side is
// package linux; the protocol between them is package initproto.
package inside
