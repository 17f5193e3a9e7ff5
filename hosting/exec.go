package hosting

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Execer is an Instance that runs commands inside itself and hands out its
// files: a task's setup commands, `check` verifiers and `state` databases
// use it. The local backend runs a command in the instance's data
// directory with the site's environment; Incus executes it in the
// container, in the image's working directory.
type Execer interface {
	// Exec runs req.Command to completion within req.Timeout. A command
	// that runs and exits (whatever its status) is no error: its status
	// is in the result. Not starting, a timeout or more output than
	// req.MaxOutput are errors.
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	// FetchFile returns a path on this host where the instance's file p
	// can be read: the file itself (local) or a copy made in dir (Incus,
	// with its SQLite -wal file when there is one). A relative p is
	// relative to the instance's data directory (local: its copy of
	// data_dir; Incus: $DATA_DIR of the site or image, else the image's
	// working directory).
	FetchFile(ctx context.Context, p, dir string) (string, error)
}

// ExecRequest is a command to run in an instance.
type ExecRequest struct {
	// Command and its arguments; {url} is replaced by the site's origin,
	// {data} by the instance's data directory (local) and {port} by its
	// port (local).
	Command []string
	// Env is added to the site's environment.
	Env map[string]string
	// Stdin is the command's standard input.
	Stdin []byte
	// Timeout bounds the run (default 30 s).
	Timeout time.Duration
	// MaxOutput bounds stdout and stderr each (default 1 MiB).
	MaxOutput int
}

// ExecResult is how a command ended.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// ErrExecOutput is returned when a command writes more than MaxOutput.
var ErrExecOutput = errors.New("the command wrote more output than allowed")

// WithDefaults returns the request with the default bounds filled in.
func (r ExecRequest) WithDefaults() ExecRequest {
	if r.Timeout <= 0 {
		r.Timeout = 30 * time.Second
	}
	if r.MaxOutput <= 0 {
		r.MaxOutput = 1 << 20
	}
	return r
}

// Bounded is a writer that keeps at most Max bytes and records that more
// came: backends use it for a command's output.
type Bounded struct {
	Max  int
	Buf  bytes.Buffer
	Over bool
}

func (b *Bounded) Write(p []byte) (int, error) {
	if room := b.Max - b.Buf.Len(); len(p) > room {
		b.Over = true
		if room > 0 {
			b.Buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buf.Write(p)
}

// ExecLine names a command in errors: its words joined, shortened.
func ExecLine(cmd []string) string {
	s := strings.Join(cmd, " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// Exec runs the command in the instance's data directory with the site's
// environment (PORT, DATA_DIR and env), in a process group of its own
// that is killed whole on timeout. A relative program path with a slash
// is relative to the site definition, as for local.command.
func (in *localInstance) Exec(ctx context.Context, req ExecRequest) (ExecResult, error) {
	req = req.WithDefaults()
	if len(req.Command) == 0 {
		return ExecResult{}, errors.New("empty command")
	}
	port := fmt.Sprint(in.port.Load())
	repl := strings.NewReplacer("{url}", in.site.Origin, "{port}", port, "{data}", in.data)
	args := make([]string, len(req.Command))
	for i, a := range req.Command {
		args[i] = repl.Replace(a)
	}
	if strings.ContainsRune(args[0], '/') {
		args[0] = in.site.path(args[0])
	}
	ctx, cancel := context.WithTimeout(ctx, req.Timeout)
	defer cancel()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = in.data
	cmd.Env = append(os.Environ(), "PORT="+port, "DATA_DIR="+in.data, "SITE_URL="+in.site.Origin)
	for k, v := range in.site.InstanceEnv() {
		cmd.Env = append(cmd.Env, k+"="+repl.Replace(v))
	}
	for k, v := range req.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = bytes.NewReader(req.Stdin)
	stdout, stderr := &Bounded{Max: req.MaxOutput}, &Bounded{Max: req.MaxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return ExecResult{}, fmt.Errorf("run %q in instance %s: %w", ExecLine(args), in.id, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return ExecResult{}, fmt.Errorf("run %q in instance %s: no exit within %s", ExecLine(args), in.id, req.Timeout)
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left running
	res := ExecResult{Stdout: stdout.Buf.Bytes(), Stderr: stderr.Buf.Bytes(), ExitCode: cmd.ProcessState.ExitCode()}
	if stdout.Over || stderr.Over {
		return res, fmt.Errorf("run %q in instance %s: %w (%d bytes)", ExecLine(args), in.id, ErrExecOutput, req.MaxOutput)
	}
	var exit *exec.ExitError
	if werr != nil && !errors.As(werr, &exit) {
		return res, fmt.Errorf("run %q in instance %s: %w", ExecLine(args), in.id, werr)
	}
	if res.ExitCode < 0 {
		return res, fmt.Errorf("run %q in instance %s: %s", ExecLine(args), in.id, cmd.ProcessState)
	}
	return res, nil
}

// FetchFile returns the file's own path in the data directory: it is on
// this host already.
func (in *localInstance) FetchFile(ctx context.Context, p, dir string) (string, error) {
	clean := filepath.Clean(p)
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("%q: give a path inside the instance's data directory, like app.db", p)
	}
	full := filepath.Join(in.data, clean)
	if _, err := os.Stat(full); err != nil {
		return "", fmt.Errorf("instance %s: %w", in.id, err)
	}
	return full, nil
}
