package ui_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/trajectory"
	"github.com/webserv-rl/webserv/ui"
)

// The replay source lists episodes (an unreadable file included, marked),
// serves screenshots per step, and refuses paths outside its directory.
func TestReplay(t *testing.T) {
	dir := t.TempDir()
	w, err := trajectory.Create(filepath.Join(dir, "env-a", "0001"+trajectory.Ext))
	if err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG fake")
	for _, l := range []trajectory.Line{
		{Kind: trajectory.KindEpisode, Env: "env-a", Episode: 1, Site: "open", Goal: "g"},
		{Kind: trajectory.KindReset, Obs: &trajectory.Observation{Observation: envcore.Observation{Screenshot: png}}},
		{Kind: trajectory.KindStep, Step: 1, Action: "noop()", Obs: &trajectory.Observation{}},
	} {
		if err := w.Write(l); err != nil {
			t.Fatal(err)
		}
	}
	_ = w.Close()
	if err := os.WriteFile(filepath.Join(dir, "broken"+trajectory.Ext), []byte("not gzip"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := ui.NewReplay(dir)
	list, err := r.Episodes()
	if err != nil || len(list) != 2 {
		t.Fatalf("episodes = %+v, %v", list, err)
	}
	var good, bad *trajectory.Summary
	for i := range list {
		if list[i].Env == "env-a" {
			good = &list[i]
		} else {
			bad = &list[i]
		}
	}
	if good == nil || good.Path != filepath.Join("env-a", "0001"+trajectory.Ext) || good.Steps != 1 || bad == nil || !bad.Partial {
		t.Errorf("episodes = %+v", list)
	}
	if b, err := r.Screenshot(good.Path, 0); err != nil || string(b) != string(png) {
		t.Errorf("screenshot 0 = %q, %v", b, err)
	}
	if _, err := r.Screenshot(good.Path, 1); err == nil {
		t.Error("a step without a screenshot served one")
	}
	if _, err := r.Episode("../" + filepath.Base(dir) + "/env-a/0001" + trajectory.Ext); err == nil {
		t.Error("a path leaving the directory was served")
	}
}
