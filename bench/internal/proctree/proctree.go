// Package proctree measures the memory of a process tree from /proc: which
// processes descend from a root, and their resident (RSS) and proportional
// (PSS) set sizes. The bench harness uses it for per-sandbox overhead.
package proctree

// Proc is one process's memory.
type Proc struct {
	PID  int    `json:"pid"`
	PPID int    `json:"ppid"`
	Comm string `json:"comm"`
	// RSSKiB counts every resident page the process maps; PSSKiB divides
	// shared pages among the processes that share them, so PSS sums across
	// processes without counting a shared page twice.
	RSSKiB int `json:"rss_kib"`
	PSSKiB int `json:"pss_kib"`
	// UnsharedKiB is the process's anonymous and shmem PSS (Pss_Anon +
	// Pss_Shmem): memory no other process could be sharing, such as a
	// heap or a memfd copy of a binary, as against file pages (a binary's
	// page cache) that every process running the same file shares.
	UnsharedKiB int `json:"unshared_kib"`
}

// Sum is the total RSS and PSS of procs.
func Sum(procs []Proc) (rssKiB, pssKiB int) {
	for _, p := range procs {
		rssKiB += p.RSSKiB
		pssKiB += p.PSSKiB
	}
	return rssKiB, pssKiB
}
