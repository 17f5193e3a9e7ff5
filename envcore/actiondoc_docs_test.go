package envcore_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// docs/envcore.md's action table is the action table: every call with its
// type, arguments and description, generated here and compared.
func TestDocsActionTableIsTheActionTable(t *testing.T) {
	want := []string{"| call | type | what it does | example |", "|---|---|---|---|"}
	for _, d := range envcore.Actions() {
		want = append(want, fmt.Sprintf("| `%s` | `%s` | %s | `%s` |", d.Signature(), d.Type, strings.ReplaceAll(d.Description, "|", "\\|"), d.Example))
	}
	b, err := os.ReadFile("../docs/envcore.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- actions: envcore.Actions(), kept equal by a test -->"
	_, rest, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("docs/envcore.md has no %q", marker)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimLeft(rest, "\n"), "\n") {
		if !strings.HasPrefix(line, "|") {
			break
		}
		got = append(got, line)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/envcore.md's action table is not envcore.Actions(); replace it with:\n%s", strings.Join(want, "\n"))
	}
}

// Describe names every action with its signature and example.
func TestDescribeNamesEveryAction(t *testing.T) {
	text := envcore.Describe()
	for _, d := range envcore.Actions() {
		if !strings.Contains(text, d.Signature()) || !strings.Contains(text, d.Example) {
			t.Errorf("Describe lacks %s", d.Name)
		}
	}
	if !strings.Contains(text, "fill(bid: string, value: string, enable_autocomplete_menu?: boolean, enter?: boolean)") {
		t.Errorf("Describe:\n%s", text)
	}
}
