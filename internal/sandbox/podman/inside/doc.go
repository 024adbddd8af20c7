// Package inside is the in-container side of the Podman backend: the init
// that `airlock __podman` runs as PID 1 of the container. It starts the
// egress forwarder (127.0.0.1:PORT to the proxy's socket) when asked, ends
// everything at the deadline, or at once when the broker dies (its control
// pipe ends), and runs the tool
// runner in-process or, with a command after "--", the command as a child.
// The broker's stop and signals come on the control pipe (--control FD);
// the container's environment on the environment pipe (--env FD), never on
// podman's command line.
//
//	broker ── podman run … IMAGE __podman --deadline S --control 3 --report 4 --env 5 [--proxy SOCK --proxy-port N] [-- CMD…]
//	init:  environment from fd 5 ▶ forwarder up ▶ non-dumpable + airlock's seccomp filter ▶ runner (stdin frame ▶ stdout frame) or CMD ▶ exit with its code
package inside
