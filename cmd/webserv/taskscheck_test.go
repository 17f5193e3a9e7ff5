package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A task file is checked as the server reads it: a good one is counted, a
// bad one is refused naming the file, the task and the field.
func TestTasksCheck(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	bad := filepath.Join(dir, "bad.json")
	task := `{"task_id": 3, "sites": ["shopping"], "intent": "Go to the Boots page.", "start_url": "__SHOPPING__/",
	  "eval": {"eval_types": ["url_match"], "reference_url": "__SHOPPING__/category/boots", "url_note": "GOLD in PRED"}}`
	if err := os.WriteFile(good, []byte("["+task+"]"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("["+strings.Replace(task, `"reference_url": "__SHOPPING__/category/boots", `, "", 1)+"]"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := tasksCmd(context.Background(), nil, []string{"check", good}, nil, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "good.json: 1 tasks") {
		t.Fatalf("out = %q", out.String())
	}
	err := tasksCmd(context.Background(), nil, []string{"check", bad}, nil, &out)
	if err == nil || !strings.Contains(err.Error(), "bad.json: task 3") || !strings.Contains(err.Error(), "reference") {
		t.Fatalf("err = %v", err)
	}
}
