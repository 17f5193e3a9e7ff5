package hosting_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
)

func TestLocalBackendConformance(t *testing.T) {
	b, err := hosting.NewLocal(nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(t.Context())
	hostingtest.Conformance(t, b, hostingtest.LocalSite(t))
}

func TestLocalSiteThatNeverGetsReady(t *testing.T) {
	s := hostingtest.LocalSite(t)
	s.Local.Command = []string{"sh", "-c", "echo booting; sleep 30"}
	s.Ready.TimeoutMs = 500
	b, err := hosting.NewLocal(nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Start(t.Context(), s)
	if err == nil || !strings.Contains(err.Error(), "not ready") || !strings.Contains(err.Error(), "booting") {
		t.Errorf("start of a site that never answers: %v", err)
	}
}

// A port chosen for a site can be taken by another process before the site
// binds it (outgoing connections draw from the same ephemeral range). The
// site then exits; the start is tried again on another port, and the
// instance's URL and dialer follow it.
func TestLocalStartMovesOffATakenPort(t *testing.T) {
	s := hostingtest.LocalSite(t)
	mark := t.TempDir()
	// The first run reports its port and waits until the test holds it,
	// then exits as a site that cannot bind does; later runs are the site.
	s.Env = map[string]string{"MARK": mark}
	s.Local.Command = []string{"sh", "-c", `if [ ! -e "$MARK/port" ]; then echo "$PORT" > "$MARK/port.tmp"; mv "$MARK/port.tmp" "$MARK/port"; ` +
		`while [ ! -e "$MARK/held" ]; do sleep 0.02; done; echo "bind: address already in use"; exit 1; fi; exec ` + s.Local.Command[0]}
	held := make(chan net.Listener, 1)
	go func() {
		for range 500 {
			if b, err := os.ReadFile(filepath.Join(mark, "port")); err == nil {
				l, err := net.Listen("tcp", "127.0.0.1:"+strings.TrimSpace(string(b)))
				if err != nil {
					t.Errorf("hold the site's port: %v", err)
				}
				held <- l
				_ = os.WriteFile(filepath.Join(mark, "held"), nil, 0o644)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Error("the site never reported its port")
		held <- nil
	}()
	b, err := hosting.NewLocal(nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(t.Context())
	in, err := b.Start(t.Context(), s)
	if l := <-held; l != nil {
		defer l.Close()
		if err == nil && strings.HasSuffix(in.URL(), l.Addr().String()) {
			t.Errorf("instance at %s, the port another process holds", in.URL())
		}
	}
	if err != nil {
		t.Fatalf("start with its first port taken: %v", err)
	}
	d, ok := in.(interface {
		DialContext(context.Context) (net.Conn, error)
	})
	if !ok {
		t.Fatal("a local instance has no dialer")
	}
	c, err := d.DialContext(t.Context())
	if err != nil {
		t.Fatalf("dial the moved site: %v", err)
	}
	c.Close()
	resp, err := http.Get(in.URL() + "/ready")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the moved site does not answer: %v %v", resp, err)
	}
	resp.Body.Close()
}

// Commands in a local instance run in its data directory with the site's
// environment (tasks' setup and check verifiers).
func TestLocalExec(t *testing.T) {
	b, err := hosting.NewLocal(nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(t.Context())
	s := hostingtest.LocalSite(t)
	hostingtest.ExecConformance(t, b, s, s.Local.Command[0], "out.txt")
	in, err := b.Start(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	res, err := in.(hosting.Execer).Exec(t.Context(), hosting.ExecRequest{Command: []string{"sh", "-c", `cat state; echo " $DATA_DIR $SITE_URL"`}})
	if err != nil || !strings.HasPrefix(string(res.Stdout), "base /") || !strings.HasSuffix(string(res.Stdout), "/data http://testsite.webserv.test\n") {
		t.Errorf("a command's directory and environment: %q, %v", res.Stdout, err)
	}
	if _, err := in.(hosting.Execer).FetchFile(t.Context(), "../escape", t.TempDir()); err == nil {
		t.Errorf("FetchFile read outside the data directory")
	}
}

// A local instance's process killed with SIGKILL is seen dead; a reset
// brings it back.
func TestLocalInstanceReportsItsDeath(t *testing.T) {
	b, err := hosting.NewLocal(nil, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(t.Context())
	hostingtest.HealthConformance(t, b, hostingtest.LocalSite(t), func(t *testing.T, in hosting.Instance) {
		pid := in.(interface{ Pid() int }).Pid()
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
			t.Fatal(err)
		}
		// Returns once the process has exited.
		for {
			if _, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1); err != unix.EINTR {
				return
			}
		}
	})
}
