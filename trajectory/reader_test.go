package trajectory_test

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/trajectory"
)

// A written episode reads back with its steps, reward and review.
func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env-1", "0001"+trajectory.Ext)
	w, err := trajectory.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	one := 1.0
	for _, l := range []trajectory.Line{
		{Kind: trajectory.KindEpisode, Version: trajectory.Version, Env: "env-1", Episode: 1, Site: "shopping", TaskID: "shopping.0", Goal: "buy"},
		{Kind: trajectory.KindReset, Obs: &trajectory.Observation{Observation: envcore.Observation{URL: "http://a/", HTML: "<p>a</p>"}}},
		{Kind: trajectory.KindStep, Step: 1, Action: `click("x")`, Obs: &trajectory.Observation{Observation: envcore.Observation{URL: "http://a/", LastActionError: "rejected"}},
			Review: &trajectory.Review{Verdict: trajectory.VerdictRejected, Comment: "no"}},
		{Kind: trajectory.KindStep, Step: 2, Action: `stop("a")`, Obs: &trajectory.Observation{}, Reward: &one, Terminated: true},
	} {
		if err := w.Write(l); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := trajectory.Find(filepath.Dir(filepath.Dir(path)))
	if err != nil || len(files) != 1 {
		t.Fatalf("Find = %v, %v", files, err)
	}
	ep, err := trajectory.Read(files[0])
	if err != nil {
		t.Fatal(err)
	}
	s := ep.Summarize()
	if s.Steps != 2 || s.Reward != 1 || s.Errors != 1 || s.Rejected != 1 || !s.Done || s.Site != "shopping" || s.TaskID != "shopping.0" {
		t.Errorf("summary = %+v", s)
	}
	if ep.Obs(1).HTML != "<p>a</p>" || ep.Obs(2).LastActionError != "rejected" || ep.Steps[0].Review.Comment != "no" {
		t.Errorf("episode = %+v", ep)
	}
}

// Files the recorder wrote before this package (maps, explicit nulls and
// falses) and files cut short by a crash still read.
func TestReadOldAndPartial(t *testing.T) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	_, _ = gz.Write([]byte(`{"kind":"episode","version":1,"env":"env-a","episode":2,"site":"open","goal":"","task_id":"","start_url":"http://x/","cause":"reset","time":"2026-01-02T03:04:05.5Z"}
{"kind":"reset","obs":{"url":"http://x/","title":"","html":"<p>x</p>","clickable":null,"hoverable":null,"inputs":null,"selects":null,"tabs":null,"active_tab":0,"goal":""},"info":{"settle_ms":501.5},"time":"2026-01-02T03:04:06Z"}
{"kind":"step","step":1,"action":"click(\"a\")","obs":{"url":"http://x/b","html":"<p>b</p>"},"reward":null,"terminated":false,"truncated":false,"info":{"settled":true},"time":"2026-01-02T03:04:07.5Z"}
`))
	_ = gz.Flush() // no Close: the stream is cut short
	path := filepath.Join(t.TempDir(), "0002"+trajectory.Ext)
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	ep, err := trajectory.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !ep.Partial || len(ep.Steps) != 1 || ep.Steps[0].Reward != nil || ep.Steps[0].Obs.URL != "http://x/b" || ep.Reset.InfoFloat("settle_ms") != 501.5 {
		t.Errorf("episode = %+v partial=%v", ep, ep.Partial)
	}
	if d := ep.Duration().Seconds(); d != 2 {
		t.Errorf("duration = %v s, want 2", d)
	}
}

// Compare names the part that differs and shows it around the first
// character that does.
func TestCompare(t *testing.T) {
	long := strings.Repeat("x", 500)
	a := &trajectory.Observation{Observation: envcore.Observation{URL: "u", HTML: "<h1>same</h1>\n" + long + "<p>loaded v1</p>" + long}}
	b := &trajectory.Observation{Observation: envcore.Observation{URL: "u", HTML: "<h1>same</h1>\n" + long + "<p>loaded v2</p>" + long}}
	field, x, y, differs := trajectory.Compare(a, b)
	if !differs || field != "html" || !strings.Contains(x, "loaded v1") || !strings.Contains(y, "loaded v2") || len(x) > 250 {
		t.Errorf("Compare = %s %q %q %v", field, x, y, differs)
	}
	if _, _, _, d := trajectory.Compare(a, a); d {
		t.Error("an observation differs from itself")
	}
}

// A file cut anywhere after its episode line (a disk that filled mid-line,
// a crash) reads as a partial episode holding exactly the lines that were
// whole; an episode a fault of the infrastructure ended says so.
func TestReadCutAnywhere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0001"+trajectory.Ext)
	w, err := trajectory.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := []trajectory.Line{
		{Kind: trajectory.KindEpisode, Version: trajectory.Version, Env: "env-1", Episode: 1, Goal: "buy"},
		{Kind: trajectory.KindReset, Obs: &trajectory.Observation{Observation: envcore.Observation{URL: "http://a/", HTML: strings.Repeat("<p>a</p>", 50)}}},
		{Kind: trajectory.KindStep, Step: 1, Action: `click("x")`, Obs: &trajectory.Observation{Observation: envcore.Observation{URL: "http://a/b", HTML: strings.Repeat("<p>b</p>", 50)}}},
		{Kind: trajectory.KindStep, Step: 2, Action: `click("y")`, Error: &trajectory.Failure{Code: "site_down", Fault: trajectory.FaultInfrastructure, Message: "the instance died"}},
	}
	var ends []int // the file's size after each line
	for _, l := range lines {
		if err := w.Write(l); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, int(st.Size()))
	}
	whole, err := os.ReadFile(path) // without the gzip trailer: as a recording cut short is
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	for cut := ends[0]; cut <= len(whole); cut++ {
		if err := os.WriteFile(path, whole[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		ep, err := trajectory.Read(path)
		if err != nil {
			t.Fatalf("cut at %d of %d bytes: %v", cut, len(whole), err)
		}
		n := 1
		if ep.Reset != nil {
			n++
		}
		n += len(ep.Steps)
		wantAtLeast := 0
		for i, e := range ends {
			if cut >= e {
				wantAtLeast = i + 1
			}
		}
		if n < wantAtLeast {
			t.Fatalf("cut at %d: %d lines read, but %d were whole", cut, n, wantAtLeast)
		}
		if n == len(lines) {
			if f := ep.InfraFailure(); f == nil || f.Code != "site_down" || ep.Summarize().Failed != "site_down: the instance died" {
				t.Errorf("whole episode: failure %+v", f)
			}
		}
	}
}
