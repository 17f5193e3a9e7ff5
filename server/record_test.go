package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/trajectory"
)

// Episodes recorded through make's record option export as transitions and
// as instruction-labelled demonstrations.
func TestRecordAndExport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, base := startServer(t, server.Config{TrajectoryDir: dir})
	cl := dial(t, base)
	made := cl.call("make", "", map[string]any{"start_url": pageURL(8), "goal": "Load the list", "record": map[string]any{}})
	env := made["env"].(string)
	if obsOf(made)["axtree"] == "" {
		t.Errorf("a recording environment observes no accessibility tree")
	}
	cl.call("step", env, map[string]any{"action": `click("load")`})
	cl.call("step", env, map[string]any{"action": map[string]any{"type": "type", "target": "name", "text": "Ada"}})
	cl.call("step", env, map[string]any{"action": "stop [loaded]"})
	cl.call("reset", env, nil) // a second episode, one step
	cl.call("step", env, map[string]any{"action": "click [nope]"})
	cl.call("close", env, nil)

	files, _ := filepath.Glob(filepath.Join(dir, env, "*.jsonl.gz"))
	if len(files) != 2 {
		t.Fatalf("recorded files = %v", files)
	}
	lines := readGz(t, files[0])
	if len(lines) != 5 || lines[0]["kind"] != "episode" || lines[0]["goal"] != "Load the list" || lines[1]["kind"] != "reset" ||
		lines[2]["action"] != `click("load")` || lines[3]["action"] != `fill("name", "Ada")` || lines[4]["terminated"] != true {
		t.Fatalf("episode 1 = %v", lines)
	}

	var out bytes.Buffer
	n, err := trajectory.Export(&out, []string{dir}, trajectory.ExportOptions{Format: "transitions", AXTree: true})
	if err != nil || n != 4 {
		t.Fatalf("transitions: %d rows, %v", n, err)
	}
	var rows []trajectory.TransitionRow
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r trajectory.TransitionRow
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	first := rows[0]
	if first.Action != `click("load")` || !strings.Contains(first.Observation, "[load] button") || !strings.Contains(first.NextObservation, "loaded 8") {
		t.Errorf("first transition = %+v", first)
	}
	if rows[2].Done != true || rows[3].ActionError == "" || rows[1].NextObservation != rows[2].Observation {
		t.Errorf("transitions do not chain: %+v", rows)
	}

	out.Reset()
	n, err = trajectory.Export(&out, []string{dir}, trajectory.ExportOptions{Format: "sft"})
	if err != nil || n != 4 {
		t.Fatalf("sft: %d rows, %v", n, err)
	}
	var sft trajectory.SFTRow
	sc := bufio.NewScanner(&out)
	for i := 0; sc.Scan(); i++ {
		if i == 2 {
			_ = json.Unmarshal(sc.Bytes(), &sft)
		}
	}
	if sft.Instruction != "Load the list" || strings.Join(sft.PreviousActions, " | ") != `click("load") | fill("name", "Ada")` || sft.Action != "stop(\"loaded\")" && sft.Action != "stop [loaded]" {
		t.Errorf("sft row = %+v", sft)
	}
	// Recording needs a trajectory directory on the server.
	_, plain := startServer(t, server.Config{})
	dial(t, plain).fail("make", "", map[string]any{"start_url": pageURL(1), "record": map[string]any{}}, server.CodeNotSupported)
}

func readGz(t *testing.T, path string) []map[string]any {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(gz)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}
