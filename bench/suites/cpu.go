package suites

import (
	"bytes"
	"os"
	"path/filepath"
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

// eachProc calls fn with every process's /proc directory and group.
func eachProc(fn func(dir, group string)) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		if group, ok := groupOf(pid); ok {
			fn(d, group)
		}
	}
}

// groupOf is process pid's group, from its command line (false once it
// has ended).
func groupOf(pid int) (string, bool) {
	cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return "", false
	}
	return procGroup(pid, os.Getpid(), string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))), true
}

// procCPU sums the CPU time (in ms) of every process, by group.
func procCPU() map[string]float64 {
	out := map[string]float64{}
	procs, _ := procstat.Processes() // none: every share reads 0
	for _, p := range procs {
		if group, ok := groupOf(p.PID); ok {
			out[group] += float64(p.CPU) / float64(time.Millisecond)
		}
	}
	return out
}

// procPSS sums the proportional set size (shared pages split between the
// processes that map them) of every process, in bytes, by group: what the
// browser and the sites hold, whatever else the machine runs.
func procPSS() map[string]float64 {
	out := map[string]float64{}
	eachProc(func(d, group string) {
		b, err := os.ReadFile(d + "/smaps_rollup")
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				out[group] += kb * 1024
				return
			}
		}
	})
	return out
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
