package server_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/trajectory"
)

// smallDisk mounts a tmpfs of size bytes for the test and unmounts it
// after everything registered later (the server) is closed.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0755", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a %d-byte tmpfs at %s (the fault suite runs as root): %v: %s", size, dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file in dir until the file system is full.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 16<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			return
		}
	}
}

// Recording onto a disk that fills up: every step still answers, the first
// one whose line could not be written says so in info.record_error, the
// lines written before are all readable (the file reads as a partial
// episode) and export turns them into rows; an environment made on the
// full disk works and says its episode is not recorded; the server closes.
func TestRecordingOntoAFullDisk(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, 1<<20)
	srv, base := startServer(t, server.Config{TrajectoryDir: disk})
	cl := dial(t, base)
	record := map[string]any{"screenshots": true}
	env := cl.call("make", "", map[string]any{"start_url": pageURL(4), "goal": "Load the list", "record": record})["env"].(string)
	written := 0
	for _, a := range []string{`click("load")`, `fill("name", "Ada")`} {
		r := cl.call("step", env, map[string]any{"action": a})
		if e := r["info"].(map[string]any)["record_error"]; e != nil {
			t.Fatalf("%s on a disk with room: record_error %v", a, e)
		}
		written++
	}
	fill(t, disk)
	// A step's line with its screenshot cannot fit in what is left of
	// the file's last page.
	r := cl.call("step", env, map[string]any{"action": `fill("name", "Grace")`})
	if e, _ := r["info"].(map[string]any)["record_error"].(string); !strings.Contains(e, "no space left") {
		t.Fatalf("the step whose line could not be written: record_error %q, want the disk's error", e)
	}
	r = cl.call("step", env, map[string]any{"action": `stop("done")`})
	if r["terminated"] != true || r["info"].(map[string]any)["record_error"] == nil {
		t.Errorf("a later step: %v; want it answered, saying the recording stopped", r["info"])
	}
	full := cl.call("make", "", map[string]any{"start_url": pageURL(5), "record": record})
	if e, _ := full["info"].(map[string]any)["record_error"].(string); e == "" {
		t.Errorf("make on the full disk: info %v, want record_error", full["info"])
	}
	cl.call("step", full["env"].(string), map[string]any{"action": `click("load")`})
	cl.call("close", env, nil)

	files, err := trajectory.Find(disk)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 {
		t.Fatalf("episode files %v; want the first environment's only (the one made on the full disk has none)", files)
	}
	ep, err := trajectory.Read(files[0])
	if err != nil {
		t.Fatalf("the episode written until the disk filled does not read: %v", err)
	}
	if len(ep.Steps) != written || ep.Reset == nil {
		t.Fatalf("the file has %d steps (reset %v); want the %d written before the disk filled", len(ep.Steps), ep.Reset != nil, written)
	}
	for i, s := range ep.Steps {
		if s.Step != i+1 || s.Obs == nil || len(s.Obs.Screenshot) == 0 {
			t.Errorf("step line %d: step %d, obs %v", i+1, s.Step, s.Obs != nil)
		}
	}
	var out bytes.Buffer
	res, err := trajectory.ExportCounted(&out, []string{disk}, trajectory.ExportOptions{Format: "transitions"})
	if err != nil || res.Rows != written {
		t.Errorf("export: %d rows, %v; want %d", res.Rows, err, written)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// An episode a site instance's death ended is recorded as the
// infrastructure's failure: its step that answered site_down is a line
// with the error and no observation; export leaves the episode out and
// says so, and keeps it when asked (up to the failure); the next
// episode, on a fresh instance, is recorded as usual.
func TestSiteDownEpisodeRecordedAsFailed(t *testing.T) {
	t.Parallel()
	site, st := healthSite(t, "name: recorded\nlocal: {command: ["+testsiteBin(t)+"], data_dir: "+baseData(t)+"}\nready: {path: /ready}\n")
	root := filepath.Join(t.TempDir(), "instances")
	local, err := hosting.NewLocal(nil, root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	srv, cl := healthServer(t, site, st, local, server.Config{TrajectoryDir: dir})
	env := cl.call("make", "", map[string]any{"site": "recorded", "task": "recorded.1", "record": map[string]any{}})["env"].(string)
	pids := sitePids(t, root)
	if len(pids) != 1 {
		t.Fatalf("site processes %v", pids)
	}
	cl.call("step", env, map[string]any{"action": `goto("/set?v=1")`})
	for p := range pids {
		killAndWait(t, p)
	}
	cl.fail("step", env, map[string]any{"action": `goto("/")`}, server.CodeSiteDown)
	cl.call("reset", env, nil)
	if r := cl.call("step", env, map[string]any{"action": `stop("")`}); r["reward"] != 1.0 {
		t.Fatalf("the fresh instance's stop: %v", r)
	}
	cl.call("close", env, nil)

	files, err := trajectory.Find(dir)
	if err != nil || len(files) != 2 {
		t.Fatalf("episode files %v, %v", files, err)
	}
	first, err := trajectory.Read(files[0])
	if err != nil {
		t.Fatal(err)
	}
	f := first.InfraFailure()
	if f == nil || f.Code != string(server.CodeSiteDown) || f.Fault != "infrastructure" || len(first.Steps) != 2 || first.Steps[1].Obs != nil {
		t.Fatalf("episode 1: failure %+v, %d steps; want site_down on its second step, without an observation", f, len(first.Steps))
	}
	if s := first.Summarize(); !strings.HasPrefix(s.Failed, "site_down: ") {
		t.Errorf("summary's failed = %q", s.Failed)
	}
	second, err := trajectory.Read(files[1])
	if err != nil || second.InfraFailure() != nil || len(second.Steps) != 1 {
		t.Fatalf("episode 2: %v, failure %v", err, second.InfraFailure())
	}
	for _, format := range []string{"transitions", "sft"} {
		var out bytes.Buffer
		res, err := trajectory.ExportCounted(&out, []string{dir}, trajectory.ExportOptions{Format: format})
		if err != nil || res.Rows != 1 || res.Failed != 1 || strings.Contains(out.String(), `"`+env+`/1"`) {
			t.Errorf("%s: %+v, %v; want episode 2's one row and episode 1 left out", format, res, err)
		}
		out.Reset()
		res, err = trajectory.ExportCounted(&out, []string{dir}, trajectory.ExportOptions{Format: format, IncludeFailed: true})
		if err != nil || res.Rows != 2 || res.Failed != 0 {
			t.Errorf("%s with failed episodes: %+v, %v; want episode 1's step before the failure too", format, res, err)
		}
	}
	if err := srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
