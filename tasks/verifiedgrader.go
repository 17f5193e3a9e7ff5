package tasks

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/netroute"
)

// VerifiedGrader grades WebArena-Verified tasks with the webarena-verified
// package's own evaluators, in a grader process beside the server
// (python -m webserv.verified serve) that it starts and speaks JSON Lines
// with. Grading runs here, not in clients, so every client (the Python
// package, TRL and verl adapters, a raw WebSocket) gets the same reward in
// the final step, from the trace the server recorded and one version of
// the package.
type VerifiedGrader struct {
	log     *zap.Logger
	command []string

	mu    sync.Mutex // one request at a time on the process
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	hello VerifiedHello
}

// VerifiedHello is what the grader process reports: the package version
// and where its datasets are.
type VerifiedHello struct {
	Version string `json:"version"`
	Full    string `json:"full"`
	Hard    string `json:"hard"`
	Error   string `json:"error"`
}

// VerifiedResult is one grading.
type VerifiedResult struct {
	Score      float64         `json:"score"`
	Status     string          `json:"status"`
	Error      string          `json:"error"`
	Evaluators json.RawMessage `json:"evaluators"`
}

// NewVerifiedGrader starts the grader process (command, like
// [".venv/bin/python", "-m", "webserv.verified", "serve"]) and asks it
// where the datasets are.
func NewVerifiedGrader(ctx context.Context, log *zap.Logger, command []string) (*VerifiedGrader, error) {
	if log == nil {
		log = zap.NewNop()
	}
	g := &VerifiedGrader{log: log, command: command}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.start(); err != nil {
		return nil, err
	}
	if err := g.roundTrip(map[string]any{"op": "hello"}, &g.hello); err != nil {
		g.stop()
		return nil, err
	}
	if g.hello.Error != "" || g.hello.Full == "" {
		g.stop()
		return nil, fmt.Errorf("the WebArena-Verified grader (%s) could not find the package's datasets: %s; install it with pip install webarena-verified==1.2.3", strings.Join(command, " "), g.hello.Error)
	}
	return g, nil
}

// Hello is what the process reported at start.
func (g *VerifiedGrader) Hello() VerifiedHello { return g.hello }

// start runs the process. g.mu is held.
func (g *VerifiedGrader) start() error {
	if len(g.command) == 0 {
		return errors.New("no command for the WebArena-Verified grader; give one like python -m webserv.verified serve")
	}
	cmd := exec.Command(g.command[0], g.command[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("start the WebArena-Verified grader: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("start the WebArena-Verified grader: %w", err)
	}
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 8 << 10}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the WebArena-Verified grader %q: %w; check the Python environment (make venv)", strings.Join(g.command, " "), err)
	}
	g.cmd, g.in, g.out = cmd, in, bufio.NewReaderSize(out, 1<<20)
	return nil
}

// stop ends the process. g.mu is held.
func (g *VerifiedGrader) stop() {
	if g.cmd == nil {
		return
	}
	g.in.Close()
	_ = g.cmd.Process.Kill()
	_ = g.cmd.Wait()
	g.cmd = nil
}

// Close stops the grader process.
func (g *VerifiedGrader) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stop()
}

// roundTrip sends one request and reads its reply. g.mu is held.
func (g *VerifiedGrader) roundTrip(req any, reply any) error {
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := g.in.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("send to the WebArena-Verified grader: %w", err)
	}
	resp, err := g.out.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("the WebArena-Verified grader (%s) ended: %w; run it by hand to see why", strings.Join(g.command, " "), err)
	}
	if err := json.Unmarshal(resp, reply); err != nil {
		return fmt.Errorf("the WebArena-Verified grader answered %q: %w", string(resp), err)
	}
	return nil
}

// VerifiedRequest is one episode to grade.
type VerifiedRequest struct {
	// TaskID grades a task of the package's dataset by its id, through
	// WebArenaVerified.evaluate_task; Task (a definition given inline, such
	// as a bundled shop's Verified-style task) is graded by the same
	// evaluator on that definition.
	TaskID int             `json:"task_id"`
	Task   json.RawMessage `json:"task,omitempty"`
	// Environments maps each site of the task (shopping, gitlab, ...) to
	// its canonical base URLs, which the evaluator maps back to the
	// task's placeholders.
	Environments map[string][]string `json:"environments"`
	// AgentResponse is the agent's answer (stop/send_msg_to_user), in
	// Verified's structured form.
	AgentResponse string        `json:"agent_response"`
	HAR           *netroute.HAR `json:"har"`
	// HARPath, instead of HAR, is a HAR file the grader reads itself
	// (NetworkTrace.from_har), as offline re-grading does.
	HARPath string `json:"har_path,omitempty"`
}

// Grade grades one episode. The process is restarted if it died.
func (g *VerifiedGrader) Grade(ctx context.Context, req VerifiedRequest) (VerifiedResult, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return VerifiedResult{}, err
	}
	if g.cmd == nil {
		if err := g.start(); err != nil {
			return VerifiedResult{}, err
		}
	}
	if req.HARPath == "" {
		req.HAR = withEntries(req.HAR)
	}
	var res VerifiedResult
	if err := g.roundTrip(map[string]any{"op": "grade", "task_id": req.TaskID, "task": req.Task, "environments": req.Environments,
		"agent_response": req.AgentResponse, "har": req.HAR, "har_path": req.HARPath}, &res); err != nil {
		g.stop()
		return VerifiedResult{}, err
	}
	if res.Status == "" && res.Error != "" {
		return VerifiedResult{}, fmt.Errorf("WebArena-Verified could not grade task %d: %s", req.TaskID, res.Error)
	}
	if res.Status == "error" {
		return res, fmt.Errorf("WebArena-Verified could not grade task %d: %s", req.TaskID, res.Error)
	}
	return res, nil
}

// withEntries returns h, or an empty HAR for nil.
func withEntries(h *netroute.HAR) *netroute.HAR {
	if h != nil {
		return h
	}
	return &netroute.HAR{Log: netroute.HARLog{Version: "1.2", Entries: []netroute.HAREntry{}}}
}

// VerifiedEnvironments maps a task's sites to the origins serving them.
func VerifiedEnvironments(t *Task, origins map[string]string) map[string][]string {
	envs := map[string][]string{}
	for _, s := range t.Sites {
		if o := origins[s]; o != "" {
			envs[s] = []string{o}
		}
	}
	return envs
}

// limitedWriter keeps the first n bytes written.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// VerifiedCommand is the grader process's command line with python, a
// Python that has the webserv package and webarena-verified installed.
func VerifiedCommand(python string) []string {
	return []string{python, "-m", "webserv.verified", "serve"}
}

// Scores are the grading's score and each evaluator's, like
// {"verified": 0, "verified.NetworkEventEvaluator": 0, ...}.
func (r VerifiedResult) Scores() map[string]float64 {
	out := map[string]float64{"verified": r.Score}
	var evs []struct {
		Name  string  `json:"evaluator_name"`
		Score float64 `json:"score"`
	}
	if json.Unmarshal(r.Evaluators, &evs) == nil {
		for _, e := range evs {
			out["verified."+e.Name] = e.Score
		}
	}
	return out
}
