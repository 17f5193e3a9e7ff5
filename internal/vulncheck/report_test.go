package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// testdata/govulncheck.json is govulncheck v1.9.0's -format json output for
// this module at go1.26.8 with golang.org/x/image v0.30.0 and incus v6.0.5,
// cut to six vulnerabilities (their summaries reworded): two in x/image
// and two in the standard library that the code calls and a release fixes,
// one in the incus client that it calls and nothing fixes, one in x/text
// that it never calls.
func readSample(t *testing.T) Report {
	t.Helper()
	f, err := os.Open("testdata/govulncheck.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rep, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func ids(vs []vuln) string {
	var s []string
	for _, v := range vs {
		s = append(s, v.Module+" "+v.ID)
	}
	return strings.Join(s, ", ")
}

// A called vulnerability with a fix fails; one without a fix warns; one
// the code never reaches is only counted.
func TestReportSortsFindings(t *testing.T) {
	rep := readSample(t)
	if rep.Config.ScannerVersion != "v1.9.0" || rep.Config.GoVersion != "go1.26.8" {
		t.Errorf("config: %+v", rep.Config)
	}
	if got, want := ids(rep.Failures()), "golang.org/x/image GO-2026-4815, golang.org/x/image GO-2026-5066, stdlib GO-2026-6599, stdlib GO-2026-6809"; got != want {
		t.Errorf("failures: %s\nwant %s", got, want)
	}
	if got, want := ids(rep.Unfixed()), "github.com/lxc/incus/v6 GO-2026-5127"; got != want {
		t.Errorf("unfixed: %s, want %s", got, want)
	}
	if got, want := ids(rep.Uncalled()), "golang.org/x/text GO-2026-6629"; got != want {
		t.Errorf("uncalled: %s, want %s", got, want)
	}
	for _, v := range rep.Failures() {
		if v.Summary == "" || v.Example == "" || v.Found == "" {
			t.Errorf("%s lacks what the report prints: %+v", v.ID, v)
		}
	}
}

// Each module's upgrade is to the highest version any of its failures
// needs, and says how to take it.
func TestUpgradesTakeTheHighestFix(t *testing.T) {
	up := readSample(t).Upgrades()
	if len(up) != 2 {
		t.Fatalf("upgrades: %+v", up)
	}
	img, std := up[0], up[1]
	if img.Module != "golang.org/x/image" || img.Found != "v0.30.0" || img.To != "v0.43.0" || len(img.IDs) != 2 {
		t.Errorf("x/image: %+v", img)
	}
	if img.Command() != "go get golang.org/x/image@v0.43.0 && go mod tidy" {
		t.Errorf("x/image command: %s", img.Command())
	}
	if std.Module != "stdlib" || std.To != "v1.26.10" || !strings.HasPrefix(std.Command(), "go get toolchain@go1.26.10 ") {
		t.Errorf("stdlib: %+v, %s", std, std.Command())
	}
}

// The printed report fails, names each finding with found and fixed
// versions and where the code calls it, and lists the unfixed one as a
// warning.
func TestPrintNamesWhatToDo(t *testing.T) {
	var b bytes.Buffer
	if !Print(&b, readSample(t)) {
		t.Error("a report with fixable called vulnerabilities passed")
	}
	out := b.String()
	for _, want := range []string{
		"FAIL: the code calls 4 vulnerable functions",
		"golang.org/x/image v0.30.0 (fixed in v0.38.0)  GO-2026-4815  TIFF decoder allocates without bound",
		"e.g. internal/uishots/main.go:",
		"golang.org/x/image v0.30.0 -> v0.43.0: go get golang.org/x/image@v0.43.0 && go mod tidy",
		"fixes GO-2026-4815, GO-2026-5066",
		"warning: the code calls 1 vulnerable functions that no release fixes yet",
		"github.com/lxc/incus/v6 v6.0.5 (no fix)  GO-2026-5127",
		"1 more vulnerabilities",
		"golang.org/x/text v0.28.0: 1 (all fixed by v0.41.0)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// Unfixed and uncalled vulnerabilities alone pass.
func TestOnlyUnfixedPasses(t *testing.T) {
	rep := readSample(t)
	rep.Vulns = append(rep.Unfixed(), rep.Uncalled()...)
	var b bytes.Buffer
	if Print(&b, rep) {
		t.Errorf("failed without a fixable finding:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "vulncheck: ok") {
		t.Errorf("no ok line:\n%s", b.String())
	}
}

// Output that is not govulncheck's JSON is an error, not a clean report.
func TestReadRefusesOtherInput(t *testing.T) {
	for _, in := range []string{"", `{"progress":{"message":"x"}}`, "govulncheck: loading packages: exit status 1"} {
		if _, err := Read(strings.NewReader(in)); err == nil {
			t.Errorf("Read(%q) succeeded", in)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"v0.43.0", "v0.38.0", 1},
		{"v1.26.9", "v1.26.10", -1},
		{"v6.23.0", "v6.23.0", 0},
		{"v0.58.1-0.20261009181718-2f1f834330b2", "v0.58.1", -1},
		{"v0.58.1-0.20261009181718-2f1f834330b2", "v0.58.0", 1},
	} {
		if got := compareVersions(c.a, c.b); got != c.want {
			t.Errorf("compareVersions(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
