package incusmgr

// Bases: one stopped container per site definition, snapshotted after
// its post-start commands ran; every instance is a copy-on-write clone of
// that snapshot.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	incus "github.com/lxc/incus/v6/client"
	"github.com/lxc/incus/v6/shared/api"
	"github.com/webserv-rl/webserv/hosting"
	"go.uber.org/zap"
)

// siteHash identifies a base: the site's definition and the image its alias
// points at now (fingerprint), so re-importing an image under the same
// alias prepares a new base.
func siteHash(site *hosting.Site, fingerprint string) string {
	b, _ := json.Marshal(struct {
		I *hosting.IncusRun
		P int
		E map[string]string
		S [][]string
		L hosting.Limits
		O string
		F string
	}{site.Incus, site.Port, site.Env, site.PostStart, site.Limits, site.Origin, fingerprint})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// base returns the copy source of site's base snapshot, preparing it once:
// a container from the site's image, started, post-start commands run,
// stopped, and snapshotted. A base whose definition changed is rebuilt.
func (m *Manager) base(ctx context.Context, site *hosting.Site) (string, error) {
	m.mu.Lock()
	if src, ok := m.bases[site.Name]; ok {
		m.mu.Unlock()
		return src, nil
	}
	lock := m.baseLocks[site.Name]
	if lock == nil {
		lock = &sync.Mutex{}
		m.baseLocks[site.Name] = lock
	}
	m.mu.Unlock()
	lock.Lock()
	defer lock.Unlock()
	m.mu.Lock()
	src, ok := m.bases[site.Name]
	m.mu.Unlock()
	if ok {
		return src, nil
	}

	var fingerprint string
	if a, _, err := m.c.GetImageAlias(site.Incus.Image); err == nil {
		fingerprint = a.Target
	}
	hash := siteHash(site, fingerprint)
	// The name carries the definition's hash: two servers (or tests) with
	// different definitions of one site name each keep their own base,
	// instead of rebuilding, and so deleting, the other's under it.
	name := "webserv-base-" + site.Name + "-" + hash[:12]
	src = name + "/" + baseSnap
	unlock, err := lockBase(ctx, name)
	if err != nil {
		return "", err
	}
	defer unlock()
	if in, _, err := m.c.GetInstance(name); err == nil {
		if in.Config[labelHash] == hash {
			if _, _, err := m.c.GetInstanceSnapshot(name, baseSnap); err == nil {
				m.mu.Lock()
				m.bases[site.Name] = src
				m.mu.Unlock()
				return src, nil
			}
		}
		if err := m.discardBase(ctx, name); err != nil {
			return "", err
		}
	}
	t0 := time.Now()
	if err := m.prepareBase(ctx, site, name, hash); err != nil {
		_ = deleteInstance(context.Background(), m.c, name)
		return "", fmt.Errorf("prepare the base of site %s: %w", site.Name, err)
	}
	m.log.Info("base snapshot ready", zap.String("site", site.Name), zap.Duration("took", time.Since(t0)))
	m.mu.Lock()
	m.bases[site.Name] = src
	m.mu.Unlock()
	return src, nil
}

// discardBase removes the unusable base name (its snapshot missing, or its
// definition changed). A base Incus cannot delete (seen after incusd died
// mid-snapshot: the pool keeps a snapshot its database has lost, and
// refuses to delete the volume) is renamed aside, so the site gets a new
// base under its name instead of failing every start.
func (m *Manager) discardBase(ctx context.Context, name string) error {
	err := deleteInstance(ctx, m.c, name)
	if err == nil {
		return nil
	}
	aside := "webserv-stale-" + name[len(name)-12:] + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	op, rerr := m.c.RenameInstance(name, api.InstancePost{Name: aside})
	if rerr == nil {
		rerr = op.WaitContext(ctx)
	}
	if rerr != nil {
		return fmt.Errorf("replace the unusable base %s: %w; renaming it aside failed too: %w (delete it with `incus delete -f %s`)", name, err, rerr, name)
	}
	m.log.Warn("an unusable base could not be deleted and was renamed aside; `webserv gc --all` or `incus delete -f` removes it once its pool allows",
		zap.String("base", name), zap.String("renamed", aside), zap.Error(err))
	return nil
}

func (m *Manager) prepareBase(ctx context.Context, site *hosting.Site, name, hash string) error {
	cfg, err := m.containerConfig(site)
	if err != nil {
		return err
	}
	cfg[labelRole], cfg[labelSite], cfg[labelHash] = "base", site.Name, hash
	req := api.InstancesPost{
		Name: name, Type: api.InstanceTypeContainer, Start: true,
		Source:      api.InstanceSource{Type: "image", Alias: site.Incus.Image},
		InstancePut: api.InstancePut{Profiles: []string{}, Config: cfg, Devices: m.rootDevice()},
	}
	op, err := m.c.CreateInstance(req)
	if err != nil {
		return fmt.Errorf("create from image %q: %w (import it with `webserv image import`)", site.Incus.Image, err)
	}
	if err := op.WaitContext(ctx); err != nil {
		return fmt.Errorf("create from image %q: %w", site.Incus.Image, err)
	}
	err = m.ready(ctx, site, &container{name: name}, func(url string) error {
		for _, cmd := range site.PostStart {
			if err := m.exec(ctx, name, cmd, site.Origin); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if op, err := m.c.UpdateInstanceState(name, api.InstanceStatePut{Action: "stop", Timeout: 30, Force: true}, ""); err != nil {
		return fmt.Errorf("stop base: %w", err)
	} else if err := op.WaitContext(ctx); err != nil {
		return fmt.Errorf("stop base: %w", err)
	}
	op, err = m.c.CreateInstanceSnapshot(name, api.InstanceSnapshotsPost{Name: baseSnap})
	if err != nil {
		return fmt.Errorf("snapshot base: %w", err)
	}
	return op.WaitContext(ctx)
}

// containerConfig is the Incus config of a site's containers: the init
// command (the image's, from `webserv image import`, or the site's), its
// environment, working directory and limits.
func (m *Manager) containerConfig(site *hosting.Site) (map[string]string, error) {
	props := map[string]string{}
	if alias, _, err := m.c.GetImageAlias(site.Incus.Image); err == nil {
		if img, _, err := m.c.GetImage(alias.Target); err == nil {
			props = img.Properties
		}
	} else {
		return nil, fmt.Errorf("no incus image %q: import it with `webserv image import --alias %s IMAGE.tar`", site.Incus.Image, site.Incus.Image)
	}
	command := site.Incus.Command
	if len(command) == 0 && props[propCmd] != "" {
		_ = json.Unmarshal([]byte(props[propCmd]), &command)
	}
	cfg := map[string]string{}
	var raw []string
	if len(command) > 0 {
		raw = append(raw, "lxc.init.cmd = "+quoteInit(command))
	}
	if wd := props[propWorkdir]; wd != "" {
		raw = append(raw, "lxc.init.cwd = "+wd)
	}
	if len(raw) > 0 {
		cfg["raw.lxc"] = strings.Join(raw, "\n")
	}
	env := map[string]string{}
	if props[propEnv] != "" {
		_ = json.Unmarshal([]byte(props[propEnv]), &env)
	}
	for k, v := range site.Env {
		env[k] = v
	}
	for k, v := range env {
		cfg["environment."+k] = v
	}
	if site.Limits.Memory != "" {
		cfg["limits.memory"] = site.Limits.Memory
	}
	if site.Limits.CPU != "" {
		cfg["limits.cpu"] = site.Limits.CPU
	}
	if site.Limits.Processes > 0 {
		cfg["limits.processes"] = strconv.Itoa(site.Limits.Processes)
	}
	return cfg, nil
}

// quoteInit writes a command for lxc.init.cmd, which splits on spaces and
// honours double quotes.
func quoteInit(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"") {
			a = `"` + strings.ReplaceAll(a, `"`, `\"`) + `"`
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

func (m *Manager) rootDevice() map[string]map[string]string {
	return map[string]map[string]string{"root": {"type": "disk", "path": "/", "pool": m.cfg.Pool}}
}

// exec runs a post-start command in the container, {url} replaced by url.
func (m *Manager) exec(ctx context.Context, name string, cmd []string, url string) error {
	args := make([]string, len(cmd))
	for i, a := range cmd {
		args[i] = strings.ReplaceAll(a, "{url}", url)
	}
	var out strings.Builder
	done := make(chan bool)
	op, err := m.c.ExecInstance(name, api.InstanceExecPost{Command: args, WaitForWS: true}, &incus.InstanceExecArgs{Stdout: &out, Stderr: &out, DataDone: done})
	if err != nil {
		return fmt.Errorf("post-start %q: %w", strings.Join(args, " "), err)
	}
	if err := op.WaitContext(ctx); err != nil {
		return fmt.Errorf("post-start %q: %w", strings.Join(args, " "), err)
	}
	<-done
	if code, ok := op.Get().Metadata["return"].(float64); ok && code != 0 {
		return fmt.Errorf("post-start %q exited %d: %s", strings.Join(args, " "), int(code), out.String())
	}
	return nil
}
