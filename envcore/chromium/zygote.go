package chromium

import (
	"bytes"
	"os"
	"strconv"

	"github.com/webserv-rl/webserv/internal/procstat"
)

// StartsPages reports whether the browser process mainPID (MainPID) can
// still start renderers: false once no zygote process is left under it. A
// browser whose zygotes have ended (the OOM killer's pick, a kill meant
// for the browser) still answers the DevTools protocol but opens no page.
// A browser run without zygotes (--no-zygote, --single-process) always
// can; so, for this check, can one that is gone (its end is seen on its
// pipe: Closed).
func StartsPages(mainPID int) bool {
	cmd, err := os.ReadFile("/proc/" + strconv.Itoa(mainPID) + "/cmdline")
	if err != nil || bytes.Contains(cmd, []byte("--no-zygote")) || bytes.Contains(cmd, []byte("--single-process")) {
		return true // gone (the crash path says so) or zygote-free
	}
	all, err := procstat.Processes()
	if err != nil {
		return true
	}
	children := map[int][]int{}
	for _, p := range all {
		children[p.Parent] = append(children[p.Parent], p.PID)
	}
	for next := children[mainPID]; len(next) > 0; {
		pid := next[0]
		next = append(next[1:], children[pid]...)
		cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err == nil && bytes.Contains(cmd, []byte("--type=zygote")) {
			return true
		}
	}
	return false
}
