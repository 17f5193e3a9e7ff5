package hosting

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/webserv-rl/webserv/internal/procstat"
)

// Two instances starting at once can be handed the same free port (the
// kernel gives a closed ephemeral port out again), and the one that loses
// the bind exits, while its readiness probe is answered by the winner: it
// looked ready, and died a moment later. foreignListener tells that case
// apart after the probe, so the start is tried again on another port.

// foreignListener reports whether the TCP listener on port belongs to a
// process that is neither in process group pgid nor a descendant of pid
// (the site's process, which leads that group). When the owner cannot be
// found (no /proc, another namespace) it reports false: nothing is known
// to be wrong.
func foreignListener(port, pid int) bool {
	inodes := listenInodes(port)
	if len(inodes) == 0 {
		return false
	}
	procs := processTable()
	var mine, others []int
	for p := range procs {
		if ours(procs, p, pid) {
			mine = append(mine, p)
		} else {
			others = append(others, p)
		}
	}
	if holdsOne(mine, inodes) {
		return false
	}
	return holdsOne(others, inodes)
}

// listenInodes are the socket inodes listening on port, IPv4 or IPv6.
func listenInodes(port int) map[string]bool {
	want := fmt.Sprintf(":%04X", port)
	inodes := map[string]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// sl local_address rem_address st ... inode (the tenth)
			if len(fields) > 9 && fields[3] == "0A" && strings.HasSuffix(fields[1], want) {
				inodes[fields[9]] = true
			}
		}
		f.Close()
	}
	return inodes
}

// proc is a process's parent, process group and state (R, S, D, T, Z...).
type proc struct {
	ppid, pgrp int
	state      byte
}

func processTable() map[int]proc {
	table := map[int]proc{}
	all, _ := procstat.Processes() // none when /proc cannot be read: nothing is known
	for _, p := range all {
		table[p.PID] = proc{p.Parent, p.Group, p.State}
	}
	return table
}

// holdsOne reports whether one of pids holds one of the socket inodes.
func holdsOne(pids []int, inodes map[string]bool) bool {
	for _, pid := range pids {
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
		for _, fd := range fds {
			link, err := os.Readlink(fd)
			if err == nil && strings.HasPrefix(link, "socket:[") && inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				return true
			}
		}
	}
	return false
}

// ours reports whether p is in pid's process group or descends from pid.
func ours(procs map[int]proc, p, pid int) bool {
	for i := 0; i < 64 && p > 1; i++ {
		if p == pid || procs[p].pgrp == pid {
			return true
		}
		p = procs[p].ppid
	}
	return false
}
