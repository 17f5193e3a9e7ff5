package server

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// docTable returns the rows of the markdown table that follows marker in
// docs/protocol.md.
func docTable(t *testing.T, marker string) []string {
	t.Helper()
	b, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("docs/protocol.md has no %q", marker)
	}
	var rows []string
	for _, line := range strings.Split(strings.TrimLeft(rest, "\n"), "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		rows = append(rows, line)
	}
	return rows
}

func checkTable(t *testing.T, marker string, want []string) {
	t.Helper()
	got := docTable(t, marker)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/protocol.md's table after %s is not the table in the code; replace it with:\n%s", marker, strings.Join(want, "\n"))
	}
}

// The docs' table of ops is the ops table: names, environment, arguments.
func TestDocsListEveryOpWithItsArguments(t *testing.T) {
	want := []string{"| op | `env` | arguments | what it does |", "|---|---|---|---|"}
	for _, o := range ops {
		env := ""
		if o.env {
			env = "yes"
		}
		var names []string
		for _, n := range wireNames(o.args) {
			names = append(names, "`"+n+"`")
		}
		want = append(want, fmt.Sprintf("| `%s` | %s | %s | %s |", o.name, env, strings.Join(names, " "), o.doc))
	}
	checkTable(t, "<!-- ops: the table in server/ops.go -->", want)
}

// The docs' table of error codes is the code table.
func TestDocsListEveryErrorCodeWithItsFault(t *testing.T) {
	want := []string{"| code | fault | meaning |", "|---|---|---|"}
	for _, c := range codeTable {
		want = append(want, fmt.Sprintf("| `%s` | `%s` | %s |", c.code, c.fault, c.doc))
	}
	checkTable(t, "<!-- codes: the table in server/codes.go -->", want)
}

// The docs' table of the ways an episode ends is the end table.
func TestDocsListEveryEndReason(t *testing.T) {
	want := []string{"| `end_reason` | terminated | truncated | reward | fault | when |", "|---|---|---|---|---|---|"}
	yes := map[bool]string{true: "yes", false: ""}
	for _, e := range endTable {
		want = append(want, fmt.Sprintf("| `%s` | %s | %s | %s | `%s` | %s |", e.reason, yes[e.terminated], yes[!e.terminated], e.reward, e.fault, e.doc))
	}
	checkTable(t, "<!-- ends: the table in server/endreason.go -->", want)
}
