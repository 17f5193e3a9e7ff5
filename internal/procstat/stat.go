package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Process is what /proc/<pid>/stat says of one process (proc(5)).
type Process struct {
	PID, Parent int
	Group       int           // process group
	State       byte          // 'R' running, 'S' sleeping, 'Z' zombie, 'X' dead, ...
	Start       uint64        // start time in clock ticks since boot: with PID, names the process even once its pid is reused
	CPU         time.Duration // user and system time
	Children    time.Duration // user and system time of its children that ended
	RSS         int64         // resident memory in bytes
}

// ReadProcess reads process pid's /proc/<pid>/stat; an error when the
// process is gone.
func ReadProcess(pid int) (Process, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Process{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	p, err := ParseStat(raw)
	if err != nil {
		return Process{}, fmt.Errorf("read process %d: %w", pid, err)
	}
	return p, nil
}

// ParseStat parses one /proc/<pid>/stat line: "pid (comm) state ppid
// pgrp ...", where comm, the command's name, may hold spaces and
// parentheses, so the fields are counted from its last ')'.
func ParseStat(raw []byte) (Process, error) {
	open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
	if open < 1 || end < open {
		return Process{}, fmt.Errorf("unexpected /proc stat line %q", raw)
	}
	// f[0] is field 3 of proc(5), state.
	f := strings.Fields(string(raw[end+1:]))
	if len(f) < 22 || len(f[0]) != 1 {
		return Process{}, fmt.Errorf("unexpected /proc stat line %q", raw)
	}
	var p Process
	var err error
	num := func(s string) int64 {
		v, e := strconv.ParseInt(s, 10, 64)
		if e != nil && err == nil {
			err = fmt.Errorf("unexpected /proc stat line %q: %w", raw, e)
		}
		return v
	}
	p.PID = int(num(string(bytes.TrimSpace(raw[:open]))))
	p.State = f[0][0]
	p.Parent = int(num(f[1]))
	p.Group = int(num(f[2]))
	p.CPU = time.Duration(num(f[11])+num(f[12])) * tick      // utime stime
	p.Children = time.Duration(num(f[13])+num(f[14])) * tick // cutime cstime
	p.Start = uint64(num(f[19]))                             // starttime, field 22
	p.RSS = num(f[21]) * int64(os.Getpagesize())             // rss in pages, field 24
	if err != nil {
		return Process{}, err
	}
	return p, nil
}
