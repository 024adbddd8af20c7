package linux

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/procid"
	"github.com/airlockhq/airlock/internal/sandbox/diskguard"
	"github.com/airlockhq/airlock/internal/sandbox/journal"
	"github.com/airlockhq/airlock/internal/sandbox/linux/eintr"
)

// cgroupHost knows where this broker may create per-sandbox cgroups:
// either a cgroup v2 directory with memory and pids enabled for its
// children, or the v1 memory and pids hierarchies.
type cgroupHost struct {
	version int    // 2, 1, or 0 when unavailable
	v2      string // v2 parent directory
	mem     string // v1 memory parent directory
	pids    string // v1 pids parent directory
	reason  string // why unavailable
}

// cgroupFix tells a user how to give airlock a cgroup it may manage; each
// recipe is one the tests or docs/architecture.md check.
const cgroupFix = "give airlock a cgroup this user may manage: on cgroup v2 with systemd, start it in a delegated scope " +
	"(systemd-run --user --scope -p Delegate=yes airlock ...) or set Delegate=yes in the unit that starts it; " +
	"on cgroup v1, have root create and chown a subtree in the memory and pids hierarchies " +
	"(for h in memory pids; do mkdir /sys/fs/cgroup/$h/airlock-$USER && chown -R $USER /sys/fs/cgroup/$h/airlock-$USER; done) " +
	"and start airlock from a shell moved into it (for h in memory pids; do echo $$ > /sys/fs/cgroup/$h/airlock-$USER/cgroup.procs; done); " +
	"or run airlock as root"

// brokerLeaf is the v2 cgroup a broker moves itself into when its own
// cgroup must hand controllers to sandbox cgroups: a cgroup v2 directory
// with processes of its own cannot (the "no internal processes" rule).
const brokerLeaf = "airlock-broker"

// v2Controllers are the controllers sandbox cgroups need on cgroup v2.
var v2Controllers = []string{"memory", "pids"}

// cgroupMounts returns the mount points of cgroup hierarchies: "" => v2
// mount, controller name => v1 mount.
func cgroupMounts() (map[string]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, x := range fields {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || len(fields) < sep+4 || len(fields) < 5 {
			continue
		}
		fstype, mnt, root := fields[sep+1], fields[4], fields[3]
		if root != "/" {
			continue
		}
		switch fstype {
		case "cgroup2":
			if _, ok := out[""]; !ok {
				out[""] = mnt
			}
		case "cgroup":
			for _, o := range strings.Split(fields[sep+3], ",") {
				if o == "memory" || o == "pids" {
					out[o] = mnt
				}
			}
		}
	}
	return out, sc.Err()
}

// selfCgroups parses /proc/self/cgroup: "" => v2 path, controller => v1 path.
func selfCgroups() (map[string]string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

func writable(dir string) bool { return unix.Access(dir, unix.W_OK) == nil }

// detectCgroups finds a usable hierarchy. parent, when set, is a path
// relative to each hierarchy's root used instead of the broker's own.
// On cgroup v2 it may enable the controllers for the broker's cgroup's
// children, moving the broker into a leaf first (see v2Host).
func detectCgroups(parent string) cgroupHost {
	mounts, err := cgroupMounts()
	if err != nil {
		return cgroupHost{reason: "reading mountinfo: " + err.Error()}
	}
	self, err := selfCgroups()
	if err != nil {
		return cgroupHost{reason: "reading /proc/self/cgroup: " + err.Error()}
	}
	pick := func(ctrl string) string {
		if parent != "" {
			return parent
		}
		return self[ctrl]
	}
	var reasons []string
	if m, ok := mounts[""]; ok {
		p := pick("")
		if parent == "" && path.Base(p) == brokerLeaf {
			p = path.Dir(p) // moved there by an earlier New in this process
		}
		h, why := v2Host(filepath.Join(m, p), parent == "", v2Controllers)
		if why == "" {
			return h
		}
		reasons = append(reasons, why)
	}
	mm, okm := mounts["memory"]
	pm, okp := mounts["pids"]
	if okm && okp {
		mem := filepath.Join(mm, pick("memory"))
		pids := filepath.Join(pm, pick("pids"))
		if writable(mem) && writable(pids) {
			return cgroupHost{version: 1, mem: mem, pids: pids}
		}
		var ro []string
		for _, d := range []string{mem, pids} {
			if !writable(d) {
				ro = append(ro, d)
			}
		}
		reasons = append(reasons, fmt.Sprintf("cgroup v1: %s not writable by uid %d", strings.Join(ro, " and "), os.Getuid()))
	} else {
		reasons = append(reasons, "no cgroup v1 memory and pids hierarchies")
	}
	return cgroupHost{reason: strings.Join(reasons, "; ")}
}

// v2Host checks that the cgroup v2 directory dir can parent sandbox
// cgroups with the controllers want, enabling them in its
// cgroup.subtree_control when it may. A cgroup that holds processes cannot
// enable controllers for its children; when mayMove is set and the broker
// is its only process (as in a scope made for it: systemd-run --scope -p
// Delegate=yes), the broker moves itself into dir/airlock-broker first, and
// back if that does not help. It returns the host, or why dir cannot serve.
func v2Host(dir string, mayMove bool, want []string) (cgroupHost, string) {
	ctrls, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return cgroupHost{}, fmt.Sprintf("cgroup v2 %s: %v", dir, err)
	}
	var missing []string
	for _, c := range want {
		if !contains(strings.Fields(string(ctrls)), c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		what := "the " + missing[0] + " controller is"
		if len(missing) > 1 {
			what = "the " + strings.Join(missing, " and ") + " controllers are"
		}
		return cgroupHost{}, fmt.Sprintf("cgroup v2 %s: %s not delegated to it (cgroup.controllers: %q)", dir, what, strings.TrimSpace(string(ctrls)))
	}
	for _, f := range []string{"", "cgroup.subtree_control", "cgroup.procs"} {
		if !writable(filepath.Join(dir, f)) {
			return cgroupHost{}, fmt.Sprintf("cgroup v2 %s is not writable by uid %d (not delegated to this user)", filepath.Join(dir, f), os.Getuid())
		}
	}
	h := cgroupHost{version: 2, v2: dir}
	err = enableControllers(dir, want)
	if err == nil {
		return h, ""
	}
	if !errors.Is(err, unix.EBUSY) {
		return cgroupHost{}, fmt.Sprintf("cgroup v2 %s: %v", dir, err)
	}
	procs := procsOf(dir)
	busy := fmt.Sprintf("cgroup v2 %s holds processes (%d), so it cannot enable controllers for sandbox cgroups; start airlock in a cgroup of its own (systemd-run --user --scope -p Delegate=yes airlock ...)", dir, len(procs))
	if !mayMove || len(procs) != 1 || procs[0] != os.Getpid() {
		return cgroupHost{}, busy
	}
	leaf := filepath.Join(dir, brokerLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return cgroupHost{}, fmt.Sprintf("cgroup v2 %s: creating a leaf for the broker: %v", dir, err)
	}
	self := strconv.Itoa(os.Getpid())
	if err := writeFile(filepath.Join(leaf, "cgroup.procs"), self); err != nil {
		return cgroupHost{}, fmt.Sprintf("cgroup v2 %s: moving the broker into its leaf: %v", dir, err)
	}
	if err := enableControllers(dir, want); err != nil {
		_ = writeFile(filepath.Join(dir, "cgroup.procs"), self)
		_ = unix.Rmdir(leaf)
		return cgroupHost{}, busy + ": " + err.Error()
	}
	return h, ""
}

// enableControllers enables want in dir's cgroup.subtree_control, unless
// they are already.
func enableControllers(dir string, want []string) error {
	p := filepath.Join(dir, "cgroup.subtree_control")
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	var add []string
	for _, c := range want {
		if !contains(strings.Fields(string(b)), c) {
			add = append(add, "+"+c)
		}
	}
	if len(add) == 0 {
		return nil
	}
	return writeFile(p, strings.Join(add, " "))
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// parents lists the directories under which sandbox cgroups are created.
func (h cgroupHost) parents() []string {
	switch h.version {
	case 2:
		return []string{h.v2}
	case 1:
		return []string{h.mem, h.pids}
	}
	return nil
}

// features names the cgroup features for Result.Isolation.
func (h cgroupHost) features() []string {
	switch h.version {
	case 2:
		return []string{"cgroup-v2-memory", "cgroup-v2-pids"}
	case 1:
		return []string{"cgroup-v1-memory", "cgroup-v1-pids"}
	}
	return nil
}

// cgroup is one sandbox's cgroup (a directory per hierarchy). It holds
// the memory limit and a process limit a few above the call's, for the
// init's threads. On cgroup v1 the pids hierarchy has a child, payload,
// whose pids.max is the call's own limit: the init's forking thread steps
// into it alone (v1 moves single threads, through "tasks"), forks the
// command and steps back, so the command and its children are born there
// and the init's threads never are. A command holding every process it may
// have then cannot keep the init from making a thread (a Go runtime that
// cannot make one aborts). Cgroup v2 moves whole processes only (outside a
// threaded subtree) and the init cannot clone3 into a cgroup under its
// seccomp filter, so there the init and the command share the sandbox's
// limit, as docs/architecture.md says.
type cgroup struct {
	host cgroupHost
	dirs []string
	// payload is the payload cgroup's directory (v1 only).
	payload string
	// counters holds open, by path, the files a call's result reads
	// (openCounters), so that reading them then is one pread(2) each,
	// not a walk of the cgroup file system's long paths.
	counters map[string]int
	// tcpLimit is the v1 memory.kmem.tcp.limit_in_bytes create set (the
	// memory limit), 0 where none was (v2, or a kernel without it).
	tcpLimit int64
}

// pidsDir is the sandbox's directory in the pids hierarchy.
func (cg *cgroup) pidsDir() string { return cg.dirs[len(cg.dirs)-1] }

// payloadLeaf is the name of the payload cgroup.
const payloadLeaf = "payload"

func writeFile(p, v string) error {
	if err := os.WriteFile(p, []byte(v), 0); err != nil {
		return fmt.Errorf("writing %q to %s: %w", v, p, err)
	}
	return nil
}

// create makes the cgroup and sets its limits: mem and pids+extra for
// the sandbox; on v1, pids for the payload (plus one for the init's thread
// that forks it: see cgroup).
func (h cgroupHost) create(name string, mem int64, pids, extra int) (*cgroup, error) {
	cg := &cgroup{host: h}
	for _, p := range h.parents() {
		d := filepath.Join(p, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			cg.destroy()
			return nil, fmt.Errorf("creating cgroup %s: %w", d, err)
		}
		cg.dirs = append(cg.dirs, d)
	}
	total := strconv.Itoa(pids + extra)
	var err error
	switch h.version {
	case 2:
		d := cg.dirs[0]
		err = errors.Join(
			writeFile(filepath.Join(d, "memory.max"), strconv.FormatInt(mem, 10)),
			writeFile(filepath.Join(d, "pids.max"), total))
		if err == nil {
			_ = writeFile(filepath.Join(d, "memory.swap.max"), "0")
		}
	case 1:
		cg.payload = filepath.Join(cg.dirs[1], payloadLeaf)
		err = errors.Join(
			writeFile(filepath.Join(cg.dirs[0], "memory.limit_in_bytes"), strconv.FormatInt(mem, 10)),
			writeFile(filepath.Join(cg.dirs[1], "pids.max"), total))
		if err == nil {
			// No swap: memsw equal to the limit (absent without swap accounting).
			sw := filepath.Join(cg.dirs[0], "memory.memsw.limit_in_bytes")
			if _, serr := os.Stat(sw); serr == nil {
				err = writeFile(sw, strconv.FormatInt(mem, 10))
			}
		}
		if err == nil {
			// v1 charges TCP buffers to no limit unless this is set (v2
			// charges them to memory.max): a sandbox's loopback sockets
			// held 900 MB of the machine's tcp_mem under a 64 MiB limit.
			// Set before any socket exists, which is what turns it on.
			tcp := filepath.Join(cg.dirs[0], "memory.kmem.tcp.limit_in_bytes")
			if _, serr := os.Stat(tcp); serr == nil {
				err = writeFile(tcp, strconv.FormatInt(mem, 10))
				cg.tcpLimit = mem
			}
		}
		if err == nil {
			err = mkdir(cg.payload)
		}
		if err == nil {
			err = writeFile(filepath.Join(cg.payload, "pids.max"), strconv.Itoa(pids+1))
		}
	}
	if err != nil {
		cg.destroy()
		return nil, err
	}
	cg.openCounters()
	return cg, nil
}

// openCounters opens the files result reads when a call ends (peakMemory,
// memoryHit, pidsMaxHits) while the cgroup is made, off a warm call's
// clock. One that will not open is read by its path then.
func (cg *cgroup) openCounters() {
	var paths []string
	switch cg.host.version {
	case 2:
		d := cg.dirs[0]
		paths = []string{filepath.Join(d, "memory.peak"), filepath.Join(d, "memory.events"), filepath.Join(d, "pids.events")}
	case 1:
		paths = []string{filepath.Join(cg.dirs[0], "memory.max_usage_in_bytes"), filepath.Join(cg.dirs[0], "memory.oom_control"),
			filepath.Join(cg.pidsDir(), "pids.events"), filepath.Join(cg.payload, "pids.events")}
	}
	cg.counters = make(map[string]int, len(paths))
	for _, p := range paths {
		if fd, err := eintr.Value(func() (int, error) { return unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0) }); err == nil {
			cg.counters[p] = fd
		}
	}
}

// closeCounters closes what openCounters opened.
func (cg *cgroup) closeCounters() {
	for p, fd := range cg.counters {
		unix.Close(fd)
		delete(cg.counters, p)
	}
}

// readCounter reads the cgroup file at path p, through the descriptor
// openCounters keeps when it has one.
func (cg *cgroup) readCounter(p string) ([]byte, error) {
	if fd, ok := cg.counters[p]; ok {
		return readAllAt(fd, p)
	}
	return readCounterFile(p)
}

func mkdir(d string) error {
	if err := os.Mkdir(d, 0o755); err != nil {
		return fmt.Errorf("creating cgroup %s: %w", d, err)
	}
	return nil
}

// add moves pid (all its threads) into the cgroup.
func (cg *cgroup) add(pid int) error {
	for _, d := range cg.dirs {
		if err := writeFile(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// joinsItself reports whether the init joins this cgroup itself as it
// starts (initproto.JoinFD), rather than the host writing its pid into
// cgroup.procs: on cgroup v1, where a thread can move itself through
// tasks.
func (cg *cgroup) joinsItself() bool {
	return cg.host.version == 1 && cg.payload != "" && len(cg.dirs) == 2
}

// name is the sandbox cgroup's name, the same in every hierarchy.
func (cg *cgroup) name() string { return filepath.Base(cg.pidsDir()) }

// initFiles opens, for the init, the files at initproto.PayloadTasksFD,
// PayloadPidsFD and InitTasksFD, in that order, and, when the init joins
// the cgroup itself, JoinFD; none without a payload cgroup.
func (cg *cgroup) initFiles() ([]*os.File, error) {
	if cg.payload == "" {
		return nil, nil
	}
	files := []string{
		filepath.Join(cg.payload, "tasks"),
		filepath.Join(cg.payload, "pids.max"),
		filepath.Join(cg.pidsDir(), "tasks"),
	}
	if cg.joinsItself() {
		files = append(files, filepath.Join(cg.dirs[0], "tasks"))
	}
	var fs []*os.File
	for _, p := range files {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			for _, f := range fs {
				f.Close()
			}
			return nil, fmt.Errorf("opening %s for the sandbox init: %w", p, err)
		}
		fs = append(fs, f)
	}
	return fs, nil
}

// readCounterFile reads a small cgroup or proc file with open, read and
// close alone: os.ReadFile adds the poller's attempt to register the file
// (two fcntl, an epoll_ctl refused, two fcntl) and an fstat, seven system
// calls more for each of the files a call's result reads on its clock.
func readCounterFile(p string) ([]byte, error) {
	fd, err := eintr.Value(func() (int, error) { return unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0) })
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer unix.Close(fd)
	return readAllAt(fd, p)
}

// readAllAt reads the whole of the open file fd (named p for errors) from
// its start with pread(2), so a descriptor kept open is read afresh each
// time (a seq_file of procfs or cgroupfs regenerates at offset 0). A
// seq_file read returns what its page-sized buffer gathered, whole records
// only: a read that came back short with at most seqShortEnd bytes in all
// stopped at the end (a record would have had to be longer than the rest
// of the page), with no second read to find it (a system call on a warm
// call's clock per file); a longer file is read on until a read returns
// nothing, for there a short read may be the buffer's edge.
func readAllAt(fd int, p string) ([]byte, error) {
	buf := make([]byte, 0, 512)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		want := cap(buf) - len(buf)
		n, err := eintr.Value(func() (int, error) { return unix.Pread(fd, buf[len(buf):cap(buf)], int64(len(buf))) })
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: p, Err: err}
		}
		buf = buf[:len(buf)+n]
		if n == 0 || n < want && len(buf) <= seqShortEnd {
			return buf, nil
		}
	}
}

// seqShortEnd is the most a file may hold for readAllAt to take a short
// read for its end: half of a seq_file's first buffer (a page).
const seqShortEnd = 2048

// counter reads "key N" from a flat keyed file.
func (cg *cgroup) counter(p, key string) int64 {
	return cg.counterValues(p, key)[0]
}

// counterValues reads the values of keys ("key N" lines) from a flat keyed
// file, 0 for a key it lacks.
func (cg *cgroup) counterValues(p string, keys ...string) []int64 {
	out := make([]int64, len(keys))
	b, err := cg.readCounter(p)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		for i, k := range keys {
			if f[0] == k {
				out[i], _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
	}
	return out
}

// memoryHit reports whether the memory limit bit: the OOM killer killed a
// process of the cgroup, or (v2) reclaim at memory.max failed. Reaching
// the limit and reclaiming page cache (v2 "max", v1 memory.failcnt) is
// normal for a call that writes files and is not counted.
func (cg *cgroup) memoryHit() bool {
	switch cg.host.version {
	case 2:
		n := cg.counterValues(filepath.Join(cg.dirs[0], "memory.events"), "oom_kill", "oom")
		return n[0] > 0 || n[1] > 0
	case 1:
		return cg.counter(filepath.Join(cg.dirs[0], "memory.oom_control"), "oom_kill") > 0
	}
	return false
}

// pidsMaxHits reports how often a fork failed on a pids.max: the kernel
// counts it in the cgroup of the process that forked (the payload's, or
// the init's). On cgroup v1 it counts there a fork refused by any
// ancestor's pids.max too (the broker's own cgroup's: a systemd TasksMax,
// a container's limit), which is not the call's limit: a cgroup's count is
// taken only if its pids.peak reached its own pids.max (where the kernel
// has no pids.peak, before Linux 6.1, it is taken as before).
func (cg *cgroup) pidsMaxHits() int64 {
	var n int64
	for _, d := range []string{cg.pidsDir(), cg.payload} {
		if d == "" {
			continue
		}
		hits := cg.counter(filepath.Join(d, "pids.events"), "max")
		if hits > 0 && cg.host.version == 1 && !pidsPeakAtMax(d) {
			continue // refused above the sandbox: not its limit
		}
		n += hits
	}
	return n
}

// pidsPeakAtMax reports whether the v1 pids cgroup d held as many
// processes as its pids.max allows at some point, or cannot tell (no
// pids.peak, an unreadable file).
func pidsPeakAtMax(d string) bool {
	read := func(name string) (string, bool) {
		b, err := readCounterFile(filepath.Join(d, name))
		return strings.TrimSpace(string(b)), err == nil
	}
	peakS, ok1 := read("pids.peak")
	maxS, ok2 := read("pids.max")
	if !ok1 || !ok2 {
		return true
	}
	if maxS == "max" {
		return false // no limit of its own
	}
	peak, err1 := strconv.ParseInt(peakS, 10, 64)
	limit, err2 := strconv.ParseInt(maxS, 10, 64)
	if err1 != nil || err2 != nil {
		return true
	}
	return peak >= limit
}

func procsOf(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// destroy kills anything left, waits until the cgroup is empty and removes
// it with its leaves, retrying on EBUSY.
func (cg *cgroup) destroy() error {
	if cg == nil {
		return nil
	}
	cg.closeCounters()
	var errs []error
	for _, d := range cg.dirs {
		errs = append(errs, removeCgroup(d, cg.host.version))
	}
	return errors.Join(errs...)
}

// removeCgroup removes the cgroup directory d, its child cgroups first,
// killing every process in them.
func removeCgroup(d string, version int) error {
	var errs []error
	if ents, err := os.ReadDir(d); err == nil {
		for _, e := range ents {
			if e.IsDir() {
				errs = append(errs, removeCgroup(filepath.Join(d, e.Name()), version))
			}
		}
	}
	if version == 2 {
		_ = os.WriteFile(filepath.Join(d, "cgroup.kill"), []byte("1"), 0)
	}
	return errors.Join(append(errs, waitRmdir(d, 5*time.Second))...)
}

// waitRmdir removes the cgroup directory d once the processes in it, sent
// SIGKILL again on every try, have gone: rmdir fails (EBUSY) until the
// kernel has reaped the last one. It tries every millisecond, for at most
// limit (v1 hierarchies give no event to wait on instead).
func waitRmdir(d string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		for _, p := range procsOf(d) {
			_ = unix.Kill(p, unix.SIGKILL)
		}
		err := unix.Rmdir(d)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("removing cgroup %s: %w", d, err)
		}
		time.Sleep(time.Millisecond) //permit:time.Sleep (a named wait)
	}
}

// cgroupName is the name of the seq-th sandbox cgroup of the broker
// process id, of the PID namespace space (procid.Space):
// "airlock-PID-START-SEQ.SPACE", or "airlock-PID-START-SEQ" where the
// space is unknown. The start time keeps a broker whose pid was reused
// (pids wrap at 32768 by default) from taking, or keeping, the cgroups a
// dead one left: with the pid alone its first sandbox's cgroup could exist
// already, and the sweep took the dead broker for alive. The space keeps
// a broker in another PID namespace over the same cgroups (a container
// sharing the host's cgroup tree, a broker under unshare -p) from taking a
// live one for dead: its pid means nothing there.
func cgroupName(id procid.ID, space string, seq uint64) string {
	name := "airlock-" + string(id) + "-" + strconv.FormatUint(seq, 10)
	if space != "" {
		name += "." + space
	}
	return name
}

// cgroupOwner returns the broker process a sandbox cgroup's name says made
// it, for the sweep, and the PID namespace its pid means something in
// ("" when the name does not say): from cgroupName's forms, or the older
// "airlock-PID-SEQ" (the pid alone). ok is false for any other name.
func cgroupOwner(name string) (id procid.ID, space string, ok bool) {
	rest, found := strings.CutPrefix(name, "airlock-")
	rest, space, dotted := strings.Cut(rest, ".")
	i := strings.LastIndexByte(rest, '-')
	if !found || i < 0 || !allDigits(rest[i+1:]) || dotted && !spaceName(space) {
		return "", "", false
	}
	id = procid.ID(rest[:i])
	pid, start, hasStart := strings.Cut(string(id), "-")
	if !allDigits(pid) || hasStart && !allDigits(start) || id.PID() == 0 {
		return "", "", false
	}
	return id, space, true
}

// spaceName reports whether s can be a procid.Space: a non-empty run of
// ASCII letters, digits and underscores.
func spaceName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return true
}

// allDigits reports whether s is a non-empty run of ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// sweep removes cgroups left by airlock brokers that no longer exist: a
// broker whose pid now names another process (another start time) is gone.
// A cgroup of another PID namespace's broker is left alone: whether that
// broker runs cannot be told from here, and removing a live one's killed
// its running calls. One whose name gives no namespace (an older broker's,
// or one that could not read its own) is judged as before.
func (h cgroupHost) sweep() {
	for _, p := range h.parents() {
		sweepParent(p, h.version)
	}
}

// sweepParent removes the cgroups below parent (of cgroup version
// version) that brokers which are gone made, as sweep does, and reports
// whether it removed any.
func sweepParent(parent string, version int) bool {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return false
	}
	here := procid.Space()
	removed := false
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		id, space, ok := cgroupOwner(e.Name())
		if !ok || space != "" && space != here || id.Alive() {
			continue
		}
		if removeCgroup(filepath.Join(parent, e.Name()), version) == nil {
			removed = true
		}
	}
	return removed
}

// cgroupJournalDir is where, below Options.StateDir, each process
// journals the cgroup directories under which it makes its sandboxes'
// cgroups (its own, or Options.CgroupParent): one file per process
// (journal.Name), one directory a line. sweep looks under the new
// broker's own cgroup only, and on cgroup v1 a broker's memory cgroup is
// its launcher's (a login session's, a terminal's or a job runner's
// scope), so a broker killed with SIGKILL left its sandboxes' cgroups, its
// warm ones' too, for good unless another happened to start in that same
// cgroup. A later process over the same state directory sweeps the
// directories a dead one journalled (sweepCgroupJournals).
const cgroupJournalDir = ".cgroups"

// journalled are the journal files this process has written, each with
// the parents it holds, so that a process that makes many backends (a
// server's sessions) writes each parent once.
var journalled = struct {
	sync.Mutex
	parents map[string][]string
}{parents: map[string][]string{}}

// journal notes h's parents in dir before any sandbox cgroup is made
// there. A journal that cannot be written is not a reason to fail: this
// process still removes its cgroups, and the sweep of its own cgroup
// still finds them when the next broker starts there.
func (h cgroupHost) journal(dir string) {
	parents := h.parents()
	if len(parents) == 0 {
		return
	}
	file := filepath.Join(dir, journal.Name())
	journalled.Lock()
	defer journalled.Unlock()
	var add []string
	for _, p := range parents {
		if !slices.Contains(journalled.parents[file], p) {
			add = append(add, p)
		}
	}
	if len(add) == 0 {
		return
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(add, "\n") + "\n"); err == nil {
		journalled.parents[file] = append(journalled.parents[file], add...)
	}
}

// sweepCgroupJournals removes, under each cgroup directory a process that
// is gone journalled in dir, the cgroups of brokers that are gone, and
// then the journals. A journalled path that is not a cgroup directory is
// left alone.
func sweepCgroupJournals(dir string, log *slog.Logger) {
	journal.SweepDeadOf(dir, "cgroups", func(parent string) bool {
		var fs unix.Statfs_t
		if err := unix.Statfs(parent, &fs); err != nil {
			return false
		}
		switch fs.Type {
		case unix.CGROUP2_SUPER_MAGIC:
			return sweepParent(parent, 2)
		case unix.CGROUP_SUPER_MAGIC:
			return sweepParent(parent, 1)
		}
		return false
	}, log)
}

// watchTCP calls over, once, when the TCP buffers of the v1 cgroup
// (memory.kmem.tcp.usage_in_bytes, UDP's too) pass its limit by more
// than a quarter, reading them every diskguard.Poll until the returned
// func is called; it does nothing on v2, which charges socket memory to
// memory.max, or where create set no limit. The quarter is room for a
// program's own sockets under pressure, each of which may be charged a
// buffer past the limit (about 100 KB: 100 MB for a thousand sockets at
// the default 1 GiB). The limit alone bounds a sandbox with few sockets:
// the kernel charges each socket's first buffers past it (forced charges,
// which count in no failcnt), and v1 keeps that count apart from
// memory.limit_in_bytes, so no OOM kill follows: eight processes of a
// 128 MiB sandbox held 300 MB of loopback buffers, and a sandbox with
// more would take the machine's whole tcp_mem, past which every TCP
// socket on the host, in every network namespace, is refused memory.
func (cg *cgroup) watchTCP(over func()) (stop func()) {
	if cg == nil || cg.tcpLimit <= 0 {
		return func() {}
	}
	p := filepath.Join(cg.dirs[0], "memory.kmem.tcp.usage_in_bytes")
	fd, err := eintr.Value(func() (int, error) { return unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0) })
	if err != nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(diskguard.Poll)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			b, err := readAllAt(fd, p)
			if err != nil {
				return
			}
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > cg.tcpLimit+cg.tcpLimit/4 {
				over()
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		unix.Close(fd)
	}
}
