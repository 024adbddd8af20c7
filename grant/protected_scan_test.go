package grant

import (
	"io/fs"
	"math/rand/v2"

	"fmt"
	"github.com/google/go-cmp/cmp"
	"os"
	"path/filepath"
	"testing"
)

// scanTree makes a read-write tree of dirs directories holding files
// entries each (dirs*(files+1) entries in all); every tenth directory's
// first entry is a nested .vscode file.
func scanTree(t testing.TB, dirs, files int) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for d := range dirs {
		dir := filepath.Join(r, fmt.Sprintf("d%03d", d))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range files {
			name := fmt.Sprintf("f%03d.go", f)
			if f == 0 && d%10 == 0 {
				name = ".vscode"
			}
			if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r
}

// scanResult is what a scan for nested protected names reports.
type scanResult struct {
	Found    []string
	Complete bool
}

func runScan(scan func(string, bool, []string, nestedFound) bool, r string, rootIsGit bool, others []string) scanResult {
	var res scanResult
	res.Complete = scan(r, rootIsGit, others, func(p, name string, dir bool) {
		res.Found = append(res.Found, fmt.Sprintf("%s %s dir=%v", p, name, dir))
	})
	return res
}

// randomTree fills r with n entries of every kind the scan meets:
// directories, files, symlinks to directories, files and nothing (none
// followed), protected names as files and directories at every depth,
// nested .git directories and files, and names that sort around them.
func randomTree(t *testing.T, r string, rng *rand.Rand, n int) {
	t.Helper()
	names := []string{"a", "b", "a.b", "a-b", "A", "zz", "src", "x.go", ".hidden", ".git", ".gitx", ".vscode", ".vscod", ".idea", ".bashrc", ".envrc", ".config", "git", "hooks", "config", ".mcp.json", ".cargo", "node_modules", "HEAD", "objects", "refs", "commondir"}
	dirs := []string{r}
	for range n {
		parent := dirs[rng.IntN(len(dirs))]
		p := filepath.Join(parent, names[rng.IntN(len(names))])
		if _, err := os.Lstat(p); err == nil {
			p += fmt.Sprint(rng.IntN(100))
			if _, err := os.Lstat(p); err == nil {
				continue
			}
		}
		var err error
		switch k := rng.IntN(10); {
		case k < 4:
			err = os.Mkdir(p, 0o755)
			dirs = append(dirs, p)
		case k < 7:
			err = os.WriteFile(p, nil, 0o644)
		case k == 7:
			// Set-user-ID and set-group-ID files, which the scan reports.
			if err = os.WriteFile(p, nil, 0o644); err == nil {
				err = os.Chmod(p, []os.FileMode{0o755 | os.ModeSetuid, 0o755 | os.ModeSetgid}[rng.IntN(2)])
			}
		case k == 8:
			err = os.Symlink(dirs[rng.IntN(len(dirs))], p)
		default:
			err = os.Symlink(filepath.Join(parent, "missing"), p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestScanNestedMatchesWalk checks that the getdents scan reports what the
// filepath.WalkDir scan reports, in the same order, on generated trees:
// with and without d_type (DT_UNKNOWN, typed by lstat), from a root that
// is a .git directory, with nested read-write roots skipped, and at the
// cap, where the same entries must be counted.
func TestScanNestedMatchesWalk(t *testing.T) {
	check := func(t *testing.T, r string, rootIsGit bool, others []string) {
		t.Helper()
		want := runScan(walkNested, r, rootIsGit, others)
		for _, lstat := range []bool{false, true} {
			scanForceLstat = lstat
			got := runScan(scanNested, r, rootIsGit, others)
			scanForceLstat = false
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("scan (lstat for every entry: %v) of %s differs from the walk (-walk +scan):\n%s", lstat, r, diff)
			}
		}
	}
	for seed := range uint64(40) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 13))
			r, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			randomTree(t, r, rng, 30+rng.IntN(300))
			check(t, r, false, []string{r})
			var subdirs []string
			_ = filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() && p != r {
					subdirs = append(subdirs, p)
				}
				return nil
			})
			if len(subdirs) > 0 {
				// A nested read-write root, and a scan from a directory as a .git root.
				check(t, r, false, []string{r, subdirs[rng.IntN(len(subdirs))]})
				sub := subdirs[rng.IntN(len(subdirs))]
				check(t, sub, true, []string{sub})
			}
		})
	}
	t.Run("cap", func(t *testing.T) {
		// 100 directories of 199 files, one of which is protected, make
		// the cap exactly; one more entry passes it, and a nested root's
		// entries do not count. zz/.vscode is last in name order, so it is
		// found only while the scan is complete.
		r := scanTree(t, 100, 199)
		for _, d := range []string{"d000", "d050", "d099", "zz"} {
			if err := os.MkdirAll(filepath.Join(r, d, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range []string{"d000/f198.go", "d050/f198.go", "d099/f198.go", "d099/f197.go", "d099/f196.go", "zz/.git"} {
			if err := os.Remove(filepath.Join(r, f)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir(filepath.Join(r, "zz", ".vscode"), 0o755); err != nil {
			t.Fatal(err)
		}
		want := runScan(walkNested, r, false, []string{r})
		if !want.Complete || len(want.Found) != 14 {
			t.Fatalf("the walk of %d entries found %d names, complete %v; want 14, complete", maxProtectedScan, len(want.Found), want.Complete)
		}
		check(t, r, false, []string{r})
		if err := os.WriteFile(filepath.Join(r, "d049", "f999.go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if capped := runScan(walkNested, r, false, []string{r}); capped.Complete || len(capped.Found) != 13 {
			t.Fatalf("the walk of one entry more than the cap found %d names, complete %v; want 13, incomplete", len(capped.Found), capped.Complete)
		}
		check(t, r, false, []string{r})
		check(t, r, false, []string{r, filepath.Join(r, "d070")})
		if !runScan(scanNested, r, false, []string{r, filepath.Join(r, "d070")}).Complete {
			t.Error("a nested read-write root's entries were counted")
		}
	})
}
