// Package procstat reads how much CPU time the whole machine has used, from
// the first line of /proc/stat, and each process, from /proc/<pid>/stat,
// for benchmarks that report what a workload cost all processes
// (Chromium's included), not only their own.
//
//	t0, _ := procstat.Read()
//	// ... the workload ...
//	t1, _ := procstat.Read()
//	d := t1.Sub(t0) // d.Busy: CPU time used; d.Busy/d.Total: the share of the machine
//
//	c, _ := procstat.TreeCPU(pid) // a process and its descendants, ended children included
//	m, _ := procstat.TreeRSS(pid) // their resident memory
package procstat

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Times is CPU time summed over all cores since boot.
type Times struct {
	Busy  time.Duration // user, nice, system, irq, softirq and steal
	Total time.Duration // Busy plus idle and iowait
}

// tick is the kernel's USER_HZ, the unit of /proc/stat (100 on Linux).
const tick = 10 * time.Millisecond

// Read returns the machine's CPU times now.
func Read() (Times, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Times{}, fmt.Errorf("read machine CPU time: %w", err)
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return Times{}, fmt.Errorf("read machine CPU time: unexpected /proc/stat line %q", line)
	}
	var t Times
	// user nice system idle iowait irq softirq steal (guest time is
	// already counted in user and nice).
	for i, s := range f[1:9] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Times{}, fmt.Errorf("read machine CPU time: field %d of %q: %w", i+1, line, err)
		}
		d := time.Duration(v) * tick
		t.Total += d
		if i != 3 && i != 4 {
			t.Busy += d
		}
	}
	return t, nil
}

// Sub returns the CPU time used between o and t.
func (t Times) Sub(o Times) Times { return Times{Busy: t.Busy - o.Busy, Total: t.Total - o.Total} }

// Share is the busy fraction of the time (0 to 1; 0 when no time passed).
func (t Times) Share() float64 {
	if t.Total <= 0 {
		return 0
	}
	return float64(t.Busy) / float64(t.Total)
}

// Processes returns every process's line of /proc/<pid>/stat now.
// Processes that end while it reads are left out.
func Processes() ([]Process, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil || len(dirs) == 0 {
		return nil, fmt.Errorf("read processes: no processes under /proc (%v)", err)
	}
	out := make([]Process, 0, len(dirs))
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		if p, err := ReadProcess(pid); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// TreeCPU is the CPU time that process root and its descendants have used,
// children that ended included.
func TreeCPU(root int) (time.Duration, error) {
	procs, err := Processes()
	if err != nil {
		return 0, err
	}
	parent := make(map[int]int, len(procs))
	for _, p := range procs {
		parent[p.PID] = p.Parent
	}
	var sum time.Duration
	found := false
	for _, p := range procs {
		for q := p.PID; q > 1; q = parent[q] {
			if q == root {
				sum += p.CPU + p.Children
				found = true
				break
			}
		}
	}
	if !found {
		return 0, fmt.Errorf("read CPU time of process %d: no such process", root)
	}
	return sum, nil
}

// TreeRSS is the resident memory of process root and its descendants, in
// bytes (pages shared between them counted once per process, so an upper
// bound).
func TreeRSS(root int) (int64, error) {
	procs, err := Processes()
	if err != nil {
		return 0, err
	}
	parent := make(map[int]int, len(procs))
	for _, p := range procs {
		parent[p.PID] = p.Parent
	}
	var sum int64
	found := false
	for _, p := range procs {
		for q := p.PID; q > 1; q = parent[q] {
			if q == root {
				sum += p.RSS
				found = true
				break
			}
		}
	}
	if !found {
		return 0, fmt.Errorf("read memory of process %d: no such process", root)
	}
	return sum, nil
}
