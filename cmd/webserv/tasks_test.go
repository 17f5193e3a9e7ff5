package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// webserv tasks check on the example site (local backend): every task's
// oracle earns 1, its wrong sequence, its start state and the null agents
// 0, and the table says so; its hand-written tasks have no independent
// solution, so --strict fails on them, saying why.
func TestTasksCheckExampleSite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := tasksCmd(ctx, nil, []string{"check", "--sites", "../../examples/sites", "--site", "tracker", "--no-incus",
		"--verified-python", "", "--instances", t.TempDir(), "--parallel", "3", "--strict"}, nil, &out)
	if err == nil || !strings.Contains(err.Error(), "6 of 6 task(s) unverified (--strict)") {
		t.Fatalf("tasks check --strict: %v\n%s", err, out.String())
	}
	for _, want := range []string{"task       oracle  wrong   start   null    solution  steps  seconds  result", "tracker.4  1       0       0       0       -             5", "6 task(s), 6 passed, 0 failed; 6 unverified"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// The same task file with a deliberately wrong verifier (it is asked about
// an issue the site does not have): check exits non-zero and says which
// task failed and why.
func TestTasksCheckFailsOnAWrongVerifier(t *testing.T) {
	src, err := filepath.Abs("../../examples/sites")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	def, err := os.ReadFile(filepath.Join(src, "tracker.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tasksFile, err := os.ReadFile(filepath.Join(src, "tracker", "tasks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(tasksFile), "./tracker/", src+"/tracker/")
	text = strings.Replace(text, "closed-with-comment, Crash when title is empty,", "closed-with-comment, Crash when the title is blank,", 1)
	d := strings.ReplaceAll(string(def), "./tracker/", src+"/tracker/")
	d = strings.Replace(d, "data_dir: tracker/data", "data_dir: "+src+"/tracker/data", 1)
	d = strings.Replace(d, "tasks: [tracker/tasks.yaml]", "tasks: [tasks/wrong.yaml]", 1)
	if err := os.Mkdir(filepath.Join(dir, "tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"tracker.yaml": d, "tasks/wrong.yaml": text} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err = tasksCmd(ctx, nil, []string{"check", "--sites", dir, "--no-incus", "--verified-python", "", "--instances", t.TempDir(), "--parallel", "3"}, nil, &out)
	if err == nil || err.Error() != "1 of 6 task(s) failed" {
		t.Errorf("tasks check with a wrong verifier returned %v", err)
	}
	for _, want := range []string{"tracker.4  -       -       -       -       -             5", "tracker.4: verifier: the grading failed on the oracle's final state (the verifier's",
		"tracker.4: verifier: the grading failed on the start state", "exit status 2", "no issue titled 'Crash when the title is blank'", "6 task(s), 5 passed, 1 failed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

// webserv tasks validate loads the files without starting anything and
// names the file, task and field of a mistake; check refuses to start on
// an invalid file.
func TestTasksValidate(t *testing.T) {
	var out bytes.Buffer
	if err := tasksCmd(context.Background(), nil, []string{"validate", "--sites", "../../examples/sites"}, nil, &out); err != nil {
		t.Fatalf("validate the example: %v", err)
	}
	if !strings.Contains(out.String(), "tasks.yaml (webserv schema): 6 task(s)") || !strings.Contains(out.String(), "tracker: 6 task(s) valid") {
		t.Errorf("validate printed:\n%s", out.String())
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("wiki.yaml", "name: wiki\nlocal: {command: [./wiki]}\ntasks: [wiki-tasks/*.yaml]\n")
	if err := os.Mkdir(filepath.Join(dir, "wiki-tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	// An answer task of the project's format without a type (its
	// must_include would pay an answer listing every number).
	untyped := "- task_id: 7\n  intent: How many?\n  eval: {eval_types: [string_match], reference_answers: {must_include: ['3']}}\n"
	cases := []struct{ file, want string }{
		{"- task_id: 1\n  intent: find it\n  eval: {eval_types: [url_match], refrence_url: __SITE__/a}\n", `task 1: json: unknown field "refrence_url"`},
		{"- task_id: 2\n  intent: check it\n  eval: {eval_types: [check], check: {command: []}}\n", "task 2: eval.check.command: empty"},
		{"- task_id: 3\n  intent: x\n  eval: {eval_types: [url_match], reference_url: /a}\n  oracle: ['clack(\"a\")']\n", `task wiki.3: oracle[0] "clack(\"a\")"`},
		{"- task_id: 4\n  intent: x\n  eval: {eval_types: [check], check: {command: [./missing.py]}}\n", "task wiki.4: program ./missing.py"},
		{"- task_id: 5\n  intent: x\n  login: {as: admin}\n  eval: {eval_types: [url_match], reference_url: /a}\n", "task 5: login.as"},
		{"- task_id: 6\n  intent: x\n  eval: {eval_types: [state], state: [{db: app.db, sql: ''}]}\n", "task 6: eval.state[0].sql: empty"},
		{untyped, `task wiki.7: eval.answer_type: missing; an answer task says its answer's type, so that an answer listing candidates is not paid: add "answer_type": one of number, currency, date, string, string_list`},
		{"- task_id: 8\n  intent: x\n  eval: {eval_types: [string_match], answer_type: number, reference_answers: {exact_match: three}}\n", `task 8: eval.reference_answers: "three" holds 0 number value(s)`},
	}
	for _, c := range cases {
		write("wiki-tasks/t.yaml", c.file)
		out.Reset()
		err := tasksCmd(context.Background(), nil, []string{"validate", "--sites", dir}, nil, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: validate returned %v, want %q", c.file, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), "t.yaml") && !strings.Contains(out.String(), "t.yaml") {
			t.Errorf("%q: the error does not name the file: %v", c.file, err)
		}
	}
	// check refuses it before it starts anything.
	write("wiki-tasks/t.yaml", untyped)
	if err := tasksCmd(context.Background(), nil, []string{"check", "--sites", dir, "--no-incus"}, nil, &out); err == nil || !strings.Contains(err.Error(), "task wiki.7: eval.answer_type: missing") {
		t.Errorf("check of an untyped answer task: %v", err)
	}
	write("wiki.yaml", "name: wiki\nlocal: {command: [./wiki]}\ntasks: [wiki-tasks/nope-*.yaml]\n")
	err := tasksCmd(context.Background(), nil, []string{"check", "--sites", dir, "--no-incus"}, nil, &out)
	if err == nil || !strings.Contains(err.Error(), `tasks[0] "wiki-tasks/nope-*.yaml": no such file`) {
		t.Errorf("check with a glob matching nothing: %v", err)
	}
}

// webserv tasks audit's exit status. On a deliberately weak task, the
// tracker's count question graded by a verifier that looks for the number
// inside the answer (must_include's way, which an answer listing every
// number passes), it fails naming the task and the attacks paid; on the
// same question typed (answer_type number) it passes.
func TestTasksAuditExitStatus(t *testing.T) {
	src, err := filepath.Abs("../../examples/sites")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	def, err := os.ReadFile(filepath.Join(src, "tracker.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d := strings.ReplaceAll(string(def), "./tracker/", src+"/tracker/")
	d = strings.Replace(d, "data_dir: tracker/data", "data_dir: "+src+"/tracker/data", 1)
	const count = "- task_id: 1\n  category: information\n  intent: How many open issues are labelled bug?\n" +
		"  oracle: ['click(\"bug\")', 'stop(\"3\")']\n  wrong: ['click(\"bug\")', 'stop(\"4\")']\n  eval:\n"
	files := map[string]string{
		"clean.yaml":        strings.Replace(strings.Replace(d, "name: tracker", "name: clean", 1), "tasks: [tracker/tasks.yaml]", "tasks: [t/clean.yaml]", 1),
		"weak.yaml":         strings.Replace(strings.Replace(d, "name: tracker", "name: weak", 1), "tasks: [tracker/tasks.yaml]", "tasks: [t/weak.yaml]", 1),
		"t/clean.yaml":      count + "    eval_types: [string_match]\n    answer_type: number\n    reference_answers: {exact_match: \"3\"}\n",
		"t/weak.yaml":       count + "    eval_types: [check]\n    check: {command: [./t/must_include.py]}\n",
		"t/must_include.py": "#!/usr/bin/env python3\nimport os\nprint(\"pass\" if \"3\" in os.environ[\"WEBSERV_ANSWER\"] else \"fail\")\n",
	}
	if err := os.Mkdir(filepath.Join(dir, "t"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	audit := func(site string) (string, error) {
		var out bytes.Buffer
		err := tasksCmd(ctx, nil, []string{"audit", "--sites", dir, "--site", site, "--no-incus", "--verified-python", "",
			"--instances", t.TempDir(), "--parallel", "3"}, nil, &out)
		return out.String(), err
	}
	out, err := audit("weak")
	if err == nil || !strings.Contains(err.Error(), "weak.1 (stuffed answer)") {
		t.Errorf("tasks audit on a weak task: %v, want an error naming weak.1's stuffed answer\n%s", err, out)
	}
	for _, want := range []string{"HACKABLE", "weak.1: stuffed answer: reward 1: an answer listing every candidate is paid", "1 task(s), 1 hackable"} {
		if !strings.Contains(out, want) {
			t.Errorf("the weak task's audit lacks %q:\n%s", want, out)
		}
	}
	out, err = audit("clean")
	if err != nil || !strings.Contains(out, "site clean: 1 task(s), 0 hackable; 0 of 7 attacks paid") {
		t.Errorf("tasks audit on the typed task: %v\n%s", err, out)
	}
}
