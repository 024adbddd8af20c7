package proctree

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Tree returns root and every process descended from it, root first. A
// process that exits while it is read is left out.
func Tree(root int) ([]Proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing /proc: %w", err)
	}
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, err := parentOf(pid)
		if err != nil {
			continue
		}
		children[ppid] = append(children[ppid], pid)
	}
	var out []Proc
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		queue = append(queue, children[pid]...)
		p, err := Read(pid)
		if err != nil {
			if pid == root {
				return nil, err
			}
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// Read returns one process's memory.
func Read(pid int) (Proc, error) {
	p := Proc{PID: pid}
	var err error
	if p.PPID, err = parentOf(pid); err != nil {
		return p, err
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return p, fmt.Errorf("reading comm of %d: %w", pid, err)
	}
	p.Comm = strings.TrimSpace(string(comm))
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return p, fmt.Errorf("reading memory of %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		switch k {
		case "Rss":
			p.RSSKiB = n
		case "Pss":
			p.PSSKiB = n
		case "Pss_Anon", "Pss_Shmem":
			p.UnsharedKiB += n
		}
	}
	if err := sc.Err(); err != nil {
		return p, fmt.Errorf("reading memory of %d: %w", pid, err)
	}
	return p, nil
}

// SelfKiB returns this process's VmRSS and VmHWM (peak RSS) in KiB.
func SelfKiB() (rss, hwm int, err error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, fmt.Errorf("reading /proc/self/status: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			hwm = n
		}
	}
	return rss, hwm, nil
}

// parentOf reads the parent pid from /proc/PID/stat, whose second field (the
// command name, in parentheses) may itself hold spaces and parentheses.
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading stat of %d: %w", pid, err)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat of %d: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, fmt.Errorf("stat of %d: too short", pid)
	}
	return strconv.Atoi(f[1])
}
