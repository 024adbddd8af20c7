package tool

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// allocDuring returns the bytes the Go heap allocated while fn ran.
func allocDuring(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestEditFileReplaceAllRefusedBeforeAllocating: a replace_all whose result
// would pass the file-size limit is refused from the arithmetic, before the
// result is built: a 1 MiB file of one-byte matches, each replaced by 4 KiB,
// would otherwise allocate 4 GiB (and, larger, crash the runner) only to be
// refused.
func TestEditFileReplaceAllRefusedBeforeAllocating(t *testing.T) {
	w := newWorkspace(t)
	w.write(t, "a.txt", strings.Repeat("a", 1<<20))
	env := w.env()
	env.Limits.FileBytes = 2 << 20
	args := fmt.Sprintf(`{"path":"a.txt","old_string":"a","new_string":%q,"replace_all":true}`, strings.Repeat("b", 4<<10))
	var out = call(t, env, "edit_file", `{"path":"a.txt","old_string":"zz","new_string":"y"}`) // warm up
	got := allocDuring(func() { out = call(t, env, "edit_file", args) })
	if !out.IsError || !strings.Contains(out.Content, "larger than the file-size limit") {
		t.Errorf("want a refusal naming the file-size limit, got IsError=%v %.200q", out.IsError, out.Content)
	}
	if limit := uint64(32 << 20); got > limit {
		t.Errorf("the refused edit allocated %d bytes, want at most %d (O(file), not O(result))", got, limit)
	}
}

// TestEditFileManyShortLinesCostsTheFile: editing one line of a file of
// many short lines costs memory in proportion to the file's bytes, not a
// few dozen bytes per line for a diff of which 32 KiB are shown.
func TestEditFileManyShortLinesCostsTheFile(t *testing.T) {
	w := newWorkspace(t)
	const size = 4 << 20
	w.write(t, "lines.txt", "first\n"+strings.Repeat("\n", size))
	env := w.env()
	var out = call(t, env, "edit_file", `{"path":"lines.txt","old_string":"zz","new_string":"y","dry_run":true}`)
	for _, c := range []struct{ name, args string }{
		{"one line", `{"path":"lines.txt","old_string":"first","new_string":"FIRST","dry_run":true}`},
		{"every line", `{"path":"lines.txt","old_string":"\n","new_string":"-\n","replace_all":true,"dry_run":true}`},
		{"an insertion", `{"path":"lines.txt","old_string":"first\n","new_string":"first\n` + strings.Repeat(`\n`, 1<<20) + `","dry_run":true}`},
	} {
		got := allocDuring(func() { out = call(t, env, "edit_file", c.args) })
		if out.IsError {
			t.Errorf("%s: %.300s", c.name, out.Content)
		}
		if limit := uint64(16 * size); got > limit {
			t.Errorf("%s: editing a %d-byte file allocated %d bytes, want at most %d", c.name, size, got, limit)
		}
		if len(out.Content) > maxDiffBytes+300 {
			t.Errorf("%s: %d bytes of output", c.name, len(out.Content))
		}
	}
}
