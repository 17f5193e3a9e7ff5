// Command exechelper is incusmgr's exec helper as a program of its own, for
// a process whose executable cannot serve as the helper because it is
// dynamically linked (a test binary that go test built with cgo): build it
// with CGO_ENABLED=0 and name it in incusmgr.Config.ExecHelper. Containers
// run it as /.webserv/exec; the helper itself is incusmgr's (exechelper.go),
// started by the package's init, so this main runs only when the program is
// started some other way.
package main

import (
	"fmt"
	"os"

	_ "github.com/webserv-rl/webserv/incusmgr" // its init is the helper
)

func main() {
	fmt.Fprintln(os.Stderr, "exechelper: incusmgr mounts this program into containers and runs it there as /.webserv/exec; it does nothing on its own")
	os.Exit(2)
}
