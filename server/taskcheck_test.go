package server_test

import (
	"strings"
	"testing"
)

// The check loop proves more than a replay: null agents (stop with the
// start page's title, seeded random actions) must earn 0 as the start
// state does, and each independent solution 1. On the example tracker: task 1 graded
// against the start page itself (every null agent passes it), task 2 with
// a second route to its answer (the label's page by URL: it passes, the
// task is verified), task 3 with a "solution" that does something else
// (it fails, saying the verifier does not accept it), task 6 with an
// oracle that also comments on the issue it closes (it earns 1, but its
// episode lists the comment as a side effect: it fails, saying to name
// the change or drop it); the rest have none and are unverified.
func TestTaskCheckNullAgentsAndIndependentSolutions(t *testing.T) {
	t.Parallel()
	def := trackerCopy(t, func(text string) string {
		text = strings.Replace(text, "reference_url: __SITE__/issues/2", "reference_url: __SITE__/", 1)
		text = strings.Replace(text, `  oracle: ['click("bug")', 'stop("3")']`,
			`  oracle: ['click("bug")', 'stop("3")']`+"\n"+`  solutions: [['goto("__SITE__/?label=bug")', 'stop("3")']]`, 1)
		text = strings.Replace(text, `  oracle: ['click("close-issue")', 'stop("")']`,
			`  oracle: ['fill("comment.comment", "closing")', 'click("comment.add-comment")', 'click("close-issue")', 'stop("")']`, 1)
		return strings.Replace(text, `  wrong: ['click("export-to-csv")', 'fill("comment.comment", "Fixed in v2.0")'`,
			`  solutions: [['click("export-to-csv")', 'stop("")']]`+"\n"+`  wrong: ['click("export-to-csv")', 'fill("comment.comment", "Fixed in v2.0")'`, 1)
	}, nil, "")
	srv, f, _ := trackerServer(t, def)
	byID, table := checkTracker(t, srv, f)
	lax := byID["tracker.1"]
	problems := strings.Join(lax.Problems, "\n")
	for _, want := range []string{
		"null agent (stop with the start page's title) [stop(", "null agent (3 random actions, seed ",
		"reward 1, want 0: doing next to nothing passes",
	} {
		if !strings.Contains(problems, want) {
			t.Errorf("tracker.1 (graded on its start page): problems lack %q:\n%s", want, table)
		}
	}
	if lax.OK() || lax.Null != 1 || lax.Start != 1 {
		t.Errorf("tracker.1: %+v\n%s", lax, table)
	}
	if v := byID["tracker.2"]; !v.OK() || v.Unverified() || v.Solution != 1 || v.Null != 0 {
		t.Errorf("tracker.2 (a second route to the answer): %+v\n%s", v, table)
	}
	bad := byID["tracker.3"]
	if bad.OK() || bad.Solution != 0 || !strings.Contains(strings.Join(bad.Problems, "\n"), "solution 1: reward 0, want 1: the verifier does not accept this other route") {
		t.Errorf("tracker.3 (a solution that is not one): %+v\n%s", bad, table)
	}
	harm := byID["tracker.6"]
	if harm.OK() || harm.Oracle != 1 || !strings.Contains(strings.Join(harm.Problems, "\n"), "oracle: its episode lists 1 side effect(s), first insert comments map[") {
		t.Errorf("tracker.6 (an oracle that also comments): %+v\n%s", harm, table)
	}
	for _, id := range []string{"tracker.4", "tracker.5"} {
		if c := byID[id]; !c.OK() || !c.Unverified() || c.Null != 0 {
			t.Errorf("%s: %+v\n%s", id, c, table)
		}
	}
	for _, want := range []string{
		"task       oracle  wrong   start   null    solution  steps  seconds  result",
		"6 task(s), 3 passed, 3 failed; 2 unverified (no independent solution",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "tracker.2 ") && (!strings.HasPrefix(line, "tracker.2  1       0       0       0       1  ") || !strings.HasSuffix(line, "  ok")) {
			t.Errorf("tracker.2's row: %q", line)
		}
	}
}
