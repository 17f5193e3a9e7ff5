package suites

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

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

// clockTick is USER_HZ, the unit of /proc's CPU times (100 on Linux).
const clockTick = 100

// procCPU sums the CPU time (in ticks) of every process, by group.
func procCPU() map[string]float64 {
	out := map[string]float64{}
	self := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		stat, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command (which may hold spaces) in parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 13 {
			continue
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		pid, _ := strconv.Atoi(filepath.Base(d))
		cmd, _ := os.ReadFile(d + "/cmdline")
		out[procGroup(pid, self, string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))] += ut + st
	}
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
