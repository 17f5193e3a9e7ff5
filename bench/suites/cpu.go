package suites

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/webserv-rl/webserv/internal/procstat"
)

// machineCPU is the CPU time all processes have used (zero when /proc
// cannot be read: the figures that use it then read 0, not an error that
// ends a run).
func machineCPU() procstat.Times {
	t, _ := procstat.Read()
	return t
}

// CPU by process, for the scale suite's breakdown: each process's user and
// system time from /proc/<pid>/stat, grouped by what it is.
const (
	procBrowser  = "chromium browser"
	procRenderer = "chromium renderers"
	procHelpers  = "chromium gpu/utility"
	procSite     = "site processes"
	procServer   = "webserv (this process)"
	procOther    = "other"
)

var procGroups = []string{procBrowser, procRenderer, procHelpers, procSite, procServer, procOther}

// ownProcs are this process and its descendants (its browsers, its local
// sites): a shared machine's other Chromiums and sites are "other".
func ownProcs(procs []procstat.Process) map[int]bool {
	return under(procs, []int{os.Getpid()})
}

// under are the processes of procs at or under any of roots.
func under(procs []procstat.Process, roots []int) map[int]bool {
	parent := make(map[int]int, len(procs))
	for _, p := range procs {
		parent[p.PID] = p.Parent
	}
	root := map[int]bool{}
	for _, r := range roots {
		root[r] = true
	}
	out := map[int]bool{}
	for _, p := range procs {
		for q := p.PID; q > 1; q = parent[q] {
			if root[q] {
				out[p.PID] = true
				break
			}
		}
	}
	return out
}

// groupOf is process pid's group, from its command line (false once it
// has ended); a process not among own is "other".
func groupOf(pid int, own map[int]bool) (string, bool) {
	cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return "", false
	}
	if !own[pid] {
		return procOther, true
	}
	return procGroup(pid, os.Getpid(), string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))), true
}

// procCPU sums the CPU time (in ms) of every process, by group.
func procCPU() map[string]float64 {
	out := map[string]float64{}
	procs, _ := procstat.Processes() // none: every share reads 0
	own := ownProcs(procs)
	for _, p := range procs {
		if group, ok := groupOf(p.PID, own); ok {
			out[group] += float64(p.CPU) / float64(time.Millisecond)
		}
	}
	return out
}

// procPSS sums the proportional set size (shared pages split between the
// processes that map them) of every process, in bytes, by group: what this
// run's browsers and sites hold, and apart from them all the rest.
func procPSS() map[string]float64 {
	out := map[string]float64{}
	procs, _ := procstat.Processes()
	own := ownProcs(procs)
	for _, p := range procs {
		if group, ok := groupOf(p.PID, own); ok {
			out[group] += pssOf(p.PID)
		}
	}
	return out
}

// pssOf is process pid's proportional set size in bytes (0 once it has
// ended).
func pssOf(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024
		}
	}
	return 0
}

func procGroup(pid, self int, cmd string) string {
	switch {
	case pid == self:
		return procServer
	case strings.Contains(cmd, "chromium"):
		switch {
		case strings.Contains(cmd, "--type=renderer"):
			return procRenderer
		case strings.Contains(cmd, "--type="):
			return procHelpers
		}
		return procBrowser
	case strings.Contains(cmd, " serve ") && strings.Contains(cmd, "--data"):
		return procSite
	}
	return procOther
}

// cpuShares turns two procCPU samples into each group's share of the CPU
// time between them.
func cpuShares(before, after map[string]float64) map[string]float64 {
	total := 0.0
	d := map[string]float64{}
	for _, g := range procGroups {
		d[g] = max(0, after[g]-before[g])
		total += d[g]
	}
	if total > 0 {
		for g := range d {
			d[g] /= total
		}
	}
	return d
}
