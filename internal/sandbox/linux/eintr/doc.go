// Package eintr retries Linux system calls that a signal interrupted
// (EINTR), so that every caller in the sandbox's host and init sides does
// it the same way instead of with a loop of its own. The Go runtime sends
// signals to its own threads (preemption), so any blocking call may see
// EINTR.
package eintr
