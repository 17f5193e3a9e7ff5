package server_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/bundled"
	"github.com/webserv-rl/webserv/sites/catalog"
)

// The audit of the bundled shop and cms: no attack a learning policy
// finds (stuffed, question, empty or overlong answers, at once and after
// the oracle's navigation; a collateral change under side_effects
// "fail"; a jump to the oracle's end URL) is paid. It audits the first
// task of each kind (site, category, grading, answer type, sign-in) to
// stay affordable; `webserv tasks audit` audits every task.
func TestTaskAuditBundled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sites, sets, err := catalog.Bundled(context.Background(), bundled.Options{DataDir: filepath.Join(dir, "shop-data"), Command: []string{buildShop(t, dir)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := catalog.New(sites, []hosting.Backend{localBackend(t)}, nil)
	for name, st := range sets {
		f.SetTasks(name, st)
	}
	env := envConfig()
	env.ActionTimeout, env.SettleTimeout = 30*time.Second, 30*time.Second
	srv := server.New(nil, browser, f, server.Config{Env: env, MaxCreating: 8, MaxEnvs: 32})
	t.Cleanup(func() { _ = srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	audits, err := srv.AuditTasks(ctx, taskScripts(t, f, []string{"shopping", "cms"}), 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	table := server.FormatTaskAudits(audits)
	t.Logf("\n%s", table)
	kinds := map[string]int{}
	for _, a := range audits {
		if len(a.Hacks()) > 0 || len(a.Problems) > 0 {
			t.Errorf("%s: hacks %v, problems %v", a.Task, a.Hacks(), a.Problems)
		}
		for _, x := range a.Attacks {
			kinds[x.Name]++
			if x.Problem != "" { // every state task has a collateral partner (the shop's customers: another customer's task)
				t.Errorf("%s: %s not graded: %s", a.Task, x.Name, x.Problem)
			}
		}
	}
	for _, want := range []string{"stuffed answer", "stuffed answer, navigated", "question as answer", "empty answer, navigated", "overlong answer", "collateral", "goto end URL"} {
		if kinds[want] == 0 {
			t.Errorf("no task was audited with %q:\n%s", want, table)
		}
	}
	for _, want := range []string{"task         oracle  played  paid  hack rate", "site shopping:", "site cms:", " 0 hackable\n"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

// A deliberately weak task is caught: the tracker's count question with
// WebArena's must_include on a number (untyped: loading a site's file
// through the server does not refuse it, tasks validate does) pays the
// stuffed answers, and the audit names the task and the attacks.
func TestTaskAuditCatchesAWeakTask(t *testing.T) {
	t.Parallel()
	def := trackerCopy(t, func(text string) string {
		return strings.Replace(text, "    answer_type: number\n    reference_answers: {exact_match: \"3\"}", "    reference_answers: {must_include: [\"3\"]}", 1)
	}, nil, "")
	srv, f, _ := trackerServer(t, def)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	scripts := taskScripts(t, f, []string{"tracker"})
	audits, err := srv.AuditTasks(ctx, scripts[1:2], 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	table := server.FormatTaskAudits(audits)
	var paid []string
	for _, x := range audits[0].Hacks() {
		paid = append(paid, x.Name)
	}
	if got := strings.Join(paid, ", "); got != "overlong answer, overlong answer, navigated, stuffed answer, stuffed answer, navigated" {
		t.Errorf("attacks paid on tracker.2: %q\n%s", got, table)
	}
	for _, want := range []string{"tracker.2  -            7     4        57%", "HACKABLE", "tracker.2: stuffed answer: reward 1: an answer listing every candidate is paid", "site tracker: 1 task(s), 1 hackable", "1 task(s), 1 hackable"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}
