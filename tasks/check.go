package tasks

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the state evaluator's db: files

	"github.com/webserv-rl/webserv/hosting"
)

// Check is a programmatic verifier: a command run in the episode's site
// instance after the episode (hosting.Execer: local, in the instance's data
// directory with the site's environment; Incus, in the container). It
// reads the agent's answer and the final URL from $WEBSERV_ANSWER and
// $WEBSERV_URL (and as JSON on stdin: {"task_id", "answer", "url"}), exits
// 0 and prints its verdict as the last line of its stdout (earlier lines
// are its own log, ignored):
//
//	pass  or  fail                       1 or 0
//	0.5                                  a score in [0, 1]
//	{"title": 1, "body": 0}              named sub-scores, equal weights
//	{"title": {"score": 1, "weight": 3}} named sub-scores with weights
//
// The reward is the weighted mean. The exit status is never a verdict: a
// verifier that exits non-zero (an uncaught exception is exit 1 in
// Python), is killed, runs past its timeout, writes more than 1 MiB, or
// prints no verdict cannot grade the episode: an evaluation error (with
// the end of its stderr), never a score.
type Check struct {
	Command []string `json:"command"`
	// TimeoutMs bounds the run (default 30000, at most 600000).
	TimeoutMs int `json:"timeout_ms,omitempty"`
}

// CheckOutputLimit bounds a verifier's stdout and stderr each.
const CheckOutputLimit = 1 << 20

func (c *Check) validate() error {
	switch {
	case c == nil:
		return errors.New(": the check evaluator needs eval.check with a command")
	case len(c.Command) == 0 || strings.TrimSpace(c.Command[0]) == "":
		return errors.New(".command: empty (give a list like [\"./check.py\"])")
	case c.TimeoutMs < 0 || c.TimeoutMs > 600000:
		return fmt.Errorf(".timeout_ms: %d; want 1-600000 (0: 30000)", c.TimeoutMs)
	}
	return nil
}

func (c *Check) timeout() time.Duration {
	if c.TimeoutMs == 0 {
		return 30 * time.Second
	}
	return time.Duration(c.TimeoutMs) * time.Millisecond
}

// runCheck runs the task's verifier in the instance of its first site and
// returns the score and the named sub-scores.
func runCheck(ctx context.Context, t *Task, page Page, answer string, sites map[string]Site) (float64, map[string]float64, error) {
	in, err := taskInstance(t, "", sites)
	if err != nil {
		return 0, nil, err
	}
	final, err := page.URL(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("read the final URL: %w", err)
	}
	id := fmt.Sprint(t.ID)
	stdin, _ := json.Marshal(map[string]string{"task_id": id, "answer": answer, "url": final})
	res, err := in.Exec(ctx, hosting.ExecRequest{
		Command: t.Eval.Check.Command, Stdin: stdin, Timeout: t.Eval.Check.timeout(), MaxOutput: CheckOutputLimit,
		Env: map[string]string{"WEBSERV_ANSWER": answer, "WEBSERV_URL": final, "WEBSERV_TASK_ID": id},
	})
	line := hosting.ExecLine(t.Eval.Check.Command)
	if err != nil { // a timeout, too much output, a command that would not start
		return 0, nil, fmt.Errorf("verifier %q: %w", line, err)
	}
	if res.ExitCode != 0 {
		return 0, nil, fmt.Errorf("verifier %q failed: exit status %d (a verifier exits 0 and prints its verdict; any other exit is its own failure, not a score): %s", line, res.ExitCode, lastLines(res.Stderr))
	}
	score, subs, err := ParseCheckOutput(res.Stdout)
	if err != nil {
		return 0, nil, fmt.Errorf("verifier %q: %w; its stderr: %s", line, err, lastLines(res.Stderr))
	}
	return score, subs, nil
}

// verdictLine is the last non-empty line of a verifier's stdout.
func verdictLine(out []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	return bytes.TrimSpace(lines[len(lines)-1])
}

// ParseCheckOutput reads a verifier's verdict, the last non-empty line
// of its stdout: pass (1), fail (0), a number in [0, 1], or an object of
// named sub-scores, each a number or {"score": s, "weight": w}.
func ParseCheckOutput(stdout []byte) (float64, map[string]float64, error) {
	out := verdictLine(stdout)
	switch string(out) {
	case "":
		return 0, nil, errors.New("printed no verdict; want pass, fail, a score in [0, 1] or {\"name\": score, ...} as the last line of stdout")
	case "pass":
		return 1, nil, nil
	case "fail":
		return 0, nil, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil || dec.More() {
		return 0, nil, fmt.Errorf("printed %q as its verdict; want pass, fail, a score in [0, 1] or {\"name\": score, ...} as the last line of stdout", shorten(string(out), 200))
	}
	score := func(name string, x any) (float64, error) {
		n, ok := x.(json.Number)
		if !ok {
			return 0, fmt.Errorf("score %s is %v, not a number", name, x)
		}
		f, err := n.Float64()
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
			return 0, fmt.Errorf("score %s is %s; want a number in [0, 1]", name, n)
		}
		return f, nil
	}
	if _, ok := v.(json.Number); ok {
		f, err := score("", v)
		return f, nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok || len(obj) == 0 {
		return 0, nil, fmt.Errorf("printed %q; want a number in [0, 1] or a non-empty object of named scores", shorten(string(out), 200))
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	subs := map[string]float64{}
	var sum, weights float64
	for _, k := range names {
		w := 1.0
		x := obj[k]
		if m, ok := x.(map[string]any); ok {
			x = m["score"]
			if wn, ok := m["weight"]; ok {
				n, isNum := wn.(json.Number)
				f, err := n.Float64()
				if !isNum || err != nil || f < 0 || math.IsInf(f, 0) {
					return 0, nil, fmt.Errorf("weight of %s is %v; want a number >= 0", k, wn)
				}
				w = f
			}
			for field := range m {
				if field != "score" && field != "weight" {
					return 0, nil, fmt.Errorf("sub-score %s has field %q; want score and weight", k, field)
				}
			}
		}
		f, err := score(k, x)
		if err != nil {
			return 0, nil, err
		}
		subs[k] = f
		sum += w * f
		weights += w
	}
	if weights == 0 {
		return 0, nil, errors.New("every weight is 0")
	}
	return sum / weights, subs, nil
}

// taskInstance is the instance of a check's site (default the task's
// first), which must be able to run commands.
func taskInstance(t *Task, site string, sites map[string]Site) (hosting.Execer, error) {
	if site == "" && len(t.Sites) > 0 {
		site = t.Sites[0]
	}
	s, ok := sites[site]
	if !ok || s.Instance == nil {
		return nil, fmt.Errorf("site %q has no instance this server can run commands in (a site's own tasks run their checks in its instance)", site)
	}
	return s.Instance, nil
}

// dbValue runs a read-only query on a SQLite file of the instance and
// returns its first value as text ("" for no rows or NULL).
func dbValue(ctx context.Context, in hosting.Execer, file, query string, args []any) (string, error) {
	dir, err := os.MkdirTemp("", "webserv-state-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	path, err := fetchDB(ctx, in, file, dir)
	if err != nil {
		return "", fmt.Errorf("db %s: %w", file, err)
	}
	db, err := openReadOnly(path)
	if err != nil {
		return "", fmt.Errorf("db %s: %w", file, err)
	}
	defer db.Close()
	v, err := firstValue(ctx, db, query, args)
	if err != nil {
		return "", fmt.Errorf("db %s: %w", file, err)
	}
	return v, nil
}

// fetchDB returns a path on this host where the instance's state
// database can be read (made in dir when it is not there already): the
// SQLite file file, or with hosting.StateTables the site's declared state
// read as tables.
func fetchDB(ctx context.Context, in hosting.Execer, file, dir string) (string, error) {
	if file != hosting.StateTables {
		return in.FetchFile(ctx, file, dir)
	}
	r, ok := in.(hosting.StateReader)
	if !ok {
		return "", errors.New("the site declares no state (state: in its definition, docs/sites.md)")
	}
	dst := filepath.Join(dir, "state.db")
	if err := r.ReadState(ctx, dst); err != nil {
		return "", err
	}
	return dst, nil
}

// openReadOnly opens a SQLite file for reading only.
func openReadOnly(path string) (*sql.DB, error) {
	return sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro&_pragma=busy_timeout(5000)&_pragma=query_only(1)")
}

// firstValue runs query and returns its first value as text ("" for no
// rows or NULL; a whole float as an integer).
func firstValue(ctx context.Context, db querier, query string, args []any) (string, error) {
	var v any
	switch err := db.QueryRowContext(ctx, query, args...).Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("query %q: %w", shorten(query, 200), err)
	}
	switch x := v.(type) {
	case nil:
		return "", nil
	case []byte:
		return string(x), nil
	case float64:
		if x == math.Trunc(x) {
			return fmt.Sprint(int64(x)), nil
		}
		return fmt.Sprint(x), nil
	default:
		return fmt.Sprint(x), nil
	}
}

func shorten(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// lastLines is the end of a command's stderr, for an error message.
func lastLines(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(no output on stderr)"
	}
	if len(s) > 800 {
		s = "..." + s[len(s)-800:]
	}
	return s
}
