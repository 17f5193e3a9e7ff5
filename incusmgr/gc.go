package incusmgr

// Leaked instances: every instance is labelled with the server process
// that made it, and GC deletes those whose process is gone.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	incus "github.com/lxc/incus/v6/client"
	"github.com/lxc/incus/v6/shared/api"
	"github.com/webserv-rl/webserv/internal/procstat"
)

// Owner identifies this server process in instance labels.
func Owner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d:%d", host, os.Getpid(), processStart(os.Getpid()))
}

// processStart is the start time of pid in clock ticks since boot (0 if
// unknown), so a reused pid is not taken for the same process.
func processStart(pid int) uint64 {
	p, err := procstat.ReadProcess(pid)
	if err != nil {
		return 0
	}
	return p.Start
}

// ownerAlive reports whether the owner label names a live process of
// this host. Owners on other hosts count as alive: they are not ours.
func ownerAlive(owner string) bool {
	parts := strings.Split(owner, ":")
	if len(parts) != 3 {
		return false
	}
	host, _ := os.Hostname()
	if parts[0] != host {
		return true
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil {
		return false
	}
	start, _ := strconv.ParseUint(parts[2], 10, 64)
	return processStart(pid) == start && start != 0
}

// GC deletes instances labelled by WebServ whose server is gone. With all,
// it deletes every WebServ instance, bases included. It returns their names.
func GC(ctx context.Context, c incus.InstanceServer, all bool) ([]string, error) {
	list, err := c.GetInstances(api.InstanceTypeContainer)
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	var removed []string
	var errs []error
	for _, in := range list {
		role := in.Config[labelRole]
		if role == "" {
			continue
		}
		if !all && (role != "instance" || ownerAlive(in.Config[labelOwner])) {
			continue
		}
		if err := deleteInstance(ctx, c, in.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, in.Name)
	}
	return removed, errors.Join(errs...)
}

func deleteInstance(ctx context.Context, c incus.InstanceServer, name string) error {
	defer os.RemoveAll(ioDir(name))
	if op, err := c.UpdateInstanceState(name, api.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, ""); err == nil {
		_ = op.WaitContext(ctx)
	}
	op, err := c.DeleteInstance(name)
	if err == nil {
		err = op.WaitContext(ctx)
	}
	if err != nil {
		// Another process (a second gc, a server's own cleanup) may be
		// deleting it at the same moment: gone is gone.
		if api.StatusErrorCheck(err, 404) {
			return nil
		}
		for i := 0; i < 100 && ctx.Err() == nil; i++ {
			if _, _, gerr := c.GetInstance(name); api.StatusErrorCheck(gerr, 404) {
				return nil
			}
			time.Sleep(100 * time.Millisecond)
		}
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}
