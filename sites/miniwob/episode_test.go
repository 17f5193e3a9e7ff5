package miniwob

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// BrowserGym's rule (AbstractMiniwobTask.validate): reward 1 when the raw
// reward is positive, the episode over when the page says done, reward 0
// and over when the page is not the task's; WebServ truncates on MiniWoB's
// own time limit.
func TestGradeFollowsBrowserGymsMiniWoBRule(t *testing.T) {
	const start = Origin + "/miniwob/click-test.html"
	for _, c := range []struct {
		name       string
		st         State
		reward     float64
		done       bool
		truncated  bool
		infoReward any
	}{
		{"running", State{URL: start, Task: true}, 0, false, false, 0.0},
		{"solved", State{URL: start, Task: true, Done: true, RawReward: 1, Reward: 0.93}, 1, true, false, 1.0},
		{"partly right", State{URL: start, Task: true, Done: true, RawReward: 0.5, Reward: 0.4}, 1, true, false, 0.5},
		{"wrong", State{URL: start, Task: true, Done: true, RawReward: -1, Reward: -1}, 0, true, false, -1.0},
		{"timed out", State{URL: start, Task: true, Done: true, RawReward: -1, Reward: -1, Reason: TimedOut}, 0, false, true, -1.0},
		{"left the page", State{URL: Origin + "/miniwob/click-button.html", Task: true}, 0, true, false, nil},
		{"not a task page", State{URL: "http://elsewhere.test/"}, 0, true, false, nil},
	} {
		res := Grade(c.st, start, 5)
		info := res.MiniWoB
		var raw any
		if info.MiniWoBFigures != nil {
			raw = info.RawReward
		}
		if res.Reward != c.reward || res.Done != c.done || res.TimeLimit != c.truncated || raw != c.infoReward || info.PageSeed != 5 || (raw == nil) == (info.Error == "") {
			t.Errorf("%s: got reward %v done %v time limit %v info %+v", c.name, res.Reward, res.Done, res.TimeLimit, info)
		}
	}
}

func TestLoadListsTaskPagesAndSaysHowToInstall(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "pip install miniwob==1.1.0") {
		t.Fatalf("a directory without core.js: %v", err)
	}
	for _, f := range []string{"core/core.js", "miniwob/click-test.html", "miniwob/a-task.html", "miniwob/notes.txt"} {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Load(dir)
	if err != nil || strings.Join(p.Tasks, ",") != "a-task,click-test" {
		t.Fatalf("Load = %v, %v", p, err)
	}
	if _, err := p.Pick("nope", nil); err == nil {
		t.Error("an unknown task was picked")
	}
	seed := int64(3)
	if n, _ := p.Pick("", &seed); n != "click-test" {
		t.Errorf("seed 3 picked %s", n)
	}
	if s := p.Site(); s.Backend() != "static" || s.Origin != Origin {
		t.Errorf("site %+v", s)
	}
}

// InPlace finds a task by binary search: the list must stay sorted, each
// task once.
func TestInPlaceTasksAreSortedAndFound(t *testing.T) {
	if !slices.IsSorted(inPlaceTasks) || len(slices.Compact(slices.Clone(inPlaceTasks))) != len(inPlaceTasks) {
		t.Fatalf("inPlaceTasks is not sorted or repeats a task: %v", inPlaceTasks)
	}
	for _, n := range inPlaceTasks {
		if !InPlace(n) {
			t.Errorf("InPlace(%q) = false", n)
		}
	}
	if InPlace("click-dialog") || InPlace("no-such-task") {
		t.Error("a task that reloads is listed in place")
	}
}
