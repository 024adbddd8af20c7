// Command probe is the containment suite's helper inside a sandbox
// (internal/containtest): a static program that makes the raw system calls
// and connections a shell cannot, and prints one "name result" line for
// each, where result is the errno (0 when the call succeeded) or a word.
// Its probes pass bad pointers and descriptors, so a call the sandbox fails
// to refuse fails harmlessly (EFAULT, EBADF) instead of doing anything.
//
//	probe sys          the syscall sweep: "name errno" per call
//	probe net PORT     loopback and non-loopback dials; PORT is a listener on the host's loopback
//	probe mem MIB      allocates and touches MIB MiB of memory
//	probe memfd MIB    writes MIB MiB into a memfd
package main
