package server

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release of this server. The Python package (pyproject.toml)
// carries the same number; a test keeps the two equal.
const Version = "0.1.0"

// Build describes this binary: the release, the commit it was built from
// (with "+dirty" when the work tree had changes) and the Go toolchain, as
// `webserv version` prints it and the hello reply carries it.
func Build() string {
	commit := "unknown commit"
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, dirty string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "+dirty"
				}
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			commit = "commit " + rev + dirty
		}
	}
	return fmt.Sprintf("webserv %s (%s, %s)", Version, commit, runtime.Version())
}
