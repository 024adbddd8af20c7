package eintr

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/testenv"
)

// Each helper retries EINTR (and Openat2 EAGAIN) and returns anything else
// at once, with the call's value.
func TestRetry(t *testing.T) {
	calls := 0
	errs := []error{unix.EINTR, unix.EINTR, unix.ENOENT}
	err := Retry(func() error { calls++; return errs[calls-1] })
	if !errors.Is(err, unix.ENOENT) || calls != 3 {
		t.Fatalf("Retry = %v after %d calls, want ENOENT after 3", err, calls)
	}
	calls = 0
	if err := Retry(func() error { calls++; return nil }); err != nil || calls != 1 {
		t.Fatalf("Retry of a success = %v after %d calls", err, calls)
	}
	calls = 0
	v, err := Value(func() (int, error) {
		calls++
		if calls < 3 {
			return -1, unix.EINTR
		}
		return 7, nil
	})
	if v != 7 || err != nil || calls != 3 {
		t.Fatalf("Value = %d, %v after %d calls, want 7, nil after 3", v, err, calls)
	}
}

func TestOpenat2(t *testing.T) {
	dir := t.TempDir()
	fd, err := Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	if errors.Is(err, unix.ENOSYS) {
		testenv.RequireFeature(t, "openat2 (Linux 5.6)")
	}
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	if _, err := Openat2(unix.AT_FDCWD, dir+"/missing", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC}); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("Openat2 of a missing path = %v, want ENOENT", err)
	}
}
