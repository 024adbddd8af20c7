// Package diskguard keeps a call from filling the host's disk through a
// writable grant.
//
// A writable grant is the host's own file system, which no tmpfs cap or
// cgroup bounds: RLIMIT_FSIZE holds each file to the grant's file size,
// but a call can write as many files as its time allows (hostile case 13:
// the host's disk is never filled through a grant). While a call runs, a
// guard reads the free space of each file system the call may write, and
// has the call killed (the "disk" limit) when one is below its floor and
// lower than when the call started: a call that drives the host's disk
// toward full is stopped before it gets there, and one that writes
// nothing is never stopped because the disk was nearly full already. The
// native sandbox's init, and the Podman container's, run a guard of their
// own as well, on the same file systems as they see them, because a
// broker stopped by job control polls nothing. A wasm module's run
// (package wasm) is guarded in the broker's process, where it runs.
package diskguard
