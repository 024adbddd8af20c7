// Package procid names a process in a way that survives pid reuse (its pid
// and, where the system tells, its start time), so that a file left by a
// process that died can be told from one of a process that still runs.
package procid

import (
	"strconv"
	"strings"
	"sync"
)

// ID is a process's pid and start time, "PID-START" ("PID" where the start
// time is unknown).
type ID string

// Self returns this process's ID. It is read once: a process's pid and
// start time never change (airlock forks only to exec).
func Self() ID { return self() }

var self = sync.OnceValue(func() ID { return Of(pidSelf()) })

// Space names the space in which this process's pids mean what they say:
// on Linux its boot and its PID namespace ("BOOTID_NSINODE"); "" where the
// system does not tell. A file that names a process of another space (left
// by a broker in another container over a shared volume, or on another
// host over a network file system) says nothing of whether that process
// runs: an ID is only looked up (Alive) in its own space. Read once.
func Space() string { return space() }

var space = sync.OnceValue(readSpace)

// Of returns the ID of the running process pid, or "" when there is none.
func Of(pid int) ID {
	if !exists(pid) {
		return ""
	}
	if s := start(pid); s != "" {
		return ID(strconv.Itoa(pid) + "-" + s)
	}
	return ID(strconv.Itoa(pid))
}

// PID returns the pid part of id, or 0.
func (id ID) PID() int {
	p, _, _ := strings.Cut(string(id), "-")
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}

// Alive reports whether the process id names still runs (the same process:
// a reused pid has another start time). A process whose start time cannot
// be read now (another user's, under hidepid) counts as alive when its pid
// exists: callers would rather keep a dead process's leftovers than take a
// live one's. A process that has ended and waits for its parent to reap it
// (a zombie) does not run: it holds nothing but its pid, and its leftovers
// are a dead process's, for as long as nobody reaps it (for good under a
// PID 1 that reaps nothing, as in many containers).
func (id ID) Alive() bool {
	pid := id.PID()
	if pid == 0 {
		return false
	}
	now := Of(pid)
	if now == "" {
		return false
	}
	prefix := strconv.Itoa(pid) + "-"
	return (now == id || !strings.HasPrefix(string(id), prefix) || !strings.HasPrefix(string(now), prefix)) && !defunct(pid)
}
