package containtest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/wire"
)

// cases are the suite, each named for its number in the project's list
// of hostile cases (hostile-cases.md). They share one session and run in
// order; none leaves anything a later one depends on.
var cases = []struct {
	name string
	run  func(*suite)
}{
	{"01-lexical-traversal", (*suite).lexicalTraversal},
	{"02-prefix-confusion", (*suite).prefixConfusion},
	{"03-ancestor-symlink", (*suite).ancestorSymlink},
	{"05-hostile-cwd", (*suite).hostileCwd},
	{"06-read-only-grant", (*suite).readOnlyGrant},
	{"06-host-files-outside-grants-keep-their-modes", (*suite).hostModes},
	{"07-nested-grant-swapped", (*suite).nestedGrantSwapped},
	{"08-protected-paths", (*suite).protectedPaths},
	{"10-hidden-host-surface", (*suite).hiddenHost},
	{"10-root-only-proc-files", (*suite).rootOnlyProc},
	{"10-etc-as-any-user-reads-it", (*suite).etcSecrets},
	{"17-cgroup-escape", (*suite).cgroupEscape},
	{"11-fork-bomb", (*suite).forkBomb},
	{"12-memory-bomb", (*suite).memoryBomb},
	{"13-disk-fill", (*suite).diskFill},
	{"13-disk-fill-below-a-mount-in-a-grant", (*suite).diskFillSubmount},
	{"13-no-allocation-past-the-end", (*suite).noPrealloc},
	{"13-no-room-outside-the-grant", (*suite).noRoomOutside},
	{"14-processes-left-behind", (*suite).leftBehind},
	{"14-background-work-left-behind", (*suite).backgroundLeftBehind},
	{"15-16-wall-time-and-signals", (*suite).wallTimeAndSignals},
	{"49-cancel-mid-run", (*suite).cancelMidRun},
	{"19-no-network", (*suite).noNetwork},
	{"28-host-unix-sockets-in-granted-trees", (*suite).hostSockets},
	{"30-environment", (*suite).environment},
	{"34-home-credentials", (*suite).homeCredentials},
	{"35-nested-userns", (*suite).nestedUserns},
	{"36-mount-family", (*suite).mountFamily},
	{"37-pid1-out-of-reach", (*suite).pid1},
	{"39-leaked-fds", (*suite).leakedFDs},
	{"40-io-uring", (*suite).ioUring},
	{"41-syscall-sweep", (*suite).syscallSweep},
	{"41-no-leases-on-host-files", (*suite).noLeases},
	{"41-core-limit-fixed", (*suite).coreLimit},
	{"42-setuid-and-caps", (*suite).setuidCaps},
	{"42-no-setid-files", (*suite).noSetIDFiles},
	{"38-airlock-binary", (*suite).airlockBinary},
	{"50-output-flood", (*suite).outputFlood},
	{"51-per-user-kernel-counts", (*suite).perUserCounts},
}

// fileTools asks every file tool for path: read, write, edit, and a glob
// and a grep rooted there.
func fileTools(path string) []struct {
	tool string
	args map[string]any
} {
	return []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": path}},
		{"write_file", map[string]any{"path": path, "content": "x"}},
		{"edit_file", map[string]any{"path": path, "old_string": "root", "new_string": "x"}},
		{"glob", map[string]any{"pattern": "*", "path": path}},
		{"grep", map[string]any{"pattern": "root|canary", "path": path}},
	}
}

// Case 1: paths that climb out of the grant are refused before any open.
func (s *suite) lexicalTraversal() {
	for _, p := range []string{
		s.W + "/../o/canary", s.W + "/./../o/canary", s.W + "/" + strings.Repeat("../", 16) + "etc/passwd",
		"//etc/shadow", "/etc/passwd", s.W + "/../o",
	} {
		for _, c := range fileTools(p) {
			s.refused(c.tool, c.args)
		}
	}
}

// Case 2: a path that only shares a string prefix with the grant is not in it.
func (s *suite) prefixConfusion() {
	for _, p := range []string{s.base + "/w-evil/s", s.base + "/w_x/s", s.base + "/wx", s.base + "/w-evil"} {
		for _, c := range fileTools(p) {
			s.refused(c.tool, c.args)
		}
	}
}

// Case 3: a symlink in the grant to a directory outside it, with a
// missing leaf below: nothing is created outside, nothing read.
func (s *suite) ancestorSymlink() {
	s.sh("ln -s " + s.O + " d && ln -s " + s.O + "/canary c")
	defer os.Remove(filepath.Join(s.W, "d"))
	defer os.Remove(filepath.Join(s.W, "c"))
	for _, p := range []string{s.W + "/d/new/sub/x.txt", s.W + "/d/x.txt"} {
		s.denied("write_file", map[string]any{"path": p, "content": "x"})
	}
	for _, p := range []string{s.W + "/d/canary", s.W + "/c"} {
		s.denied("read_file", map[string]any{"path": p})
		s.denied("edit_file", map[string]any{"path": p, "old_string": "canary", "new_string": "x"})
	}
	s.call("grep", map[string]any{"pattern": "canary", "path": s.W + "/d"})
	s.call("glob", map[string]any{"pattern": "**", "path": s.W})
	s.call("grep", map[string]any{"pattern": "canary", "path": s.W})
	out := s.sh("mkdir -p d/new/sub; echo rc=$?; echo x > d/x.txt; echo rc=$?; cat d/canary c; echo x >> c; echo rc=$?")
	s.noRC0("writing through the link", out)
	if ents, _ := os.ReadDir(s.O); len(ents) != 1 {
		s.t.Errorf("$O now holds %v", ents)
	}
}

// Case 5: a working directory outside the grants, or reached through
// /proc or a symlink that leads out, is refused before anything runs.
func (s *suite) hostileCwd() {
	s.sh("ln -s / link-to-root")
	defer os.Remove(filepath.Join(s.W, "link-to-root"))
	for _, cwd := range []string{"/proc/self/fd/7", s.W + "/../..", s.W + "/link-to-root", "/", "/proc/self/cwd"} {
		res := s.call("shell", map[string]any{"command": "pwd -P; ls", "cwd": cwd})
		if res.Class != broker.ClassRefused {
			s.t.Errorf("cwd %s: class %s, want refused before anything runs: %q", cwd, res.Class, res.Output.Content)
		}
	}
}

// Case 6: nothing in a read-only grant can be changed, by the tools or by
// the shell.
func (s *suite) readOnlyGrant() {
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"write_file", map[string]any{"path": s.R + "/f", "content": "x"}},
		{"write_file", map[string]any{"path": s.R + "/n", "content": "x"}},
		{"edit_file", map[string]any{"path": s.R + "/f", "old_string": "readonly", "new_string": "x"}},
	} {
		s.denied(c.tool, c.args)
	}
	r := s.R
	out := s.sh(strings.Join([]string{
		"echo x > " + r + "/f", "truncate -s0 " + r + "/f", "touch " + r + "/n", "chmod 777 " + r + "/f",
		"mv " + r + "/f " + s.W + "/", "ln " + r + "/f " + s.W + "/hl", "rm " + r + "/f", "mkdir " + r + "/d",
		"mount -o remount,rw " + r, "mv " + r + "/sub " + r + "/sub2",
	}, " 2>&1; echo rc=$?; ") + " 2>&1; echo rc=$?")
	s.noRC0("changing the read-only grant", out)
	fi, err := os.Stat(filepath.Join(r, "f"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		s.t.Errorf("$R/f: %v %v; want it unchanged (0644)", fi, err)
	}
	// (mv across mounts copies, then fails to remove: the copy in $W is
	// a read, which the grant allows.)
	os.Remove(filepath.Join(s.W, "f"))
	for _, p := range []string{r + "/n", r + "/d", r + "/sub2", s.W + "/hl"} {
		if _, err := os.Lstat(p); err == nil {
			s.t.Errorf("%s exists on the host", p)
		}
	}
}

// Case 6, beyond the grants: no file of the host the sandbox sees that
// is not a grant (the device nodes bound into /dev, the kernel's entries
// in /proc, which every /proc shares) takes a chmod, even to the mode it
// has. Under a root broker the sandbox's uid 0 owns them all: a chmod of
// /dev/null changed the host's node (mode 0 broke every other user's
// redirections), and one of /proc/meminfo the kernel's only entry, whose
// mode every /proc mounted after (the host's, containers', other
// sandboxes') showed until a reboot.
func (s *suite) hostModes() {
	out := s.sh(`n=0
for f in /dev/null /dev/zero /dev/full /dev/random /dev/urandom $(find /proc -mindepth 1 -maxdepth 2 \( -path '/proc/[0-9]*' -o -path /proc/self -o -path /proc/thread-self \) -prune -o ! -type l -print); do
	m=$(stat -c %a "$f" 2>/dev/null) || continue
	n=$((n+1))
	chmod "$m" "$f" 2>/dev/null && echo "changed $f"
done
echo "tried $n"`)
	for _, line := range strings.Split(out, "\n") {
		if f, ok := strings.CutPrefix(line, "changed "); ok {
			s.t.Errorf("the sandbox changed the mode of %s", f)
		}
	}
	if n := fieldAfter(out, "tried "); n < 20 {
		s.t.Errorf("the sandbox found %d files in /dev and /proc to try: %q", n, out)
	}
}

// Case 8: protected paths, present or not, nested or not, stay unwritten.
func (s *suite) protectedPaths() {
	w := s.W
	for _, p := range []string{w + "/.git/hooks/pre-commit", w + "/.git/config", w + "/vendor/x/.git/hooks/post-checkout",
		w + "/vendor/x/.git/config", w + "/.claude/settings.json"} {
		s.denied("write_file", map[string]any{"path": p, "content": "#!/bin/sh\ntouch /tmp/pwned\n"})
	}
	s.denied("edit_file", map[string]any{"path": w + "/.git/config", "old_string": "original", "new_string": "[core]\n\tfsmonitor = /tmp/x"})
	out := s.sh(strings.Join([]string{
		"mkdir -p .git/hooks; printf '#!/bin/sh\\n' > .git/hooks/pre-commit",
		"chmod +x .git/hooks/pre-commit",
		"printf '[core]\\n\\tfsmonitor = /tmp/x\\n' >> .git/config",
		"mv .git .g",
		"mkdir -p vendor/x/.git/hooks; echo x > vendor/x/.git/hooks/post-checkout",
		"echo x >> vendor/x/.git/config",
		"mkdir -p .claude; echo '{}' > .claude/settings.json",
	}, " 2>&1; echo rc=$?; ") + " 2>&1; echo rc=$?")
	s.noRC0("writing a protected path", out)
	for p, want := range map[string]string{".git/config": "original\n", "vendor/x/.git/config": "nested\n"} {
		if b, err := os.ReadFile(filepath.Join(w, p)); err != nil || string(b) != want {
			s.t.Errorf("host %s = %q, %v; want it unchanged", p, b, err)
		}
	}
	// A placeholder the last call's teardown has yet to remove is empty;
	// nothing the sandbox wrote ever shows.
	for _, p := range []string{".git/hooks/pre-commit", "vendor/x/.git/hooks/post-checkout", ".claude/settings.json", ".g"} {
		if fi, err := os.Lstat(filepath.Join(w, p)); err == nil && (fi.Size() > 0 || p == ".g") {
			s.t.Errorf("host %s was written (%d bytes)", p, fi.Size())
		}
	}
}

// Case 10: no home directories, host sockets or ungranted siblings are
// visible; the secret outside the grant cannot be read. (A socket hidden
// by a mount keeps its type in its directory's listing, which find reads:
// what counts is what a stat, and so a connect, finds there.)
func (s *suite) hiddenHost() {
	home, _ := os.UserHomeDir()
	out := s.sh(`for d in /home /root /run/user ` + home + `; do echo "dir $d: $(ls -A $d 2>/dev/null | tr '\n' ' ')"; done
for p in /var/run/docker.sock /run/docker.sock /run/podman/podman.sock /run/containerd/containerd.sock /run/dbus/system_bus_socket /dev/log /run/systemd/private; do [ -e $p ] && echo "present $p"; done
find /run /var/run /tmp /dev -type s 2>/dev/null | while read -r p; do [ -S "$p" ] && echo "socket $p"; done
cat ` + s.O + `/canary ` + s.base + `/w-evil/s 2>&1
echo "siblings: $(ls -A ` + s.base + ` | tr '\n' ' ')"`)
	for _, line := range strings.Split(out, "\n") {
		if d, list, ok := strings.Cut(line, ": "); ok && strings.HasPrefix(d, "dir ") && strings.TrimSpace(list) != "" {
			s.t.Errorf("%s is visible and not empty: %s", strings.TrimPrefix(d, "dir "), list)
		}
		if strings.HasPrefix(line, "present ") || strings.HasPrefix(line, "socket ") {
			s.t.Errorf("a host socket is visible: %s", line)
		}
		if sib, ok := strings.CutPrefix(line, "siblings: "); ok {
			for _, n := range strings.Fields(sib) {
				if n != "w" && n != "r" && (s.disk == "" || n != filepath.Base(s.disk)) {
					s.t.Errorf("ungranted %s/%s is visible", s.base, n)
				}
			}
		}
	}
}

// Case 10, /etc: the sandbox reads nothing in /etc that a user other than
// its owner and group may not (the host's TLS keys in /etc/ssl/private,
// root's and group ssl-cert's), though under a root broker its uid 0 is
// their owner, and under any broker it keeps the broker's groups.
func (s *suite) etcSecrets() {
	out := s.sh(`find /etc \( ! -type d ! -type l ! -perm -o=r -readable \) -o \( -type d ! -perm -o=rx -readable \) 2>/dev/null | sed 's/^/readable /'; echo done`)
	for _, line := range strings.Split(out, "\n") {
		if f, ok := strings.CutPrefix(line, "readable "); ok {
			s.t.Errorf("the sandbox may read %s, which others may not", f)
		}
	}
	if !strings.Contains(out, "done") {
		s.t.Errorf("the check did not run: %q", out)
	}
}

// limited skips a case whose limit the backend reports unenforced (only
// when the suite's options accept that), with the reason.
func (s *suite) limited(l wire.Limit) {
	s.t.Helper()
	if slices.Contains(s.unenforced, l) {
		s.t.Skipf("the backend does not enforce the %s limit here (results report it unenforced; missing: %v)", l, s.isolation.Missing)
	}
}

// Case 11: a fork bomb stops at the process limit, the call ends, and
// another sandbox still runs meanwhile. (Bounded, so that a backend with
// no limit fails the case instead of the machine.)
func (s *suite) forkBomb() {
	s.limited(wire.LimitProcesses)
	var wg sync.WaitGroup
	var other string
	wg.Add(1)
	go func() {
		defer wg.Done()
		res := s.call("shell", map[string]any{"command": "echo other-sandbox-runs", "cwd": s.W})
		other = res.Output.Content
	}()
	res := s.call("shell", map[string]any{"cwd": s.W, "command": "# bomb-" + s.marker + `
i=0; while [ $i -lt 500 ]; do (sleep 300 &) || break; i=$((i+1)); done; echo "started $i"`})
	wg.Wait()
	if !strings.Contains(other, "other-sandbox-runs") {
		s.t.Errorf("a sandbox beside the fork bomb failed: %q", other)
	}
	out := res.Output.Content
	if !strings.Contains(out, "started ") || strings.Contains(out, "started 500") {
		s.t.Errorf("class %s: the bomb was not stopped by the process limit: %q", res.Class, out)
	}
	// The limit bounds the sandbox, which may keep a few processes for its
	// own helpers: the native sandbox allows 16 more for its init's
	// threads, which in tool mode (the runner is the init) its command
	// may use (docs/architecture.md).
	if n := fieldAfter(out, "started "); n < 0 || n > pidsLimit+helperAllowance {
		s.t.Errorf("%d processes started under a limit of %d (+%d for the sandbox's helpers)", n, pidsLimit, helperAllowance)
	}
	if !slices.Contains(res.Output.Meta.LimitsHit, wire.LimitProcesses) {
		s.t.Errorf("the result does not report the process limit hit: %+v", res.Output.Meta)
	}
	s.noSurvivors("bomb-" + s.marker)
}

// helperAllowance is how many processes past the call's limit a
// sandbox may allow for its own helpers.
const helperAllowance = 16

func fieldAfter(out, prefix string) int {
	_, rest, ok := strings.Cut(out, prefix)
	if !ok {
		return -1
	}
	f := strings.Fields(rest)
	if len(f) == 0 {
		return -1
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return -1
	}
	return n
}

// Case 12: memory beyond the limit, in the heap, a memfd and tmpfs, is an OOM
// kill inside the sandbox, and the result says so. (/dev/shm may instead
// be smaller than the limit: its write then fails first.)
func (s *suite) memoryBomb() {
	s.limited(wire.LimitMemory)
	for _, c := range []struct {
		cmd      string
		sizeCaps bool // a size cap below the memory limit may stop it first
	}{
		{s.probe + " mem 1024 && echo filled", false},
		{s.probe + " memfd 1024 | grep -q allocated && echo filled", false},
		{"head -c 400000000 /dev/zero > /tmp/fill && echo filled", false},
		{"head -c 400000000 /dev/zero > /dev/shm/fill && echo filled", true},
	} {
		res := s.call("shell", map[string]any{"command": c.cmd, "cwd": s.W})
		if strings.Contains(res.Output.Content, "filled") {
			s.t.Errorf("%s: finished past the memory limit: %q", c.cmd, res.Output.Content)
		}
		// The tool's command was killed (class memory when the whole
		// sandbox was, ok when the tool survived to say so): either way
		// the result names the limit.
		if !c.sizeCaps && res.Class != broker.ClassMemory && !slices.Contains(res.Output.Meta.LimitsHit, wire.LimitMemory) {
			s.t.Errorf("%s: class %s, limits hit %v; want the memory limit reported: %q", c.cmd, res.Class, res.Output.Meta.LimitsHit, res.Output.Content)
		}
	}
}

// Case 13: a call that writes file after file into a writable grant, each
// within the file size limit, or makes empty file after file, is stopped
// before it fills the grant's file system or uses up its inodes (the disk
// guard), and the result names the disk limit.
func (s *suite) diskFill() {
	if s.disk == "" {
		s.t.Skip("needs root to mount a small file system for the grant (CI runs as root)")
	}
	res := s.call("shell", map[string]any{"cwd": s.disk, "command": `i=0; while [ $i -lt 120 ]; do head -c 1048576 /dev/zero > f$i 2>/dev/null; i=$((i+1)); done; echo wrote all; sleep 60`})
	if strings.Contains(res.Output.Content, "wrote all") && !slices.Contains(res.Output.Meta.LimitsHit, wire.LimitDisk) {
		s.t.Errorf("the fill was not stopped: class %s: %q", res.Class, res.Output.Content)
	}
	if !slices.Contains(res.Output.Meta.LimitsHit, wire.LimitDisk) || res.Output.Meta.Limit != wire.LimitDisk {
		s.t.Errorf("class %s, limit %q, limits hit %v; want the disk limit: %q", res.Class, res.Output.Meta.Limit, res.Output.Meta.LimitsHit, res.Output.Content)
	}
	// Empty files use no space but inodes, which run out too.
	res = s.call("shell", map[string]any{"cwd": s.disk, "command": `rm -f f*; seq 1 19500 | xargs touch 2>/dev/null; echo made all; sleep 60`})
	if !slices.Contains(res.Output.Meta.LimitsHit, wire.LimitDisk) || res.Output.Meta.Limit != wire.LimitDisk {
		s.t.Errorf("using up the grant's inodes: class %s, limit %q, limits hit %v; want the disk limit: %q", res.Class, res.Output.Meta.Limit, res.Output.Meta.LimitsHit, res.Output.Content)
	}
}

// Case 13, a file system mounted inside a writable grant: the grant's
// tree holds it (a home directory with a data disk under it), the sandbox
// may write it as it may the grant, so the guard watches it too and a
// fill there is stopped, as one of the grant's own file system is.
func (s *suite) diskFillSubmount() {
	if s.vol == "" {
		s.t.Skip("needs root to mount a small file system inside the grant (CI runs as root)")
	}
	res := s.call("shell", map[string]any{"cwd": s.vol, "command": `i=0; while [ $i -lt 120 ]; do head -c 1048576 /dev/zero > f$i 2>/dev/null; i=$((i+1)); done; echo wrote all; sleep 60`})
	if !slices.Contains(res.Output.Meta.LimitsHit, wire.LimitDisk) || res.Output.Meta.Limit != wire.LimitDisk {
		s.t.Errorf("filling a file system mounted in the grant: class %s, limit %q, limits hit %v; want the disk limit: %q", res.Class, res.Output.Meta.Limit, res.Output.Meta.LimitsHit, res.Output.Content)
	}
}

// Case 13's class, one call past limits.file_size: allocating past the end
// of a file without growing it (fallocate with FALLOC_FL_KEEP_SIZE, and the
// preallocation ioctls the VFS turns into it for any regular file) meets no
// RLIMIT_FSIZE, so one call would take any amount of the host's disk
// through the read-write grant. Each is refused, and the file holds
// nothing after them.
func (s *suite) noPrealloc() {
	got := s.probeOut("prealloc", filepath.Join(s.W, "prealloc-"+s.marker))
	for _, n := range []string{"prealloc_fallocate_keep_size", "prealloc_resvsp", "prealloc_resvsp64", "prealloc_zero_range"} {
		switch v, ok := got[n]; {
		case !ok:
			s.t.Errorf("%s: the probe did not report it", n)
		case v == "0":
			s.t.Errorf("%s: the sandbox allocated past the end of a file in its grant", n)
		}
	}
	if b, err := strconv.ParseInt(got["prealloc_blocks"], 10, 64); err != nil || b > 1<<20 {
		s.t.Errorf("the file holds %q bytes after the calls, want none", got["prealloc_blocks"])
	}
}

// Case 13, the sandbox's own file systems: outside the granted trees only
// /tmp and /dev/shm take a file or a directory, each sized by the tmp
// limit. Anything else a runtime mounts writable (a container's /dev, a
// cgroup file system's tmpfs) would be a place to write outside the
// grant and room past the tmp limit, as a rw grant would be.
func (s *suite) noRoomOutside() {
	granted := "/tmp|/dev/shm|" + s.W + "|" + s.W + "/*"
	if s.disk != "" {
		granted += "|" + s.disk + "|" + s.disk + "/*"
	}
	out := s.sh(`for d in / $(cut -d' ' -f5 /proc/self/mountinfo | sort -u); do
[ -d "$d" ] || continue
case "$d" in ` + granted + `) continue;; esac
(true > "$d/.airlock-probe") 2>/dev/null && echo "file $d"
mkdir "$d/.airlock-probed" 2>/dev/null && echo "dir $d"
done; echo scanned`)
	if !strings.Contains(out, "scanned") {
		s.t.Fatalf("the scan did not finish: %q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if d, ok := strings.CutPrefix(line, "file "); ok {
			s.t.Errorf("the sandbox created a file in %s, outside its grants, /tmp and /dev/shm", d)
		}
		if d, ok := strings.CutPrefix(line, "dir "); ok {
			s.t.Errorf("the sandbox created a directory in %s, outside its grants, /tmp and /dev/shm", d)
		}
	}
}

// Case 14: nothing a call started survives it: setsid, double fork,
// nohup, and the same in a call that times out. Checked on the host and
// from a later call.
func (s *suite) leftBehind() {
	m := s.marker
	s.sh("setsid sleep 1" + m + " & (sleep 2" + m + " &); nohup sleep 3" + m + " >/dev/null 2>&1 & echo started")
	res := s.call("shell", map[string]any{"cwd": s.W, "timeout": 1, "command": "setsid sleep 4" + m + " & (sleep 5" + m + " &); nohup sleep 6" + m + " >/dev/null 2>&1 & sleep 7" + m})
	if res.Class != broker.ClassTimeout && !strings.Contains(res.Output.Content, "timed out") {
		s.t.Errorf("the command past its timeout: class %s: %q", res.Class, res.Output.Content)
	}
	for i := 1; i <= 7; i++ {
		s.noSurvivors("sleep " + strconv.Itoa(i) + m)
	}
	// The script's own command line holds the needle only split in two.
	out := s.sh(`for f in /proc/[0-9]*/cmdline; do case "$(tr '\0' ' ' < $f 2>/dev/null)" in *"sleep "?"` + m[:3] + `"*"` + m[3:] + `"*) echo "left $f";; esac; done; echo checked`)
	if strings.Contains(out, "left ") {
		s.t.Errorf("a later call sees an earlier call's processes:\n%s", out)
	}
}

// Case 19: only the sandbox's own loopback: the host's loopback listener
// is unreachable and no address off the machine has a route.
func (s *suite) noNetwork() {
	before := s.sentinel.accept.Load()
	got := s.probeOut("net", strconv.Itoa(s.sentinel.port))
	if n := s.sentinel.accept.Load() - before; n > 0 {
		s.t.Errorf("the sandbox reached the host's loopback (%d connections): %v", n, got)
	}
	for _, k := range []string{"host_loopback4", "host_loopback6"} {
		if got[k] == "connected" {
			s.t.Errorf("%s: connected to the host's listener", k)
		}
	}
	if got["interface"] != "" {
		s.t.Fatalf("the sandbox has a network interface besides lo: %s", got["interface"])
	}
	for _, k := range []string{"tcp4_testnet", "tcp6_testnet", "udp4_testnet"} {
		if v := got[k]; v != "ENETUNREACH" && v != "EPERM" && v != "EACCES" && v != "EAFNOSUPPORT" {
			s.t.Errorf("%s: %q, want no route (ENETUNREACH) or a refusal", k, v)
		}
	}
	if v := got["raw_icmp"]; v == "ok" {
		s.t.Errorf("raw_icmp: a raw socket opened")
	}
}

// Case 28: a host service's Unix socket inside a granted tree, read-write
// or read-only, is not reachable, by a connect or by a tool: connecting
// needs only write permission on the socket, which a read-only mount does
// not take away, so the socket itself is hidden.
func (s *suite) hostSockets() {
	before := s.sockets.accept.Load()
	got := s.probeOut(append([]string{"unix"}, s.sockets.paths...)...)
	for i, p := range s.sockets.paths {
		switch k := "unix_" + strconv.Itoa(i+1); got[k] {
		case "":
			s.t.Errorf("%s (%s): the probe reported nothing", k, p)
		case "connected":
			s.t.Errorf("the sandbox connected to the host's socket %s", p)
		}
	}
	if n := s.sockets.accept.Load() - before; n > 0 {
		s.t.Errorf("the host's sockets in granted trees took %d connections from the sandbox", n)
	}
	for _, p := range s.sockets.paths {
		s.refused("read_file", map[string]any{"path": p})
	}
}

// Case 41 (the kernel's surfaces): a crash in the sandbox starts nothing
// on the host and writes no core. Where core_pattern pipes cores to a
// helper (systemd-coredump, apport), the kernel runs it as root on the
// host for each crash whatever RLIMIT_CORE is, unless it is exactly 1; so
// the limit is 1 and no process in the sandbox may change it: a change
// is answered as done and not made (or refused, when it also asks for
// the old value, which it could not be given). A crash writes no core.
func (s *suite) coreLimit() {
	got := s.probeOut("core")
	if got["core_0"] != "1/1" {
		s.t.Errorf("RLIMIT_CORE at start is %q, want 1/1", got["core_0"])
	}
	for i := 1; i <= 4; i++ {
		if v := got["core_"+strconv.Itoa(i)]; v != "1/1" {
			s.t.Errorf("after try %d, RLIMIT_CORE is %q, want it kept at 1/1 (the call returned errno %s)", i, v, got["core_"+strconv.Itoa(i)+"_call"])
		}
	}
	dir := filepath.Join(s.W, "crash-"+s.marker)
	s.sh("mkdir -p " + dir + " && cd " + dir + " && ulimit -c unlimited 2>/dev/null; sh -c 'kill -SEGV $$'; echo crashed")
	ents, err := os.ReadDir(dir)
	if err != nil {
		s.t.Fatalf("reading %s: %v", dir, err)
	}
	for _, e := range ents {
		s.t.Errorf("a crash in the sandbox left %s in %s", e.Name(), dir)
	}
	os.RemoveAll(dir)
}

// Case 30: the sandbox's environment is built, not inherited: none of
// the broker's variables reach it, in the shell or in any process.
func (s *suite) environment() {
	out := s.sh(`env; for f in /proc/[0-9]*/environ; do tr '\0' '\n' < $f 2>/dev/null; done; echo done`)
	for _, line := range strings.Split(out, "\n") {
		name, _, _ := strings.Cut(line, "=")
		if name == "AIRLOCK_SUITE_TOKEN" || strings.HasPrefix(name, "AWS_") || name == "SSH_AUTH_SOCK" {
			s.t.Errorf("the broker's %s reached the sandbox", name)
		}
	}
}

// Case 34: no credential in a home directory is readable.
func (s *suite) homeCredentials() {
	home, _ := os.UserHomeDir()
	var paths []string
	for _, h := range []string{"~", home, "/root"} {
		for _, f := range []string{".ssh/id_rsa", ".ssh/id_ed25519", ".aws/credentials", ".netrc", ".git-credentials", ".docker/config.json", ".config/gh/hosts.yml", ".kube/config"} {
			paths = append(paths, h+"/"+f)
		}
	}
	out := s.sh("for f in " + strings.Join(paths, " ") + "; do [ -e \"$f\" ] && echo \"present $f\"; done; echo checked")
	if strings.Contains(out, "present ") {
		s.t.Errorf("home credentials are visible:\n%s", out)
	}
}

// Case 35: no nested user namespace, by the tool or the system call.
func (s *suite) nestedUserns() {
	s.noRC0("unshare", s.sh("unshare -Ur true 2>&1; echo rc=$?; unshare -Urn true 2>&1; echo rc=$?; unshare -m true 2>&1; echo rc=$?"))
	got := s.sys()
	s.errnos(got, []string{"unshare_newuser", "unshare_newns", "setns"}, eperm, enosys)
}

// Case 36: the mount family is refused.
func (s *suite) mountFamily() {
	s.noRC0("mount", s.sh("mount -t tmpfs x /tmp 2>&1; echo rc=$?; mount --bind / "+s.W+"/mnt 2>&1; echo rc=$?; umount /proc 2>&1; echo rc=$?; chroot / true 2>&1; echo rc=$?"))
	got := s.sys()
	s.errnos(got, []string{"mount", "umount2", "chroot", "pivot_root", "fsopen", "fsmount", "open_tree", "move_mount", "mount_setattr"}, eperm, enosys)
}

// Case 37: PID 1 cannot be entered, traced, written or read.
func (s *suite) pid1() {
	s.noRC0("reaching PID 1", s.sh("nsenter -t 1 -a true 2>&1; echo rc=$?; (exec 3<>/proc/1/mem) 2>&1; echo rc=$?; cat /proc/1/environ >/dev/null 2>&1; echo rc=$?; readlink /proc/1/root 2>&1; echo rc=$?; readlink /proc/1/cwd 2>&1; echo rc=$?"))
	got := s.sys()
	s.errnos(got, []string{"ptrace_attach_1", "process_vm_writev_1"}, eperm, esrch, enosys)
}

// Case 39: the payload holds only its standard streams, none of them a
// host directory or socket; PID 1's are out of reach.
func (s *suite) leakedFDs() {
	// (No command substitution: its pipe would be the shell's own fd.)
	out := s.sh(`echo fds-begin; ls /proc/$$/fd; echo fds-end; for n in 0 1 2; do printf "fd$n "; readlink /proc/$$/fd/$n; done; printf "init "; ls -l /proc/1/fd 2>/dev/null | grep -c -- '->'; (cd /proc/self/fd/3) 2>&1; echo rc=$?`)
	_, fds, _ := strings.Cut(out, "fds-begin\n")
	fds, _, _ = strings.Cut(fds, "fds-end")
	if got := strings.Fields(fds); strings.Join(got, " ") != "0 1 2" {
		s.t.Errorf("the shell holds fds %v, want 0 1 2:\n%s", got, out)
	}
	for _, n := range []string{"fd0 ", "fd1 ", "fd2 "} {
		l := lineAfter(out, n)
		if !strings.HasPrefix(l, "pipe:") && l != "/dev/null" && !strings.HasPrefix(l, "/dev/pts/") {
			s.t.Errorf("%s points at %q, want a pipe or /dev/null", strings.TrimSpace(n), l)
		}
	}
	if l := lineAfter(out, "init "); l != "0" {
		s.t.Errorf("PID 1's fd links are readable (%s):\n%s", l, out)
	}
	s.noRC0("cd /proc/self/fd/3", out)
}

func lineAfter(out, prefix string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Case 40: io_uring is refused outright (EPERM), not reached (EBADF).
func (s *suite) ioUring() {
	s.errnos(s.sys(), []string{"io_uring_setup", "io_uring_enter", "io_uring_register"}, eperm, enosys)
}

// Case 41: the riskiest kernel surfaces answer EPERM or ENOSYS.
func (s *suite) syscallSweep() {
	names := []string{"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd", "open_by_handle_at",
		"kexec_load", "finit_module", "swapon", "syslog", "acct", "personality", "ioctl_setflags"}
	got := s.sys()
	if _, ok := got["iopl"]; ok {
		names = append(names, "iopl", "modify_ldt")
	}
	s.errnos(got, names, eperm, enosys)
}

// Case 41's class, a kernel surface that reaches past the sandbox: no
// lease on a host file (fcntl F_SETLEASE). While a sandbox held one, every
// open of the file on the host (an exec mapping ld.so.cache, an editor,
// the broker) would wait up to fs.lease-break-time for it to break, and
// the sandbox could take it again at once. The files are the host's, in
// the read-only and the read-write grant.
func (s *suite) noLeases() {
	ro, rw := s.R+"/f", filepath.Join(s.W, "lease-"+s.marker)
	if err := os.WriteFile(rw, []byte("lease\n"), 0o644); err != nil {
		s.t.Fatal(err)
	}
	defer os.Remove(rw)
	got := s.probeOut("lease", ro, rw)
	for _, n := range []string{"lease_rd_1", "lease_wr_1", "lease_rd_2", "lease_wr_2"} {
		switch v, ok := got[n]; {
		case !ok:
			s.t.Errorf("%s: the probe did not report it", n)
		case v == "0":
			s.t.Errorf("%s: the sandbox took a lease on a host file", n)
		}
	}
}

// Case 42: no capabilities, no_new_privs, and no privilege from a setuid
// binary.
func (s *suite) setuidCaps() {
	out := s.sh(`grep -E '^(CapEff|CapPrm|CapAmb|NoNewPrivs):' /proc/self/status
for b in /usr/bin/su /bin/su /usr/bin/sudo /usr/bin/passwd /usr/bin/newgrp /bin/ping /usr/bin/ping; do [ -u $b ] && echo "setuid $b"; done
su -c 'grep CapEff /proc/self/status' 2>&1 | sed 's/^/su: /'; sudo -n grep CapEff /proc/self/status 2>&1 | sed 's/^/sudo: /'; echo done`)
	for _, want := range []string{"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1"} {
		if !strings.Contains(out, want+"\n") {
			s.t.Errorf("want %q in:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "CapEff:") && !strings.HasSuffix(line, "0000000000000000") {
			s.t.Errorf("a process gained capabilities: %s", line)
		}
	}
}

// Case 42, the other way round: the sandbox cannot leave a set-user-ID or
// set-group-ID file in a read-write tree. Its files are the host's, owned
// by the sandbox's user there (host root under a root broker), and nosuid
// holds only inside the sandbox, so such a file would run as that user for
// anyone on the host who executes it.
func (s *suite) noSetIDFiles() {
	dir := filepath.Join(s.W, "setid-"+s.marker)
	// (busybox, in some backends' images, has no install and a cp that
	// knows -p only.)
	out := s.sh(`mkdir ` + dir + ` && cd ` + dir + ` && printf '#!/bin/sh\nid\n' >a && cp a b && cp a c && cp a d && chmod 0755 a b c d && echo plain-ok
chmod u+s a; chmod g+s b; chmod 6755 c; command -v install >/dev/null && install -m 4755 d e; cp -p d f; chmod 4755 f; cp -p f g; echo shell-done`)
	if !strings.Contains(out, "plain-ok") || !strings.Contains(out, "shell-done") {
		s.t.Fatalf("the shell part did not run:\n%s", out)
	}
	// The set-user-ID file the suite made in $W stays as it was, written
	// to plainly or through a shared mapping.
	pre := filepath.Join(s.W, "tool-suid")
	// (A backend's setup may have changed its owner, which clears the
	// bit; what counts is that the sandbox changes nothing.)
	fiBefore, err := os.Lstat(pre)
	if err != nil {
		s.t.Fatal(err)
	}
	s.sh(`cd ` + s.W + ` && printf 'echo planted' | dd of=tool-suid bs=1 seek=10 conv=notrunc 2>&1; command -v python3 >/dev/null && python3 -c "import mmap,os; m=mmap.mmap(os.open('tool-suid',os.O_RDWR),0); m[10:17]=b'planted'; m.flush()" 2>&1; echo done`)
	if b, err := os.ReadFile(pre); err != nil || string(b) != "#!/bin/sh\necho original\n" {
		s.t.Errorf("the set-user-ID file in $W changed: %q (%v)", b, err)
	}
	if fi, err := os.Lstat(pre); err != nil || fi.Mode() != fiBefore.Mode() {
		s.t.Errorf("the set-user-ID file in $W: mode %v, was %v (%v)", fi.Mode(), fiBefore.Mode(), err)
	}
	got := s.probeOut("setid", dir)
	var refused []string
	for name := range got {
		if strings.HasSuffix(name, "_suid") || strings.HasSuffix(name, "_sgid") {
			refused = append(refused, name)
		}
	}
	if len(refused) < 8 {
		s.t.Errorf("the probe reported %d calls that set the bits, want at least 8: %v", len(refused), got)
	}
	s.errnos(got, refused, eperm, enosys)
	s.errnos(got, []string{"fchmodat_plain", "openat_creat_plain"}, "0")
	entries, err := os.ReadDir(dir)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, e := range entries {
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			s.t.Fatal(err)
		}
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			s.t.Errorf("%s is %v on the host", e.Name(), fi.Mode())
		}
	}
	if len(entries) < 10 {
		s.t.Errorf("only %d files in %s: the calls that must succeed did not run", len(entries), dir)
	}
}

// Case 10, /proc: no file at the top of /proc that only root may read
// (kpageflags, slabinfo, vmallocinfo, kmsg, ...) yields a byte, whether
// the backend masks it or the sandbox's root is not the host's.
func (s *suite) rootOnlyProc() {
	files := 0
	for name, n := range s.probeOut("proc") {
		file, ok := strings.CutPrefix(name, "proc_")
		if !ok {
			continue
		}
		files++
		if n != "-1" && n != "0" {
			s.t.Errorf("/proc/%s gave the sandbox %s bytes", file, n)
		}
	}
	if files == 0 {
		s.t.Errorf("the probe found no root-only file at the top of /proc")
	}
}

// Case 51, the kernel's share: the objects the kernel counts per user
// (inotify instances and watches, fanotify groups, queued signals, POSIX
// message queues' bytes, user namespaces) are bounded in the sandbox's own user namespace, since the
// counts are charged to the user that made it too (the broker's, host
// root under a root broker), whose allowance a sandbox used up; kernel
// AIO, one pool for the whole machine, is refused.
func (s *suite) perUserCounts() {
	got := s.probeOut("counts")
	atMost := func(name string, max int) {
		s.t.Helper()
		n, err := strconv.Atoi(got[name])
		if err != nil || n > max {
			s.t.Errorf("%s is %q in the sandbox, want at most %d", name, got[name], max)
		}
	}
	atMost("max_inotify_instances", 32)
	atMost("max_inotify_watches", 65536)
	atMost("max_user_namespaces", 0)
	atMost("sigpending_max", 1024)
	// POSIX message queues' bytes are charged to that user too: a queue
	// larger than the bound is refused (EMFILE), or there are none.
	atMost("msgqueue_max", 64<<10)
	if got["mq_open_80k"] == "0" {
		s.t.Errorf("the sandbox made an 80 KiB POSIX message queue")
	}
	atMost("inotify_instances", 32)
	if got["inotify_instances"] == "0" {
		s.t.Errorf("the sandbox could make no inotify instance at all")
	}
	if got["fanotify_init"] != eperm {
		atMost("max_fanotify_groups", 8)
	}
	s.errnos(got, []string{"io_setup"}, eperm, enosys)
}
