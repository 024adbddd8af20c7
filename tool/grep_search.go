package tool

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/airlockhq/airlock/wire"
)

// A grepSearch is one grep call: its settings, and the output collected in
// path order.
//
// A directory is searched by a pipeline: one walker lists directories in
// sorted order and hands each file to a small pool of workers, which read and
// scan it into a fileResult; the caller's goroutine collects the results in
// the walker's order. The order channel is a window that bounds the files in
// flight, so memory stays bounded however large the tree.
//
//	walker ──jobs──▶ workers ──job.res──▶ collector
//	   └─────────order (in walk order)──────▶┘
type grepSearch struct {
	m       *lineMatcher
	mode    string
	context int
	head    int   // output lines kept; 0 = no limit
	maxOut  int   // output bytes kept
	maxFile int64 // larger files are skipped
	glob    *globPattern
	// globBase: the glob has no "/", so it matches file names, not paths.
	globBase bool
	env      Env // for its Hidden placeholders
	// budget bounds the bytes the readers of a tree hold at once (nil
	// for one file).
	budget *readBudget

	out       bytes.Buffer
	lines     int // output lines so far
	matches   int // matching lines so far
	files     int // files with a match so far
	binary    int
	large     []string // the first largeShown files skipped as too large
	nlarge    int      // how many were
	tooDeep   int
	held      int    // directory entries the walker holds (walk)
	unsorted  int    // directories too large to sort, searched as listed
	cut       string // why output stopped early; "" if it did not
	omitted   int64  // bytes known to be cut from the output
	stoppedBy error
}

// A fileResult is one file's contribution to the output.
type fileResult struct {
	text    []byte // rendered lines, each ending in '\n'
	matches int
	binary  bool
	large   bool
	cut     bool // the file had more output than could be kept
	// again: a worker dropped the text, past the budget of results read
	// ahead; the collector searches the file itself.
	again bool
	shown string
}

// grepReadBudget is how many files of the largest size grep searches its
// readers may hold at once, together.
const grepReadBudget = 2

// largeShown is how many of the files skipped as too large grep names.
const largeShown = 5

// maxPendingOutputs is how many output caps of text the results read
// ahead of the collector may hold together.
const maxPendingOutputs = 4

type grepJob struct {
	dir   *dirRef
	name  string
	shown string
	res   chan fileResult // buffered: a worker never blocks on it
}

// A dirRef shares one open directory between the walker and the workers
// reading its files; the last to finish closes it.
type dirRef struct {
	root *os.Root
	refs atomic.Int32
}

func newDirRef(r *os.Root) *dirRef {
	d := &dirRef{root: r}
	d.refs.Store(1)
	return d
}

func (d *dirRef) hold() { d.refs.Add(1) }

func (d *dirRef) release() {
	if d.refs.Add(-1) == 0 {
		d.root.Close()
	}
}

// joinShown appends name to a shown (absolute) directory path.
func joinShown(dir, name string) string {
	if strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + "/" + name
}

// searchOne searches one file, name, in dir.
func (s *grepSearch) searchOne(dir *os.Root, name, shown string) {
	w := grepWorker{s: s}
	s.add(w.file(dir, name, shown))
}

// searchTree searches every file beneath top, which it closes.
func (s *grepSearch) searchTree(parent context.Context, top *os.Root, shown string) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	s.budget = newReadBudget(grepReadBudget * s.maxFile)
	jobs := make(chan *grepJob, 64)
	order := make(chan *grepJob, 256)
	var wg sync.WaitGroup
	// The results read ahead of the collector hold at most
	// maxPendingOutputs outputs' worth of text between them: a result past
	// that is dropped and marked again, and the collector searches its
	// file itself when it reaches it. Else the window of 256 files, each
	// rendering up to the output cap (a long path on every short line),
	// held 256 times the cap while a slow file ahead of them was read.
	var pending atomic.Int64
	budget := int64(maxPendingOutputs) * int64(s.maxOut)
	for range max(2, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			w := grepWorker{s: s}
			for j := range jobs {
				if ctx.Err() != nil {
					j.res <- fileResult{}
					j.dir.release()
					continue
				}
				r := w.file(j.dir.root, j.name, j.shown)
				if n := int64(len(r.text)); n > 0 && pending.Add(n) > budget {
					pending.Add(-n)
					j.res <- fileResult{again: true} // j.dir stays held for the collector
					continue
				}
				j.res <- r
				j.dir.release()
			}
		})
	}
	own := grepWorker{s: s}
	var left []*grepJob // jobs taken from order whose result was not read
	wg.Go(func() {
		defer close(jobs)
		defer close(order)
		s.walk(ctx, newDirRef(top), "", shown, 0, jobs, order)
	})
collect:
	for j := range order {
		select {
		case r := <-j.res:
			if r.again {
				r = own.file(j.dir.root, j.name, j.shown)
				j.dir.release()
			} else {
				pending.Add(-int64(len(r.text)))
			}
			if !s.add(r) {
				break collect
			}
		case <-ctx.Done():
			left = append(left, j)
			break collect
		}
	}
	if err := parent.Err(); err != nil && s.cut == "" {
		s.stoppedBy = err
	}
	cancel()
	for j := range order {
		left = append(left, j)
	}
	wg.Wait()
	// A result left unread whose file a worker left for the collector
	// still holds its directory. (A job the walker never queued has no
	// result: the walker released its directory.)
	for _, j := range left {
		select {
		case r := <-j.res:
			if r.again {
				j.dir.release()
			}
		default:
		}
	}
}

// walk lists d in sorted order, queueing its files and descending into its
// directories (never through a symlink). It releases d. It reports false when
// the search was cancelled. The entries of the directories being walked
// are held together up to grepMaxHeld: a directory that would take more
// is searched in the order the file system lists it, a chunk at a time
// (s.unsorted), since sorting it would take memory in proportion to
// entries the tree, not the grant, decides.
func (s *grepSearch) walk(ctx context.Context, d *dirRef, rel, shown string, depth int, jobs, order chan<- *grepJob) bool {
	defer d.release()
	f, err := d.root.Open(".")
	if err != nil {
		return true // unreadable: skipped
	}
	var ents []os.DirEntry
	for {
		chunk, err := f.ReadDir(grepListChunk)
		ents = append(ents, chunk...)
		if err != nil {
			break // io.EOF, or unreadable past here: what was read is searched
		}
		if s.held+len(ents) > grepMaxHeld {
			// Kept open meanwhile, one for each such directory being
			// walked; a sorted one is closed before it is walked.
			defer f.Close()
			s.unsorted++
			for {
				if !s.entries(ctx, d, ents, rel, shown, depth, jobs, order) {
					return false
				}
				ents, err = f.ReadDir(grepListChunk)
				if len(ents) == 0 && err != nil {
					return true
				}
			}
		}
	}
	f.Close()
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return s.entries(ctx, d, ents, rel, shown, depth, jobs, order)
}

const (
	// grepListChunk is how many entries grep lists of a directory at a time.
	grepListChunk = 512
	// grepMaxHeld bounds the directory entries grep's walk holds at once.
	grepMaxHeld = 50000
)

// entries queues the files of ents, entries of d, and walks its
// directories, counting ents as held meanwhile.
func (s *grepSearch) entries(ctx context.Context, d *dirRef, ents []os.DirEntry, rel, shown string, depth int, jobs, order chan<- *grepJob) bool {
	s.held += len(ents)
	defer func() { s.held -= len(ents) }()
	for _, e := range ents {
		if ctx.Err() != nil {
			return false
		}
		name := e.Name()
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		if s.env.hidden(joinShown(shown, name)) {
			continue // airlock's placeholder, not the user's
		}
		switch typ := e.Type(); {
		case typ.IsRegular():
			if s.glob != nil && !s.globMatch(childRel, name) {
				continue
			}
			d.hold()
			j := &grepJob{dir: d, name: name, shown: joinShown(shown, name), res: make(chan fileResult, 1)}
			select {
			case order <- j:
			case <-ctx.Done():
				d.release()
				return false
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				d.release()
				return false
			}
		case typ.IsDir():
			if depth+1 >= maxWalkDepth {
				s.tooDeep++ // read by the collector only after the walker ends
				continue
			}
			sub, err := d.root.OpenRoot(name)
			if err != nil {
				continue
			}
			if !s.walk(ctx, newDirRef(sub), childRel, joinShown(shown, name), depth+1, jobs, order) {
				return false
			}
		}
	}
	return true
}

func (s *grepSearch) globMatch(rel, name string) bool {
	if s.globBase {
		return s.glob.match(name)
	}
	return s.glob.match(rel)
}

// add appends one file's result to the output. It reports false once the
// output is full and the search should stop.
func (s *grepSearch) add(r fileResult) bool {
	switch {
	case r.binary:
		s.binary++
		return true
	case r.large:
		// Only the first few are named: a tree may hold any number of
		// them (sparse files cost no disk), and keeping every path held
		// memory without bound.
		if s.nlarge++; len(s.large) < largeShown {
			s.large = append(s.large, shownName(r.shown))
		}
		return true
	case r.matches == 0:
		return true
	}
	s.files++
	s.matches += r.matches
	text := r.text
	if s.mode == grepContent && s.context > 0 && s.out.Len() > 0 {
		text = append([]byte("--\n"), text...)
	}
	if s.head > 0 && s.lines+bytes.Count(text, []byte{'\n'}) > s.head {
		keep := firstLines(text, s.head-s.lines)
		s.omitted += int64(len(text) - len(keep))
		s.out.Write(keep)
		s.lines = s.head
		s.cut = fmt.Sprintf("[head_limit %d reached; more output not shown]", s.head)
		return false
	}
	if s.out.Len()+len(text) > s.maxOut {
		keep := text[:s.maxOut-s.out.Len()]
		if i := bytes.LastIndexByte(keep, '\n'); i >= 0 {
			keep = keep[:i+1]
		} else {
			keep = nil
		}
		s.omitted += int64(len(text) - len(keep))
		s.out.Write(keep)
		s.cut = fmt.Sprintf("[output cut at %d bytes; more matches may follow: narrow path, glob or pattern, or set head_limit]", s.maxOut)
		return false
	}
	s.out.Write(text)
	s.lines += bytes.Count(text, []byte{'\n'})
	if r.cut {
		s.cut = fmt.Sprintf("[output cut at %d bytes; more matches may follow: narrow path, glob or pattern, or set head_limit]", s.maxOut)
		return false
	}
	return true
}

// firstLines returns the first n lines of b.
func firstLines(b []byte, n int) []byte {
	end := 0
	for ; n > 0; n-- {
		i := bytes.IndexByte(b[end:], '\n')
		if i < 0 {
			return b
		}
		end += i + 1
	}
	return b[:end]
}

// result renders the collected output and its notes.
func (s *grepSearch) result(pattern, shown string) wire.ToolOutput {
	var b strings.Builder
	b.Write(s.out.Bytes())
	out := wire.ToolOutput{Meta: wire.Meta{Count: s.matches, OmittedBytes: s.omitted}}
	if s.mode == grepFiles {
		out.Meta.Count = s.files
	}
	if s.files == 0 {
		fmt.Fprintf(&b, "no matches for %q in %s\n", pattern, shown)
	}
	if s.cut != "" {
		b.WriteString(s.cut + "\n")
		out.Truncated = true
	}
	if s.binary > 0 {
		fmt.Fprintf(&b, "[%d binary %s skipped]\n", s.binary, plural(s.binary, "file", "files"))
	}
	if s.nlarge > 0 {
		names := strings.Join(s.large, ", ")
		if s.nlarge > len(s.large) {
			names += fmt.Sprintf(" and %d more", s.nlarge-len(s.large))
		}
		fmt.Fprintf(&b, "[files over %d bytes skipped: %s]\n", s.maxFile, names)
	}
	if s.tooDeep > 0 {
		fmt.Fprintf(&b, "[%d directories deeper than %d levels not searched]\n", s.tooDeep, maxWalkDepth)
	}
	if s.unsorted > 0 {
		fmt.Fprintf(&b, "[%d %s too large to sort searched in the order the file system lists them]\n", s.unsorted, plural(s.unsorted, "directory", "directories"))
	}
	if s.stoppedBy != nil {
		fmt.Fprintf(&b, "[search stopped early (%v); results are incomplete]\n", s.stoppedBy)
		out.Truncated = true
	}
	out.Content = strings.TrimSuffix(b.String(), "\n")
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
