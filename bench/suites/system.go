package suites

// The system suite measures site hosting as the WebServ paper's Table 2
// does: launch latency, reset latency, fork latency (N at once), bytes
// written per launch and memory per instance, for Incus copy-on-write
// clones versus a full copy of the site's state (what Docker's overlay
// copy-up does when a container touches a large file), at several state
// sizes. The site is internal/testsite with one large state file that
// every start writes 4 KiB into (as Magento touches its database). Each
// size warms the caches with Warm launches and measures the next N.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	incus "github.com/lxc/incus/v6/client"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/hosting/hostingtest"
	"github.com/webserv-rl/webserv/incusmgr"
)

// SystemResult is one backend at one state size.
type SystemResult struct {
	Backend      string    `json:"backend"` // incus-cow or full-copy
	StateBytes   int64     `json:"state_bytes"`
	LaunchMs     []float64 `json:"launch_ms"`
	ResetMs      []float64 `json:"reset_ms"`
	ForkN        int       `json:"fork_n"`
	ForkMs       float64   `json:"fork_ms"`
	WrittenBytes []int64   `json:"written_bytes"`
	MemoryBytes  []int64   `json:"memory_bytes"`
	LaunchP50    float64   `json:"launch_p50_ms"`
	LaunchP90    float64   `json:"launch_p90_ms"`
	ResetP50     float64   `json:"reset_p50_ms"`
	ResetP90     float64   `json:"reset_p90_ms"`
	WrittenP50   int64     `json:"written_p50_bytes"`
	MemoryP50    int64     `json:"memory_p50_bytes"`
}

// SystemReport is the system suite's output.
type SystemReport struct {
	Header
	Results []SystemResult `json:"results"`
}

// SystemOptions configure the system suite.
type SystemOptions struct {
	Sizes   string // "1GiB,6GiB"
	N, Warm int    // measured and warm-up launches per size (8, 2)
	ForkN   int    // instances per fork (8)
	Out     string
	Work    string // where the full-copy baseline keeps state (not a reflink filesystem)
	Pool    string // Incus storage pool
	Command string
	Smoke   bool
	Log     io.Writer
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if strings.HasSuffix(s, suffix) {
			s, mult = strings.TrimSuffix(s, suffix), m
			break
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v * mult, err
}

// System runs the system suite.
func System(ctx context.Context, o SystemOptions) (*SystemReport, error) {
	if o.Smoke {
		o.Sizes, o.N, o.Warm, o.ForkN = "4MiB", 1, 1, 2
	}
	if o.Sizes == "" {
		o.Sizes = "1GiB,6GiB"
	}
	if o.N <= 0 {
		o.N = 8
	}
	if o.Warm < 0 {
		o.Warm = 2
	}
	if o.ForkN <= 0 {
		o.ForkN = 8
	}
	if o.Pool == "" {
		o.Pool = "webserv"
	}
	sizes, n, warm, forkN, work, pool, log := o.Sizes, o.N, o.Warm, o.ForkN, o.Work, o.Pool, o.Log
	if log == nil {
		log = io.Discard
	}
	rep := &SystemReport{Header: newHeader("system", o.Command, o.Smoke)}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	bin, err := buildTestSite(work)
	if err != nil {
		return nil, err
	}
	c, err := incus.ConnectIncusUnix("", nil)
	if err != nil {
		return nil, fmt.Errorf("incus: %w (scripts/incus-setup.sh)", err)
	}
	img, err := hostingtest.SiteImage(bin)
	if err != nil {
		return nil, err
	}
	saved := filepath.Join(work, "site.tar")
	if err := tarball.WriteToFile(saved, name.MustParseReference("webserv/bench:latest"), img); err != nil {
		return nil, err
	}
	if _, err := incusmgr.ImportImage(ctx, c, saved, "webserv-bench"); err != nil {
		return nil, err
	}
	m, err := incusmgr.Connect(ctx, nil, incusmgr.Config{Pool: pool})
	if err != nil {
		return nil, err
	}
	defer m.Close(ctx)
	local, err := hosting.NewLocal(nil, filepath.Join(work, "instances"))
	if err != nil {
		return nil, err
	}
	defer local.Close(ctx)

	for _, s := range strings.Split(sizes, ",") {
		size, err := parseSize(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("size %q: %w", s, err)
		}
		label := strings.ToLower(strings.TrimSpace(s))
		incusSite := &hosting.Site{
			Name: "bench-" + label, Incus: &hosting.IncusRun{Image: "webserv-bench"}, Port: 8080,
			Ready: hosting.Probe{Path: "/ready", TimeoutMs: 600000}, Env: map[string]string{"TOUCH": "/data/big"},
			PostStart: [][]string{{"/app/testsite", "fill", "/data/big", strconv.FormatInt(size, 10)}},
		}
		data := filepath.Join(work, "data-"+label)
		if err := fillData(bin, data, size); err != nil {
			return nil, err
		}
		localSite := &hosting.Site{
			Name: "bench-" + label, Local: &hosting.LocalRun{Command: []string{bin}, DataDir: data},
			Ready: hosting.Probe{Path: "/ready"}, Env: map[string]string{"TOUCH": "{data}/big"},
		}
		for _, site := range []*hosting.Site{incusSite, localSite} {
			if err := site.Validate(); err != nil {
				return nil, err
			}
		}
		fmt.Fprintf(log, "state %s: preparing the Incus base (written once)...\n", s)
		r, err := measure(ctx, log, m, incusSite, "incus-cow", size, n, warm, forkN, func(in hosting.Instance) (int64, int64) {
			return btrfsExclusive(pool, in.ID()), incusMemory(c, in.ID())
		})
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, r)
		r, err = measure(ctx, log, local, localSite, "full-copy", size, n, warm, forkN, func(in hosting.Instance) (int64, int64) {
			return duBytes(filepath.Join(work, "instances", in.ID(), "data")), rssBytes(in)
		})
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, r)
	}
	md := systemMarkdown(rep)
	if err := write(o.Out, &rep.Header, rep, md); err != nil {
		return nil, err
	}
	return rep, plotSystem(o.Out, rep.Results)
}

// measure launches warm+n instances one after another (each stopped once
// measured, so a full copy of a large state never holds more than one
// copy), resets the last one n times, and forks forkN from a snapshot of
// it. The full copy's fork is capped at what the disk can hold; the
// result says which N ran.
func measure(ctx context.Context, log io.Writer, b hosting.Backend, site *hosting.Site, label string, size int64, n, warm, forkN int, probe func(hosting.Instance) (written, mem int64)) (SystemResult, error) {
	r := SystemResult{Backend: label, StateBytes: size}
	var last hosting.Instance
	defer func() {
		if last != nil {
			_ = last.Stop(ctx)
		}
	}()
	for i := 0; i < warm+n; i++ {
		t0 := time.Now()
		in, err := b.Start(ctx, site)
		if err != nil {
			return r, err
		}
		d := time.Since(t0)
		if i >= warm {
			r.LaunchMs = append(r.LaunchMs, ms(d))
			w, mem := probe(in)
			r.WrittenBytes = append(r.WrittenBytes, w)
			r.MemoryBytes = append(r.MemoryBytes, mem)
			fmt.Fprintf(log, "  %-9s launch %d: %7.1f ms, %d bytes written\n", label, i-warm+1, ms(d), w)
		}
		if i == warm+n-1 {
			last = in
		} else if err := in.Stop(ctx); err != nil {
			return r, err
		}
	}
	for i := 0; i < n; i++ {
		t0 := time.Now()
		if err := last.Reset(ctx); err != nil {
			return r, err
		}
		r.ResetMs = append(r.ResetMs, ms(time.Since(t0)))
	}
	r.ForkN = forkN
	if label == "full-copy" {
		// The snapshot and every fork are full copies.
		if fit := int(freeBytes(site)/size) - 3; fit < r.ForkN {
			r.ForkN = max(fit, 1)
		}
	}
	if err := last.Snapshot(ctx, "bench"); err != nil {
		return r, err
	}
	t0 := time.Now()
	forks, err := last.Fork(ctx, "bench", r.ForkN)
	if err != nil {
		return r, err
	}
	r.ForkMs = ms(time.Since(t0))
	for _, f := range forks {
		_ = f.Stop(ctx)
	}
	r.LaunchP50, r.LaunchP90 = pct(r.LaunchMs, .5), pct(r.LaunchMs, .9)
	r.ResetP50, r.ResetP90 = pct(r.ResetMs, .5), pct(r.ResetMs, .9)
	r.WrittenP50, r.MemoryP50 = pctInt(r.WrittenBytes), pctInt(r.MemoryBytes)
	fmt.Fprintf(log, "  %-9s launch p50 %.1f ms, reset p50 %.1f ms, fork %d in %.1f ms\n", label, r.LaunchP50, r.ResetP50, r.ForkN, r.ForkMs)
	return r, nil
}

// freeBytes is the free space where the local backend keeps instances.
func freeBytes(site *hosting.Site) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(site.Local.DataDir, &st); err != nil {
		return 0
	}
	return int64(st.Bavail) * st.Bsize
}

func pct(xs []float64, q float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[int(q*float64(len(s)-1))]
}

func pctInt(xs []int64) int64 {
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// buildTestSite compiles internal/testsite (static) into dir; the suite
// runs from a checkout with Go, as make bench-all does.
func buildTestSite(dir string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	out := filepath.Join(dir, "testsite")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..", "internal", "testsite")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build testsite: %v\n%s", err, b)
	}
	return out, nil
}

// fillData makes the full-copy baseline's base state once per size.
func fillData(bin, dir string, size int64) error {
	big := filepath.Join(dir, "big")
	if st, err := os.Stat(big); err == nil && st.Size() == size {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "state"), []byte("base"), 0o644); err != nil {
		return err
	}
	if b, err := exec.Command(bin, "fill", big, strconv.FormatInt(size, 10)).CombinedOutput(); err != nil {
		return fmt.Errorf("fill: %v: %s", err, b)
	}
	return nil
}

// btrfsExclusive is what a clone wrote: the bytes its subvolume does not
// share with the base snapshot.
func btrfsExclusive(pool, container string) int64 {
	p := filepath.Join("/var/lib/incus/storage-pools", pool, "containers", container)
	out, err := exec.Command("btrfs", "filesystem", "du", "-s", "--raw", p).Output()
	if err != nil {
		return -1
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) < 2 {
		return -1
	}
	v, _ := strconv.ParseInt(f[1], 10, 64)
	return v
}

func incusMemory(c incus.InstanceServer, name string) int64 {
	st, _, err := c.GetInstanceState(name)
	if err != nil {
		return -1
	}
	return st.Memory.Usage
}

func duBytes(dir string) int64 {
	out, err := exec.Command("du", "-s", "--block-size=1", dir).Output()
	if err != nil {
		return -1
	}
	v, _ := strconv.ParseInt(strings.Fields(string(out))[0], 10, 64)
	return v
}

func rssBytes(in hosting.Instance) int64 {
	p, ok := in.(interface{ Pid() int })
	if !ok {
		return -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v * 1024
		}
	}
	return -1
}

func systemMarkdown(rep *SystemReport) string {
	var md strings.Builder
	md.WriteString("| state | backend | launch p50 | launch p90 | reset p50 | reset p90 | fork N | fork total | written/launch (p50) | memory/instance (p50) |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		fmt.Fprintf(&md, "| %s | %s | %.0f ms | %.0f ms | %.0f ms | %.0f ms | %d | %.0f ms | %s | %s |\n", human(r.StateBytes), r.Backend,
			r.LaunchP50, r.LaunchP90, r.ResetP50, r.ResetP90, r.ForkN, r.ForkMs, human(r.WrittenP50), human(r.MemoryP50))
	}
	md.WriteString("\nCopy-on-write against full copy, same run:\n\n")
	var head []string
	for i := 0; i+1 < len(rep.Results); i += 2 {
		a, b := rep.Results[i], rep.Results[i+1]
		line := fmt.Sprintf("%s: launch %.1fx faster, reset %.1fx faster, %.0fx less written per launch", human(a.StateBytes),
			b.LaunchP50/a.LaunchP50, b.ResetP50/a.ResetP50, float64(b.WrittenP50)/float64(max(a.WrittenP50, 1)))
		fmt.Fprintf(&md, "- %s\n", line)
		head = append(head, line)
	}
	rep.Headline = "Incus copy-on-write vs full copy — " + strings.Join(head, "; ") + "."
	return md.String()
}

func human(b int64) string {
	switch {
	case b < 0:
		return "?"
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
