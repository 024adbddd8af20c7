package linux

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openPTY allocates a pseudo-terminal on the host side. The slave goes to
// the sandbox as fds 0-2; the host's own terminal never does, so TIOCSTI
// into it is impossible (hostile case 18).
func openPTY(rows, cols uint16) (master, slave *os.File, err error) {
	m, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("opening /dev/ptmx: %w", err)
	}
	master = os.NewFile(uintptr(m), "ptmx")
	if err := unix.IoctlSetPointerInt(m, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlockpt: %w", err)
	}
	s, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(m), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		master.Close()
		return nil, nil, fmt.Errorf("opening the pty slave: %w", errno)
	}
	slave = os.NewFile(s, "pts")
	if rows == 0 {
		rows = 24
	}
	if cols == 0 {
		cols = 80
	}
	if err := setSize(master, rows, cols); err != nil {
		master.Close()
		slave.Close()
		return nil, nil, err
	}
	return master, slave, nil
}

// setSize sets the terminal size through the master without taking it out
// of non-blocking mode (as File.Fd would).
func setSize(master *os.File, rows, cols uint16) error {
	rc, err := master.SyscallConn()
	if err != nil {
		return fmt.Errorf("setting the terminal size: %w", err)
	}
	var ioErr error
	if err := rc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	}); err != nil {
		return fmt.Errorf("setting the terminal size: %w", err)
	}
	if ioErr != nil {
		return fmt.Errorf("setting the terminal size: %w", ioErr)
	}
	return nil
}
