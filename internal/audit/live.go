package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/procid"
	"github.com/airlockhq/airlock/internal/regularfile"
	"github.com/airlockhq/airlock/wire"
)

// LiveDir is the directory of a records root that holds the live sessions:
// one directory per session, <LiveDir>/<session>/, holding an owner file
// (which process runs the session) and in-flight slots, files named
// slot-N.json: one holding a JSON InFlight per call or background work in
// flight (spaces may follow it), blank ones (empty or only spaces) free. A
// slot is written when its work begins and blanked when it ends, and kept
// for the next, so a call costs two writes over the same bytes, not a
// file's creation and removal (an inode allocated and freed per call,
// ~0.25 ms of a warm call's CPU on ext4), nor a truncation (the slot's
// block freed and allocated again per call, ~85 us of system calls on
// this host's ext4). A session's
// directory goes when it closes; one whose
// owner died (kill -9, a crash) is found by Recover at the next start of
// airlock over the same records root, which writes the records the dead
// broker could not: every call and background work in flight "interrupted",
// and the session's close.
const LiveDir = ".live"

const ownerFile = "owner"

// ClassInterrupted is the class of a call or background work whose broker
// died before it ended.
const ClassInterrupted = wire.ClassInterrupted

// InFlight is one call or background work a live session has started.
type InFlight struct {
	Kind   string    `json:"kind"` // KindCall or KindBackgroundStart
	CallID string    `json:"call_id,omitempty"`
	WorkID string    `json:"work_id,omitempty"`
	Tool   string    `json:"tool,omitempty"`
	Time   time.Time `json:"time"`
	// Dirs are the host directories of the paths the call may write
	// (write_file, edit_file), where its tool may make a temporary file:
	// Recover hands them to its caller, which removes those a call killed
	// with its broker left (writetmp.Sweep).
	Dirs []string `json:"dirs,omitempty"`
}

// owner says which process runs a live session.
type owner struct {
	Process procid.ID `json:"process"`
	// Space is where Process is a pid (procid.Space): a session owned in
	// another space (another container's PID namespace over a shared
	// records volume, another host) is never taken for dead, since its
	// pid cannot be looked up here. Empty in files that predate it: this
	// space's.
	Space string `json:"space,omitempty"`
}

// ours reports whether a process of space can be looked up from here.
func ours(space string) bool { return space == "" || space == procid.Space() }

// Live is one session's live directory. Its methods are safe for
// concurrent use.
type Live struct {
	dir string

	mu    sync.Mutex
	free  []*slot          // blank slots
	busy  map[string]*slot // the slot of each work in flight, by inflightName
	slots int              // slots made: the next is slot-<slots>.json
}

// slot is one in-flight slot, open for writing.
type slot struct {
	f *os.File
	n int // the most bytes ever written at its start: a blank slot holds n spaces
}

// write writes record b and a newline at the start of the blank slot. What
// follows it there are spaces, which JSON allows after a value.
func (s *slot) write(b []byte) error {
	line := append(b, '\n')
	s.n = max(s.n, len(line)) // before the write: blank covers a torn one too
	_, err := s.f.WriteAt(line, 0)
	return err
}

// blank makes the slot free: spaces over all it ever held, its blocks kept.
func (s *slot) blank() error {
	_, err := s.f.WriteAt(blanks(s.n), 0)
	return err
}

// blanks returns n spaces.
func blanks(n int) []byte {
	return []byte(strings.Repeat(" ", n))
}

// OpenLive marks session as live under the records root.
func OpenLive(root, session string) (*Live, error) {
	dir := filepath.Join(root, LiveDir, session)
	// The directory appears with its owner file in it (made aside, then
	// renamed), so Recover never takes a session being opened for a dead one.
	tmp := filepath.Join(root, LiveDir, ".new-"+session)
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("creating the live-session directory: %w", err)
	}
	if err := writeJSON(filepath.Join(tmp, ownerFile), owner{Process: procid.Self(), Space: procid.Space()}); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("creating the live-session directory: %w", err)
	}
	return &Live{dir: dir, busy: map[string]*slot{}}, nil
}

// Begin records that f is in flight, before it runs, in a free slot (a new
// one when none is). An error (a full disk, say) means the records cannot
// be kept: the caller must not run it.
func (l *Live) Begin(f InFlight) error {
	if f.Time.IsZero() {
		f.Time = time.Now().UTC()
	}
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	name := inflightName(f)
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.busy[name]; ok {
		return fmt.Errorf("recording %s in flight: it is in flight already", name)
	}
	var s *slot
	if n := len(l.free); n > 0 {
		s, l.free = l.free[n-1], l.free[:n-1]
	} else {
		path := filepath.Join(l.dir, "slot-"+strconv.Itoa(l.slots)+".json")
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fmt.Errorf("recording %s in flight: %w", name, err)
		}
		s = &slot{f: f}
		l.slots++
	}
	// The slot is blank: the record goes at its start, whole or, should
	// the broker die halfway, torn (Recover skips what does not decode).
	if err := s.write(b); err != nil {
		if s.blank() == nil {
			l.free = append(l.free, s)
		} else {
			s.f.Close()
		}
		return fmt.Errorf("recording %s in flight: %w", name, err)
	}
	l.busy[name] = s
	return nil
}

// End records that f is no longer in flight (its record is written): its
// slot is blanked and free again. Ending what is not in flight does
// nothing.
func (l *Live) End(f InFlight) {
	name := inflightName(f)
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.busy[name]
	if !ok {
		return
	}
	delete(l.busy, name)
	if s.blank() != nil {
		// Left as it is, Recover would take the work for interrupted:
		// the slot is retired, and removed at Close.
		s.f.Close()
		return
	}
	l.free = append(l.free, s)
}

// Close removes the session's live directory: it closed cleanly. A
// session that closes cleanly has nothing in flight, so the directory holds
// its owner file and empty slots; anything else left there is removed with
// it all the same.
func (l *Live) Close() error {
	l.mu.Lock()
	for _, s := range l.free {
		s.f.Close()
	}
	for _, s := range l.busy {
		s.f.Close()
	}
	l.free, l.busy = nil, map[string]*slot{}
	slots := l.slots
	l.mu.Unlock()
	// By name, as the directory should hold them: a system call each,
	// where os.RemoveAll would first try the directory as a file and
	// read it.
	clean := true
	for i := range slots {
		if os.Remove(filepath.Join(l.dir, "slot-"+strconv.Itoa(i)+".json")) != nil {
			clean = false
		}
	}
	if clean && os.Remove(filepath.Join(l.dir, ownerFile)) == nil && os.Remove(l.dir) == nil {
		return nil
	}
	return os.RemoveAll(l.dir)
}

func inflightName(f InFlight) string {
	if f.WorkID != "" {
		return f.WorkID + ".json"
	}
	return f.CallID + ".json"
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("recording %s: %w", filepath.Base(path), err)
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("recording %s: %w", filepath.Base(path), err)
	}
	return nil
}

// Recover writes the missing records of every session under root whose
// broker died: each call and background work in flight as interrupted, then
// the session's close, and removes its live directory. Sessions of live
// processes are left alone. Before a live directory goes, interrupted (when
// not nil) is called with each call in flight there, once its record is
// written, to undo what the call may have left half done. It returns the
// sessions recovered.
func Recover(root string, interrupted func(InFlight)) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(root, LiveDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing live sessions: %w", err)
	}
	var done []string
	var errs []error
	for _, e := range ents {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue // being opened
		}
		session, claimer, claimed := strings.Cut(e.Name(), recovering)
		claimer, claimSpace, _ := strings.Cut(claimer, "@")
		if claimed && (!ours(claimSpace) || procid.ID(claimer).Alive()) {
			continue // being recovered, or by another space's airlock
		}
		dir := filepath.Join(root, LiveDir, e.Name())
		if !claimed {
			var o owner
			if b, err := readRegular(filepath.Join(dir, ownerFile), maxLiveFile); err == nil {
				if json.Unmarshal(b, &o) == nil && (!ours(o.Space) || o.Process.Alive()) {
					continue // live, or another space's: its own airlock recovers it
				}
			} else if !errors.Is(err, fs.ErrNotExist) {
				continue
			}
		}
		// One recovery takes each dead session: the one whose rename
		// of its directory succeeds (several starts of airlock may
		// recover at once). A recovery that dies too leaves it named
		// for a dead process, and the next takes it over.
		claim := string(procid.Self())
		if sp := procid.Space(); sp != "" {
			claim += "@" + sp
		}
		mine := filepath.Join(root, LiveDir, session+recovering+claim)
		if os.Rename(dir, mine) != nil {
			continue
		}
		var o owner
		if b, err := readRegular(filepath.Join(mine, ownerFile), maxLiveFile); err == nil {
			_ = json.Unmarshal(b, &o) // the dead broker's pid, only named
		}
		if err := recoverSession(root, session, mine, o, interrupted); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, session)
	}
	return done, errors.Join(errs...)
}

// recovering joins a session's id and the process recovering it in the
// name of its live directory while Recover writes its records (a session's
// id has no '.').
const recovering = ".recovering."

// InFlightUnder lists what the live sessions under the records root have
// in flight, live or dead, oldest first: what Recover would record as
// interrupted, were their brokers gone.
func InFlightUnder(root string) ([]InFlight, error) {
	dirs, err := filepath.Glob(filepath.Join(root, LiveDir, "*"))
	if err != nil {
		return nil, err
	}
	var all []InFlight
	for _, dir := range dirs {
		if strings.HasPrefix(filepath.Base(dir), ".") {
			continue // being opened
		}
		flights, err := inFlight(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		all = append(all, flights...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
	return all, nil
}

// inFlight reads the works in flight of one live directory, oldest first.
func inFlight(dir string) ([]InFlight, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var flights []InFlight
	for _, e := range ents {
		if e.Name() == ownerFile || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := readRegular(filepath.Join(dir, e.Name()), maxLiveFile)
		var f InFlight
		if err != nil || len(bytes.TrimSpace(b)) == 0 || json.Unmarshal(b, &f) != nil {
			continue // a free slot, or one torn by the crash
		}
		flights = append(flights, f)
	}
	sort.Slice(flights, func(i, j int) bool { return flights[i].Time.Before(flights[j].Time) })
	return flights, nil
}

func recoverSession(root, session, dir string, o owner, interrupted func(InFlight)) error {
	flights, err := inFlight(dir)
	if err != nil {
		return err
	}
	recorded, closed, err := recordedAlready(filepath.Join(root, session, FileName))
	if err != nil {
		return err
	}
	lg, err := Open(filepath.Join(root, session))
	if err != nil {
		return err
	}
	defer lg.Close() // after a failed write; the records are synced below
	why := "the broker (pid " + strconv.Itoa(o.Process.PID()) + ") ended before this was recorded as finished"
	var left []InFlight
	for _, f := range flights {
		if recorded[inflightName(f)] {
			continue // recorded, and the broker died before it blanked the slot
		}
		left = append(left, f)
		rec := Record{Session: session, Tool: f.Tool, Class: ClassInterrupted, Detail: why}
		switch f.Kind {
		case KindBackgroundStart:
			rec.Kind, rec.WorkID = KindBackgroundEnd, f.WorkID
		default:
			rec.Kind, rec.CallID, rec.Decision = KindCall, f.CallID, "allowed"
		}
		if err := lg.Write(rec); err != nil {
			return err
		}
	}
	if !closed {
		if err := lg.Write(Record{Kind: KindSession, Session: session, Decision: "close", Class: ClassInterrupted, Detail: why}); err != nil {
			return err
		}
	}
	// The records are on disk before the live directory that stood for
	// them goes.
	if err := lg.Close(); err != nil {
		return err
	}
	if interrupted != nil {
		for _, f := range left {
			interrupted(f)
		}
	}
	return os.RemoveAll(dir)
}

// recordedAlready reads a session's records file for what its broker
// recorded before it died but after the last change to its live directory:
// the calls and background works that ended (by inflightName) and whether
// the session's close was written after its last open (a file may hold
// several lives of one session id). The broker writes a record before it
// blanks the slot that stood for it, and the close before it removes the
// live directory, so Recover must not record them a second time. A
// session with no records file yet has none.
func recordedAlready(path string) (map[string]bool, bool, error) {
	f, err := regularfile.Open(path, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading the records of a session whose broker died: %w", err)
	}
	defer f.Close()
	done := map[string]bool{}
	closed := false
	err = Decode(f, 1, func(r Record) error {
		switch {
		case r.Kind == KindCall && r.CallID != "":
			done[inflightName(InFlight{CallID: r.CallID})] = true
		case r.Kind == KindBackgroundEnd && r.WorkID != "":
			done[inflightName(InFlight{WorkID: r.WorkID})] = true
		case r.Kind == KindSession && r.Decision == "close":
			closed = true
		case r.Kind == KindSession && r.Decision == "open":
			// A session opened again under an id it had before (an
			// embedder's Options.ID) appends to the same file: only a
			// close after its last open closes the life that died.
			closed = false
		}
		return nil
	}, func(int, bool, error) {})
	if err != nil {
		return nil, false, fmt.Errorf("reading the records of a session whose broker died: %w", err)
	}
	return done, closed, nil
}

// maxLiveFile is the most an owner file or an in-flight slot holds: a few
// hundred bytes are written there; more is not one of them.
const maxLiveFile = 1 << 20

// readRegular reads path, a regular file of at most max bytes, never
// waiting: a FIFO (or a device) planted in the records directory would
// otherwise block the open or the read until a writer came, and Recover
// runs at every start of airlock, which it would wedge for ever. A symlink
// is refused (regularfile).
func readRegular(path string, max int64) ([]byte, error) {
	return regularfile.Read(path, max, false)
}
