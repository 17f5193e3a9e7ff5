package procstat

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TCPListeners returns, for each of pids that holds one, the TCP sockets
// (IPv4 and IPv6) it listens on, as their local addresses in
// /proc/net/tcp's hexadecimal form ("0100007F:9C41"). It matches the
// inodes of the LISTEN sockets of /proc/net/tcp{,6} with the sockets among
// each process's open files, so it sees listeners in this process's
// network namespace only.
func TCPListeners(pids []int) (map[int][]string, error) {
	listening := map[string]string{} // socket inode: local address
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		file, err := os.Open(f)
		if err != nil {
			return nil, fmt.Errorf("read TCP sockets: %w", err)
		}
		sc := bufio.NewScanner(file)
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode
			f := strings.Fields(sc.Text())
			if len(f) > 9 && f[3] == "0A" { // TCP_LISTEN
				listening[f[9]] = f[1]
			}
		}
		file.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read TCP sockets: %w", err)
		}
	}
	out := map[int][]string{}
	for _, pid := range pids {
		fds, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/fd/*")
		for _, fd := range fds {
			target, err := os.Readlink(fd)
			if err != nil || !strings.HasPrefix(target, "socket:[") {
				continue
			}
			if addr, ok := listening[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")]; ok {
				out[pid] = append(out[pid], addr)
			}
		}
	}
	return out, nil
}
