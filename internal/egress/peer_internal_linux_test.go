package egress

import "testing"

// TestNestedInit reads the NSpid line of /proc status and pidfd fdinfo
// texts: only a process that is 1 in the innermost of several PID
// namespaces is a sandbox's init.
func TestNestedInit(t *testing.T) {
	tests := []struct {
		name, status string
		want         bool
	}{
		{"a sandbox's init", "Name:\tairlock\nPid:\t4242\nNSpid:\t4242\t1\n", true},
		{"its init two levels down", "NSpid:\t4242\t17\t1\n", true},
		{"pidfd fdinfo", "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1065\nPid:\t4242\nNSpid:\t4242\t1\n", true},
		{"the host's init", "Pid:\t1\nNSpid:\t1\n", false},
		{"a payload", "NSpid:\t4243\t2\n", false},
		{"a host process", "NSpid:\t4243\n", false},
		{"a dead process's pidfd", "Pid:\t-1\nNSpid:\t-1\n", false},
		{"no NSpid line", "Pid:\t4242\n", false},
		{"empty", "", false},
		{"pid 11 is not 1", "NSpid:\t4242\t11\n", false},
	}
	for _, tt := range tests {
		if got := nestedInit([]byte(tt.status)); got != tt.want {
			t.Errorf("%s: nestedInit(%q) = %v, want %v", tt.name, tt.status, got, tt.want)
		}
	}
}
