package incusmgr

// Commands in containers (hosting.Execer) run through a helper inside the
// container rather than with their output streamed over Incus's exec
// websockets. Incus's daemon reads a command's stdout and stderr with a
// one-second poll and ends the stream as soon as the poll comes back empty
// after the command has exited; on a loaded host the command can write
// and exit between the poll's timeout and that check, and its output is
// lost while the exit code arrives (measured here: 7 of 150 runs of a
// three-line command came back with an empty stdout or stderr and exit 3
// beside two busy loops). A verifier whose verdict is lost that way is a
// wrong reward.
//
// The helper is the server's own executable, bind-mounted read-only into
// every container at helperPath, with a per-container directory of the
// host bind-mounted at ioPath. Started by Incus (no websockets), it runs
// the command with stdin from a file, its output bounded into memory and
// its process group killed at the timeout, and writes one result file
// that the manager reads on the host once the exec operation has ended:
// nothing is read while the command runs, so nothing can be cut short.
// The executable must be statically linked (CGO_ENABLED=0, as `make
// build` and `make test` build it) to run in any image. A process whose
// own executable is dynamically linked names one that is in
// Config.ExecHelper (incusmgr/internal/exechelper, built with
// CGO_ENABLED=0: what the tests do under a plain `go test`); without one,
// or with a remote Incus, commands fall back to the websocket exec.

import (
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/lxc/incus/v6/shared/api"

	"github.com/webserv-rl/webserv/hosting"
)

// helperGrace is how long past a command's timeout the manager waits for
// the helper's operation to end: the helper kills the command at the
// timeout itself, and a loaded host can take long to start and reap it.
const helperGrace = time.Minute

const (
	helperPath = "/.webserv/exec" // the executable, inside a container
	ioPath     = "/.webserv/io"   // the exchange directory, inside a container
)

// helperResult is what the helper writes for the manager.
type helperResult struct {
	Exit     int    `json:"exit"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Stdout   []byte `json:"stdout,omitempty"`
	Stderr   []byte `json:"stderr,omitempty"`
	Over     bool   `json:"over,omitempty"`
	Error    string `json:"error,omitempty"` // the command could not start
}

// init turns any executable linking this package into the helper when a
// container runs it as helperPath.
func init() {
	if len(os.Args) > 0 && os.Args[0] == helperPath {
		os.Exit(runHelper(os.Args[1:]))
	}
}

// runHelper is the helper's main: ID TIMEOUT_MS MAX_OUTPUT -- COMMAND...
// It reads ioPath/ID.in as stdin when present and writes ioPath/ID.res.
func runHelper(args []string) int {
	if len(args) < 5 || args[3] != "--" {
		fmt.Fprintln(os.Stderr, "webserv exec helper: usage: ID TIMEOUT_MS MAX_OUTPUT -- COMMAND...")
		return 2
	}
	prefix := filepath.Join(ioPath, filepath.Base(args[0]))
	ms, err1 := strconv.Atoi(args[1])
	max, err2 := strconv.Atoi(args[2])
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintln(os.Stderr, "webserv exec helper:", err)
		return 2
	}
	res := helperRun(prefix, time.Duration(ms)*time.Millisecond, max, args[4:])
	b, _ := json.Marshal(res)
	if err := os.WriteFile(prefix+".tmp", b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "webserv exec helper:", err)
		return 1
	}
	if err := os.Rename(prefix+".tmp", prefix+".res"); err != nil {
		fmt.Fprintln(os.Stderr, "webserv exec helper:", err)
		return 1
	}
	return 0
}

func helperRun(prefix string, timeout time.Duration, max int, command []string) helperResult {
	cmd := exec.Command(command[0], command[1:]...)
	if f, err := os.Open(prefix + ".in"); err == nil {
		defer f.Close()
		cmd.Stdin = f
	}
	stdout, stderr := &hosting.Bounded{Max: max}, &hosting.Bounded{Max: max}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A background process the command left holding its output open does
	// not hold the result past the command's own exit for long.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return helperResult{Exit: -1, Error: err.Error()}
	}
	timedOut := make(chan bool, 1)
	t := time.AfterFunc(timeout, func() {
		timedOut <- true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	_ = cmd.Wait()
	t.Stop()
	res := helperResult{
		Exit:   cmd.ProcessState.ExitCode(),
		Stdout: stdout.Buf.Bytes(), Stderr: stderr.Buf.Bytes(),
		Over: stdout.Over || stderr.Over,
	}
	select {
	case <-timedOut:
		res.TimedOut = true
	default:
	}
	return res
}

// helperExecutable is exe, as an absolute path, when it can serve as the
// helper (a statically linked executable file), else "" with the reason.
func helperExecutable(exe string) (string, string) {
	exe, err := filepath.Abs(exe)
	if err != nil {
		return "", err.Error()
	}
	if st, err := os.Stat(exe); err != nil {
		return "", err.Error()
	} else if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return "", exe + " is not an executable file"
	}
	f, err := elf.Open(exe)
	if err != nil {
		return "", err.Error()
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "", exe + " is dynamically linked (build it with CGO_ENABLED=0)"
		}
	}
	return exe, ""
}

// ioRoot is the host directory holding each container's exchange
// directory.
func ioRoot() string { return filepath.Join(os.TempDir(), "webserv-incus-exec") }

// ioDir is a container's exchange directory on the host.
func ioDir(container string) string { return filepath.Join(ioRoot(), container) }

// helperDevices are the devices that put the helper into a new container
// (nil without a helper). The exchange directory is made here; deleting
// the container removes it.
func (m *Manager) helperDevices(container string) (map[string]map[string]string, error) {
	if m.helper == "" {
		return nil, nil
	}
	dir := ioDir(container)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("container %s: exchange directory: %w", container, err)
	}
	// The container's root may be an unprivileged uid of the host.
	if err := os.Chmod(dir, 0o777); err != nil {
		return nil, fmt.Errorf("container %s: exchange directory: %w", container, err)
	}
	return map[string]map[string]string{
		"webserv-exec": {"type": "disk", "source": m.helper, "path": helperPath, "readonly": "true"},
		"webserv-io":   {"type": "disk", "source": dir, "path": ioPath},
	}, nil
}

// execHelper runs args in container cn through the helper (see the top of
// this file). The helper enforces r.Timeout; ctx bounds the whole.
func (m *Manager) execHelper(ctx context.Context, cn string, args []string, env map[string]string, work string, r hosting.ExecRequest) (hosting.ExecResult, error) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	prefix := filepath.Join(ioDir(cn), id)
	defer func() {
		for _, ext := range []string{".in", ".tmp", ".res"} {
			_ = os.Remove(prefix + ext)
		}
	}()
	if r.Stdin != nil {
		if err := os.WriteFile(prefix+".in", r.Stdin, 0o644); err != nil {
			return hosting.ExecResult{}, fmt.Errorf("container %s: stdin for %q: %w", cn, hosting.ExecLine(args), err)
		}
	}
	command := append([]string{helperPath, id, strconv.FormatInt(r.Timeout.Milliseconds(), 10), strconv.Itoa(r.MaxOutput), "--"}, args...)
	if err := m.runOp(ctx, cn, command, env, work); err != nil {
		return hosting.ExecResult{}, err
	}
	raw, err := os.ReadFile(prefix + ".res")
	if err != nil {
		return hosting.ExecResult{}, fmt.Errorf("run %q in container %s: the command's result is missing (%w); did the container stop?", hosting.ExecLine(args), cn, err)
	}
	var hr helperResult
	if err := json.Unmarshal(raw, &hr); err != nil {
		return hosting.ExecResult{}, fmt.Errorf("run %q in container %s: unreadable result: %w", hosting.ExecLine(args), cn, err)
	}
	switch {
	case hr.Error != "":
		return hosting.ExecResult{ExitCode: -1}, fmt.Errorf("run %q in container %s: %s", hosting.ExecLine(args), cn, hr.Error)
	case hr.TimedOut:
		return hosting.ExecResult{}, fmt.Errorf("run %q in container %s: no exit within %s", hosting.ExecLine(args), cn, r.Timeout)
	}
	res := hosting.ExecResult{Stdout: hr.Stdout, Stderr: hr.Stderr, ExitCode: hr.Exit}
	if res.Stdout == nil {
		res.Stdout = []byte{}
	}
	if res.Stderr == nil {
		res.Stderr = []byte{}
	}
	if hr.Over {
		return res, fmt.Errorf("run %q in container %s: %w (%d bytes)", hosting.ExecLine(args), cn, hosting.ErrExecOutput, r.MaxOutput)
	}
	return res, nil
}

// runOp starts command in cn with no websockets and waits for it to end.
func (m *Manager) runOp(ctx context.Context, cn string, command []string, env map[string]string, work string) error {
	op, err := m.c.ExecInstance(cn, api.InstanceExecPost{Command: command, Environment: env, Cwd: work}, nil)
	if err != nil {
		return fmt.Errorf("run %q in container %s: %w", hosting.ExecLine(command[5:]), cn, err)
	}
	if err := op.WaitContext(ctx); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("run %q in container %s: the helper did not end: %w", hosting.ExecLine(command[5:]), cn, ctx.Err())
		}
		return fmt.Errorf("run %q in container %s: %w", hosting.ExecLine(command[5:]), cn, err)
	}
	return nil
}
