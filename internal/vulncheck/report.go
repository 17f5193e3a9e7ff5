package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// The parts of govulncheck's JSON stream (`govulncheck -format json`, one
// object after another, each with one of these keys) that the report reads.
type message struct {
	Config  *scanConfig `json:"config"`
	OSV     *osvEntry   `json:"osv"`
	Finding *finding    `json:"finding"`
}

type scanConfig struct {
	ScannerName    string `json:"scanner_name"`
	ScannerVersion string `json:"scanner_version"`
	DB             string `json:"db"`
	GoVersion      string `json:"go_version"`
	ScanLevel      string `json:"scan_level"`
}

type osvEntry struct {
	ID      string `json:"id"`
	Summary string `json:"summary"`
}

// finding is one vulnerability met once: its first frame is the vulnerable
// module (and package and function, when the scan got that far), its last
// frame the place in this module's code that leads there.
type finding struct {
	OSV          string  `json:"osv"`
	FixedVersion string  `json:"fixed_version"`
	Trace        []frame `json:"trace"`
}

type frame struct {
	Module   string    `json:"module"`
	Version  string    `json:"version"`
	Package  string    `json:"package"`
	Function string    `json:"function"`
	Receiver string    `json:"receiver"`
	Position *position `json:"position"`
}

type position struct {
	Filename string `json:"filename"`
	Line     int    `json:"line"`
}

// vuln is one vulnerability in one module, over all its findings.
type vuln struct {
	ID, Summary    string
	Module         string
	Found, Fixed   string // Fixed is "" when no release fixes it
	Called         bool   // the code reaches a vulnerable function
	Example        string // where the code calls it, when Called
	ExampleDetails string // the vulnerable function it reaches
	depth          int    // frames from the example to the vulnerable function
}

// Report is what a scan found, sorted by module and id.
type Report struct {
	Config scanConfig
	Vulns  []vuln
}

// Read reads govulncheck's JSON stream.
func Read(r io.Reader) (Report, error) {
	dec := json.NewDecoder(r)
	summaries := map[string]string{}
	byKey := map[string]*vuln{}
	var rep Report
	sawConfig := false
	for {
		var m message
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Report{}, fmt.Errorf("read govulncheck's JSON output: %w", err)
		}
		switch {
		case m.Config != nil:
			rep.Config, sawConfig = *m.Config, true
		case m.OSV != nil:
			summaries[m.OSV.ID] = m.OSV.Summary
		case m.Finding != nil && len(m.Finding.Trace) > 0:
			f := m.Finding
			top := f.Trace[0]
			key := f.OSV + " " + top.Module
			v := byKey[key]
			if v == nil {
				v = &vuln{ID: f.OSV, Module: top.Module, Found: top.Version, Fixed: f.FixedVersion}
				byKey[key] = v
			}
			if top.Function != "" {
				// The example is the shortest call path, the first in
				// file order among equals, so reports read the same
				// from run to run.
				ex := where(f.Trace[len(f.Trace)-1])
				if !v.Called || len(f.Trace) < v.depth || len(f.Trace) == v.depth && ex < v.Example {
					v.Called, v.depth = true, len(f.Trace)
					v.Example, v.ExampleDetails = ex, symbol(top)
				}
			}
		}
	}
	if !sawConfig {
		return Report{}, errors.New("read govulncheck's JSON output: no config message (is this `govulncheck -format json` output?)")
	}
	for _, v := range byKey {
		v.Summary = summaries[v.ID]
		rep.Vulns = append(rep.Vulns, *v)
	}
	sort.Slice(rep.Vulns, func(i, j int) bool {
		a, b := rep.Vulns[i], rep.Vulns[j]
		if a.Module != b.Module {
			return a.Module < b.Module
		}
		return a.ID < b.ID
	})
	return rep, nil
}

// where names a frame of this module's code: file:line: function.
func where(f frame) string {
	s := symbol(f)
	if f.Position != nil {
		s = fmt.Sprintf("%s:%d: %s", f.Position.Filename, f.Position.Line, s)
	}
	return s
}

func symbol(f frame) string {
	pkg := f.Package
	if i := strings.LastIndexByte(pkg, '/'); i >= 0 {
		pkg = pkg[i+1:]
	}
	if f.Receiver != "" {
		return pkg + "." + strings.TrimPrefix(f.Receiver, "*") + "." + f.Function
	}
	return pkg + "." + f.Function
}

// Failures are the vulnerabilities the code calls that a release fixes:
// an upgrade removes each of them.
func (r Report) Failures() []vuln {
	return r.filter(func(v vuln) bool { return v.Called && v.Fixed != "" })
}

// Unfixed are the vulnerabilities the code calls that no release fixes
// yet. They are warnings, not failures: nothing can be upgraded to remove
// them, so failing on them would block every change until the module's
// authors publish a fix, and once the pinned database (scripts/vulncheck.sh)
// records that fix the scan fails anyway.
func (r Report) Unfixed() []vuln {
	return r.filter(func(v vuln) bool { return v.Called && v.Fixed == "" })
}

// Uncalled are the vulnerabilities in modules the code requires whose
// vulnerable functions it never reaches.
func (r Report) Uncalled() []vuln {
	return r.filter(func(v vuln) bool { return !v.Called })
}

func (r Report) filter(keep func(vuln) bool) []vuln {
	var out []vuln
	for _, v := range r.Vulns {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

// Upgrade is one module's way out of its failures: the lowest version
// that fixes all of them.
type Upgrade struct {
	Module, Found, To string
	IDs               []string
}

// Upgrades groups the failures by module.
func (r Report) Upgrades() []Upgrade { return byModule(r.Failures()) }

// byModule groups vulnerabilities by module, each with the lowest version
// that fixes all of them ("" when one of them has no fix).
func byModule(vs []vuln) []Upgrade {
	var out []Upgrade
	idx := map[string]int{}
	for _, v := range vs {
		i, ok := idx[v.Module]
		if !ok {
			i = len(out)
			idx[v.Module] = i
			out = append(out, Upgrade{Module: v.Module, Found: v.Found, To: v.Fixed})
		}
		u := &out[i]
		u.IDs = append(u.IDs, v.ID)
		if u.To != "" && (v.Fixed == "" || compareVersions(v.Fixed, u.To) > 0) {
			u.To = v.Fixed
		}
	}
	return out
}

// Command is what to run to take the upgrade.
func (u Upgrade) Command() string {
	switch u.Module {
	case "stdlib", "toolchain":
		return fmt.Sprintf("go get toolchain@go%s (go.mod's toolchain line; scripts/setup.sh installs no other Go)", strings.TrimPrefix(u.To, "v"))
	}
	return fmt.Sprintf("go get %s@%s && go mod tidy", u.Module, u.To)
}

// compareVersions orders two semantic versions ("v1.2.3", "v1.2.3-rc.1"):
// -1, 0 or 1. Pre-releases sort before their release; build metadata is
// ignored.
func compareVersions(a, b string) int {
	pa, prea := splitVersion(a)
	pb, preb := splitVersion(b)
	for i := range pa {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case prea == preb:
		return 0
	case prea == "":
		return 1
	case preb == "":
		return -1
	case prea < preb:
		return -1
	}
	return 1
}

func splitVersion(v string) (nums [3]int, pre string) {
	v = strings.TrimPrefix(v, "v")
	v, _, _ = strings.Cut(v, "+")
	v, pre, _ = strings.Cut(v, "-")
	for i, s := range strings.SplitN(v, ".", 3) {
		nums[i], _ = strconv.Atoi(s)
	}
	return nums, pre
}
