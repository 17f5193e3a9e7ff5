package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The benchmark's smoke mode runs in seconds against the real Incus and
// local backends and must produce a complete report.
func TestSmokeRunWritesAReport(t *testing.T) {
	out := t.TempDir()
	if err := run("4MiB", 1, 1, 2, out, t.TempDir(), "webserv", "-smoke"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "hosting.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Results[0].Backend != "incus-cow" || rep.Results[1].Backend != "full-copy" {
		t.Fatalf("results = %+v", rep.Results)
	}
	for _, r := range rep.Results {
		if r.LaunchP50 <= 0 || r.ResetP50 <= 0 || r.ForkMs <= 0 || r.WrittenP50 <= 0 || r.MemoryP50 <= 0 || r.StateBytes != 4<<20 {
			t.Errorf("%s: incomplete result %+v", r.Backend, r)
		}
	}
	// Copy-on-write writes far less than the state; the full copy writes it all.
	if cow, full := rep.Results[0].WrittenP50, rep.Results[1].WrittenP50; cow >= 1<<20 || full < 4<<20 {
		t.Errorf("written per launch: cow %d, full copy %d", cow, full)
	}
	if _, err := os.Stat(filepath.Join(out, "hosting.md")); err != nil {
		t.Error(err)
	}
}
