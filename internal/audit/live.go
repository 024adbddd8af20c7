package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/procid"
	"github.com/airlockhq/airlock/wire"
)

// LiveDir is the directory of a records root that holds the live sessions:
// one directory per session, <LiveDir>/<session>/, holding an owner file
// (which process runs the session) and one file per call or background
// work in flight. A session's directory goes when it closes; one whose
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
}

// Live is one session's live directory. Its methods are safe for
// concurrent use (each touches its own file).
type Live struct {
	dir string
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
	if err := writeJSON(filepath.Join(tmp, ownerFile), owner{Process: procid.Self()}); err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("creating the live-session directory: %w", err)
	}
	return &Live{dir: dir}, nil
}

// Begin records that f is in flight, before it runs. An error (a full
// disk, say) means the records cannot be kept: the caller must not run it.
func (l *Live) Begin(f InFlight) error {
	if f.Time.IsZero() {
		f.Time = time.Now().UTC()
	}
	return writeJSON(filepath.Join(l.dir, inflightName(f)), f)
}

// End records that f is no longer in flight (its record is written).
func (l *Live) End(f InFlight) {
	_ = os.Remove(filepath.Join(l.dir, inflightName(f)))
}

// Close removes the session's live directory: it closed cleanly. A
// session that closes cleanly has nothing in flight, so the directory holds
// only its owner file: two system calls, where os.RemoveAll would first
// try the directory as a file and read it; anything else left there is
// removed with it all the same.
func (l *Live) Close() error {
	if os.Remove(filepath.Join(l.dir, ownerFile)) == nil && os.Remove(l.dir) == nil {
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
		dir := filepath.Join(root, LiveDir, e.Name())
		var o owner
		if b, err := os.ReadFile(filepath.Join(dir, ownerFile)); err == nil {
			if json.Unmarshal(b, &o) == nil && o.Process.Alive() {
				continue
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := recoverSession(root, e.Name(), dir, o, interrupted); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, e.Name())
	}
	return done, errors.Join(errs...)
}

func recoverSession(root, session, dir string, o owner, interrupted func(InFlight)) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var flights []InFlight
	for _, e := range ents {
		if e.Name() == ownerFile || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		var f InFlight
		if err != nil || json.Unmarshal(b, &f) != nil {
			continue // torn by the crash: the id is still in the name
		}
		flights = append(flights, f)
	}
	sort.Slice(flights, func(i, j int) bool { return flights[i].Time.Before(flights[j].Time) })
	lg, err := Open(filepath.Join(root, session))
	if err != nil {
		return err
	}
	defer lg.Close() // after a failed write; the records are synced below
	why := "the broker (pid " + strconv.Itoa(o.Process.PID()) + ") ended before this was recorded as finished"
	for _, f := range flights {
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
	if err := lg.Write(Record{Kind: KindSession, Session: session, Decision: "close", Class: ClassInterrupted, Detail: why}); err != nil {
		return err
	}
	// The records are on disk before the live directory that stood for
	// them goes.
	if err := lg.Close(); err != nil {
		return err
	}
	if interrupted != nil {
		for _, f := range flights {
			interrupted(f)
		}
	}
	return os.RemoveAll(dir)
}
