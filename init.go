package airlock

import (
	"errors"
	"sync/atomic"

	"github.com/airlockhq/airlock/internal/native"
)

// Init must be the first call in the main function of a program that opens
// sessions. airlock builds each sandbox by re-executing the running program
// in a hidden mode (as the sandbox's init, or as the unsandboxed runner);
// when the process was started that way, Init plays that role and exits.
// Otherwise it returns at once and costs nothing.
//
//	func main() {
//		airlock.Init()
//		s, err := airlock.Open(nil)
//		...
//	}
func Init() {
	initialised.Store(true)
	native.RunHiddenMode()
}

// initialised records that Init ran: without it every sandbox the program
// starts would fail, so Open refuses at once instead.
var initialised atomic.Bool

// ErrNoInit is returned by Open when Init was not called first.
var ErrNoInit = errors.New("airlock: call airlock.Init() first in main: airlock builds each sandbox by re-executing the program, and without Init every call would fail with \"the tool could not run\"")
