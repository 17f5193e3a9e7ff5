package incusmgr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	incus "github.com/lxc/incus/v6/client"
	"github.com/lxc/incus/v6/shared/api"

	"github.com/webserv-rl/webserv/hosting"
)

var _ hosting.Execer = (*Instance)(nil)

// dirs are the directories commands and files of a site's containers are
// relative to: the image's working directory (WORKDIR, default /), where
// commands run, so a relative program path resolves as the site's own
// command does; and $DATA_DIR (the site's env: or the image's), else the
// working directory, for FetchFile's relative paths.
func (m *Manager) dirs(site *hosting.Site) (work, data string) {
	work = "/"
	env := map[string]string{}
	if alias, _, err := m.c.GetImageAlias(site.Incus.Image); err == nil {
		if img, _, err := m.c.GetImage(alias.Target); err == nil {
			if wd := img.Properties[propWorkdir]; wd != "" {
				work = wd
			}
			_ = json.Unmarshal([]byte(img.Properties[propEnv]), &env)
		}
	}
	for k, v := range site.Env {
		env[k] = v
	}
	data = work
	if d := env["DATA_DIR"]; path.IsAbs(d) {
		data = d
	}
	return work, data
}

// Exec runs a command in the instance's current container (its
// environment.* keys apply, as for the site itself), in the image's
// working directory. A command that has not exited within the timeout is
// an error, and is killed (with its process group) when the container
// has the exec helper (exechelper.go); without it the output is streamed
// over Incus's exec websockets, which can lose it on a loaded host.
func (in *Instance) Exec(ctx context.Context, req hosting.ExecRequest) (hosting.ExecResult, error) {
	r := req.WithDefaults()
	if len(r.Command) == 0 {
		return hosting.ExecResult{}, fmt.Errorf("empty command")
	}
	args := make([]string, len(r.Command))
	for i, a := range r.Command {
		args[i] = strings.ReplaceAll(a, "{url}", in.site.Origin)
	}
	in.mu.Lock()
	cn, helped := in.c.name, in.c.helped
	in.mu.Unlock()
	env := map[string]string{"SITE_URL": in.site.Origin}
	for k, v := range r.Env {
		env[k] = v
	}
	work, _ := in.m.dirs(in.site)
	if helped {
		// The helper kills the command at r.Timeout; the grace covers a
		// loaded host starting the helper and ending the operation.
		ctx, cancel := context.WithTimeout(ctx, r.Timeout+helperGrace)
		defer cancel()
		return in.m.execHelper(ctx, cn, args, env, work, r)
	}
	ctx, cancel := context.WithTimeout(ctx, r.Timeout)
	defer cancel()
	stdout, stderr := &hosting.Bounded{Max: r.MaxOutput}, &hosting.Bounded{Max: r.MaxOutput}
	done := make(chan bool)
	op, err := in.m.c.ExecInstance(cn, api.InstanceExecPost{Command: args, WaitForWS: true, Environment: env, Cwd: work},
		&incus.InstanceExecArgs{Stdin: bytes.NewReader(r.Stdin), Stdout: stdout, Stderr: stderr, DataDone: done})
	if err != nil {
		return hosting.ExecResult{}, fmt.Errorf("run %q in container %s: %w", hosting.ExecLine(args), cn, err)
	}
	if err := op.WaitContext(ctx); err != nil {
		_ = op.Cancel()
		if ctx.Err() != nil {
			return hosting.ExecResult{}, fmt.Errorf("run %q in container %s: no exit within %s", hosting.ExecLine(args), cn, r.Timeout)
		}
		return hosting.ExecResult{}, fmt.Errorf("run %q in container %s: %w", hosting.ExecLine(args), cn, err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return hosting.ExecResult{}, fmt.Errorf("run %q in container %s: its output did not end within %s", hosting.ExecLine(args), cn, r.Timeout)
	}
	res := hosting.ExecResult{Stdout: stdout.Buf.Bytes(), Stderr: stderr.Buf.Bytes(), ExitCode: -1}
	if code, ok := op.Get().Metadata["return"].(float64); ok {
		res.ExitCode = int(code)
	}
	if stdout.Over || stderr.Over {
		return res, fmt.Errorf("run %q in container %s: %w (%d bytes)", hosting.ExecLine(args), cn, hosting.ErrExecOutput, r.MaxOutput)
	}
	return res, nil
}

// FetchFile copies a file (and its SQLite -wal file, when there is one)
// out of the current container into dir. A relative path is relative to
// the site's $DATA_DIR (else the image's working directory).
func (in *Instance) FetchFile(ctx context.Context, p, dir string) (string, error) {
	if !path.IsAbs(p) {
		_, data := in.m.dirs(in.site)
		p = path.Join(data, p)
	}
	in.mu.Lock()
	cn := in.c.name
	in.mu.Unlock()
	dst := filepath.Join(dir, path.Base(p))
	if err := in.pull(ctx, cn, p, dst); err != nil {
		return "", err
	}
	// A database's -wal file holds its latest writes: leaving it out on
	// any error but "there is none" would grade a state without them.
	rc, resp, err := in.getFile(ctx, cn, p+"-wal")
	switch {
	case api.StatusErrorCheck(err, http.StatusNotFound):
	case err != nil:
		return "", fmt.Errorf("container %s: read %s-wal: %w", cn, p, err)
	default:
		rc.Close()
		if resp != nil && resp.Type == "file" {
			if err := in.pull(ctx, cn, p+"-wal", dst+"-wal"); err != nil {
				return "", err
			}
		}
	}
	return dst, nil
}

// fileTries bounds getFile's attempts.
const fileTries = 4

// getFile reads a file of container cn through incusd, which serves it
// from a helper process (forkfile) in the container that it starts on
// demand and that exits when idle. On a loaded host that helper can exit
// between incusd starting it and connecting to it ("dial unix
// .../forkfile.sock: connect: no such file or directory", a 500): a read
// changes nothing, so it is tried again, a few times, before the error is
// returned. A 4xx (no such file, not allowed) is returned at once.
func (in *Instance) getFile(ctx context.Context, cn, p string) (io.ReadCloser, *incus.InstanceFileResponse, error) {
	var err error
	for try := range fileTries {
		var rc io.ReadCloser
		var resp *incus.InstanceFileResponse
		rc, resp, err = in.m.c.GetInstanceFile(cn, p)
		if err == nil {
			return rc, resp, nil
		}
		if code, ok := api.StatusErrorMatch(err); ok && code < http.StatusInternalServerError {
			return nil, nil, err
		}
		if try == fileTries-1 {
			break
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("%w (then: %w)", err, ctx.Err())
		case <-time.After(time.Duration(try+1) * 100 * time.Millisecond):
		}
	}
	return nil, nil, fmt.Errorf("%w (incusd's file server failed %d times)", err, fileTries)
}

func (in *Instance) pull(ctx context.Context, cn, p, dst string) error {
	rc, resp, err := in.getFile(ctx, cn, p)
	if err != nil {
		return fmt.Errorf("container %s: read %s: %w", cn, p, err)
	}
	defer rc.Close()
	if resp != nil && resp.Type != "" && resp.Type != "file" {
		return fmt.Errorf("container %s: %s is a %s, not a file", cn, p, resp.Type)
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Close()
		return fmt.Errorf("container %s: copy %s: %w", cn, p, err)
	}
	return f.Close()
}
