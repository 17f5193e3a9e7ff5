// Command vulncheck reads `govulncheck -format json` output (a file named
// on the command line, or standard input) and fails when the code calls a
// vulnerable function that a release of its module fixes, naming the
// upgrade. Called vulnerabilities without a fix are printed as warnings;
// those in code the module never reaches are counted. scripts/vulncheck.sh
// runs it (`make vulncheck`, and `make lint`).
//
//	go run ./internal/vulncheck govulncheck.json
//
// With "index", it writes the database govulncheck reads from a directory
// of OSV entries (Index):
//
//	go run ./internal/vulncheck index OSV_DIR OUT_DIR
//
// Exit status: 0 clean (warnings allowed), 1 an upgrade is needed, 2 the
// input could not be read.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "index" {
		if len(os.Args) != 4 {
			fmt.Fprintf(os.Stderr, "vulncheck: usage: vulncheck index OSV_DIR OUT_DIR\n")
			os.Exit(2)
		}
		if err := Index(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintf(os.Stderr, "vulncheck: %v\n", err)
			os.Exit(2)
		}
		return
	}
	in := io.Reader(os.Stdin)
	if len(os.Args) > 1 {
		f, err := os.Open(os.Args[1])
		if err != nil {
			fmt.Fprintf(os.Stderr, "vulncheck: %v\n", err)
			os.Exit(2)
		}
		defer f.Close()
		in = f
	}
	rep, err := Read(in)
	if err != nil {
		fmt.Fprintf(os.Stderr, "vulncheck: %v\n", err)
		os.Exit(2)
	}
	if Print(os.Stdout, rep) {
		os.Exit(1)
	}
}

// Print writes the report and says whether it fails.
func Print(w io.Writer, rep Report) (failed bool) {
	c := rep.Config
	fmt.Fprintf(w, "vulncheck: %s %s, %s, database %s\n", c.ScannerName, c.ScannerVersion, c.GoVersion, c.DB)
	fail, unfixed, uncalled := rep.Failures(), rep.Unfixed(), rep.Uncalled()
	if len(fail) > 0 {
		fmt.Fprintf(w, "\nFAIL: the code calls %d vulnerable functions that a newer release fixes:\n", len(fail))
		list(w, fail)
		fmt.Fprintf(w, "\nUpgrade (then run `make vulncheck` again, and the tests of the packages that use the module):\n")
		for _, u := range rep.Upgrades() {
			fmt.Fprintf(w, "  %s %s -> %s: %s\n      fixes %s\n", u.Module, u.Found, u.To, u.Command(), strings.Join(u.IDs, ", "))
		}
	}
	if len(unfixed) > 0 {
		fmt.Fprintf(w, "\nwarning: the code calls %d vulnerable functions that no release fixes yet (not a failure: there is nothing to upgrade to; once the database records a fix this check fails until it is taken):\n", len(unfixed))
		list(w, unfixed)
	}
	if len(uncalled) > 0 {
		fmt.Fprintf(w, "\n%d more vulnerabilities are in required modules or imported packages whose vulnerable functions the code never calls (govulncheck -show verbose lists them):\n", len(uncalled))
		for _, u := range byModule(uncalled) {
			fmt.Fprintf(w, "  %s %s: %d (%s)\n", u.Module, u.Found, len(u.IDs), fixedBy(u.To))
		}
	}
	if len(fail) == 0 {
		fmt.Fprintf(w, "vulncheck: ok, no called vulnerability has a fix to take\n")
	}
	return len(fail) > 0
}

func list(w io.Writer, vs []vuln) {
	for _, v := range vs {
		fixed := "no fix"
		if v.Fixed != "" {
			fixed = "fixed in " + v.Fixed
		}
		fmt.Fprintf(w, "  %s %s (%s)  %s  %s\n", v.Module, v.Found, fixed, v.ID, v.Summary)
		fmt.Fprintf(w, "      e.g. %s, which reaches %s\n", v.Example, v.ExampleDetails)
	}
}

func fixedBy(v string) string {
	if v == "" {
		return "some with no fix"
	}
	return "all fixed by " + v
}
