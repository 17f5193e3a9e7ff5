package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/internal/procstat"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/trajectory"
)

// The fault suite's browser rows, through the protocol: a server on a
// pool of two browser processes with environments on both; one browser
// process is killed with SIGKILL. The environments on it answer their
// next step browser_crashed (infrastructure, retryable) and their reset
// recovers them; the environments on the other step on untouched; a new
// environment works; stats, /healthz and /metrics report the crash and the
// replacement; the lost episodes are recorded as the infrastructure's
// failures, their completed steps on disk, and export leaves them out;
// and the server and the pool still close cleanly, leaving no browser
// process behind.
func TestKilledBrowserProcessLosesOnlyItsEnvironments(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pool, err := envcore.LaunchPool(ctx, zap.NewNop(), server.Routed(envcore.BrowserOptions{}, router), 2)
	if err != nil {
		t.Fatal(err)
	}
	poolClosed := false
	defer func() {
		if !poolClosed {
			_ = pool.Close()
		}
	}()
	dir := t.TempDir()
	s := server.New(zap.NewNop(), pool, server.OpenFactory{}, server.Config{Env: envConfig(), TrajectoryDir: dir})
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	cl := dial(t, hs.URL)

	const n = 4
	envs := make([]string, n)
	for i := range envs {
		envs[i] = cl.call("make", "", map[string]any{"start_url": pageURL(i), "record": map[string]any{}})["env"].(string)
		cl.call("step", envs[i], map[string]any{"action": `click("Load")`}) // a completed step of the episode
	}
	st := cl.call("stats", "", nil)
	procs := st["browsers"].(map[string]any)["processes"].([]any)
	if len(procs) != 2 || st["browser_alive"] != true {
		t.Fatalf("stats: %v; want 2 browser processes", st)
	}
	victim := int(toUint(procs[0].(map[string]any)["pid"]))
	onVictim := int(toUint(procs[0].(map[string]any)["envs"]))
	if onVictim != n/2 {
		t.Fatalf("%d of %d environments on the first browser; want them spread evenly: %v", onVictim, n, st["browsers"])
	}
	before := treeOf(t, victim)
	for _, p := range procs[1:] {
		for pid, cmd := range treeOf(t, int(toUint(p.(map[string]any)["pid"]))) {
			before[pid] = cmd
		}
	}

	replaced := pool.Replaced()
	killed := time.Now()
	killAndWait(t, victim)
	var lost []int
	for i, env := range envs {
		r := wait(t, cl.send("step", env, map[string]any{"action": `click("Load")`}))
		if r["ok"] == true {
			if got := obsOf(r["result"].(map[string]any))["url"]; got != pageURL(i) {
				t.Errorf("env %d on the other browser: at %v after its step, want %s", i, got, pageURL(i))
			}
			continue
		}
		e, _ := r["error"].(map[string]any)
		if e["code"] != string(server.CodeBrowserCrashed) || e["fault"] != "infrastructure" || e["retryable"] != true {
			t.Fatalf("env %d: step after the browser was killed: %v; want browser_crashed, infrastructure, retryable", i, e)
		}
		if msg, _ := e["message"].(string); !strings.Contains(msg, strconv.Itoa(victim)) || !strings.Contains(msg, "reset") {
			t.Errorf("the crash's message does not name the process and say a reset recovers: %q", msg)
		}
		lost = append(lost, i)
	}
	if len(lost) != onVictim {
		t.Fatalf("%d environments got browser_crashed; %d were on the killed browser", len(lost), onVictim)
	}
	for _, i := range lost {
		cl.fail("step", envs[i], map[string]any{"action": `click("Load")`}, server.CodeBrowserCrashed) // until a reset
		if got := obsOf(cl.call("reset", envs[i], nil))["url"]; got != pageURL(i) {
			t.Errorf("reset of lost env %d: at %v, want %s", i, got, pageURL(i))
		}
		cl.call("step", envs[i], map[string]any{"action": `click("Load")`})
	}
	t.Logf("the lost environments stepped again %v after the kill", time.Since(killed))
	fresh := cl.call("make", "", map[string]any{"start_url": pageURL(10)})["env"].(string)
	cl.call("step", fresh, map[string]any{"action": `click("Load")`})

	select {
	case <-replaced:
		t.Logf("the replacement browser process ran %v after the kill", time.Since(killed))
	case <-ctx.Done():
		t.Fatal("no replacement browser process started")
	}
	h := cl.call("stats", "", nil)["browsers"].(map[string]any)
	if toUint(h["alive"]) != 2 || toUint(h["crashes"]) != 1 || toUint(h["restarts"]) != 1 {
		t.Errorf("stats after the replacement: %v; want 2 alive, 1 crash, 1 restart", h)
	}
	if body := get(t, hs.URL+"/healthz"); strings.TrimSpace(body) != "ok" {
		t.Errorf("healthz: %q", body)
	}
	metrics := get(t, hs.URL+"/metrics")
	for _, m := range []string{"webserv_browser_crashes_total 1", "webserv_browser_restarts_total 1", "webserv_browsers_alive 2", "webserv_browsers 2"} {
		if !strings.Contains(metrics, m+"\n") {
			t.Errorf("/metrics lacks %q", m)
		}
	}
	for _, p := range pool.Health().Processes {
		for pid, cmd := range treeOf(t, p.PID) {
			before[pid] = cmd
		}
	}

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("server close: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the server's Close did not return")
	}
	poolClosed = true
	if err := pool.Close(); err != nil {
		t.Errorf("pool close: %v", err)
	}
	checkLostEpisodes(t, dir, envs, lost)
	for pid, cmd := range before {
		if now, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && string(now) == cmd {
			t.Errorf("after Close, browser process %d (%.80s) still runs", pid, strings.ReplaceAll(cmd, "\x00", " "))
		}
	}
}

// treeOf is root and its descendants: pid to command line.
func treeOf(t *testing.T, root int) map[int]string {
	t.Helper()
	procs, err := procstat.Processes()
	if err != nil {
		t.Fatal(err)
	}
	parent := map[int]int{}
	for _, p := range procs {
		parent[p.PID] = p.Parent
	}
	out := map[int]string{}
	for _, p := range procs {
		for q := p.PID; q > 1; q = parent[q] {
			if q == root {
				if cmd, err := os.ReadFile("/proc/" + strconv.Itoa(p.PID) + "/cmdline"); err == nil {
					out[p.PID] = string(cmd)
				}
				break
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no process %d", root)
	}
	return out
}

func get(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// checkLostEpisodes checks the recordings: each lost environment's episode
// is recorded as ended by browser_crashed, with the step it completed
// before; no other episode failed; export leaves the failed ones out,
// and keeps them when asked.
func checkLostEpisodes(t *testing.T, dir string, envs []string, lost []int) {
	t.Helper()
	files, err := trajectory.Find(dir)
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]int{}
	for _, f := range files {
		ep, err := trajectory.Read(f)
		if err != nil {
			t.Fatal(err)
		}
		fl := ep.InfraFailure()
		if fl == nil {
			continue
		}
		failed[ep.Head.Env]++
		if fl.Code != string(server.CodeBrowserCrashed) || len(ep.Steps) < 2 || ep.Steps[0].Error != nil || ep.Steps[0].Obs == nil {
			t.Errorf("%s: failure %+v, %d steps; want browser_crashed after a completed step", f, fl, len(ep.Steps))
		}
	}
	for _, i := range lost {
		if failed[envs[i]] != 1 {
			t.Errorf("lost env %d: %d episodes recorded as failed, want 1", i, failed[envs[i]])
		}
	}
	if len(failed) != len(lost) {
		t.Errorf("episodes of %d environments recorded as failed, want the %d lost ones: %v", len(failed), len(lost), failed)
	}
	var out bytes.Buffer
	res, err := trajectory.ExportCounted(&out, []string{dir}, trajectory.ExportOptions{Format: "transitions"})
	if err != nil || res.Failed != len(lost) || res.Rows == 0 {
		t.Errorf("export: %+v, %v; want the %d failed episodes left out", res, err, len(lost))
	}
	all, err := trajectory.ExportCounted(&out, []string{dir}, trajectory.ExportOptions{Format: "transitions", IncludeFailed: true})
	if err != nil || all.Failed != 0 || all.Rows != res.Rows+len(lost) {
		t.Errorf("export with the failed episodes: %+v, %v; want their %d completed steps too", all, err, len(lost))
	}
}
