// Command hosting measures site hosting as the WebServ paper's Table 2 does:
// launch latency, reset latency, fork latency (N at once), bytes written per
// launch and memory per instance, for Incus copy-on-write clones versus a
// full copy of the site's state (what Docker's overlay copy-up does when a
// container touches a large file), at several state sizes.
//
//	go run ./bench/hosting -sizes 1GiB,6GiB          # the full run (minutes)
//	go run ./bench/hosting -smoke                    # seconds; checks the output
//
// The site is internal/testsite with one large state file that every start
// writes 4 KiB into (as Magento touches its database). Each size warms the
// caches with 2 launches and measures the next 8 (-n). Results go to
// bench/results/hosting.json and hosting.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
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

// Result is one backend at one state size.
type Result struct {
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

// Report is the whole run.
type Report struct {
	Machine map[string]string `json:"machine"`
	Command string            `json:"command"`
	Results []Result          `json:"results"`
}

func main() {
	sizes := flag.String("sizes", "1GiB,6GiB", "state sizes")
	n := flag.Int("n", 8, "launches measured per size, after -warm")
	warm := flag.Int("warm", 2, "launches that warm the caches first")
	forkN := flag.Int("fork", 8, "instances per fork")
	smoke := flag.Bool("smoke", false, "tiny run: 4MiB, 1 warm-up and 1 measured launch, fork 2")
	out := flag.String("out", "bench/results", "results directory")
	work := flag.String("work", "/var/tmp/webserv-bench", "where the full-copy baseline keeps state (an ext4 or other non-reflink filesystem)")
	pool := flag.String("pool", "webserv", "Incus storage pool")
	flag.Parse()
	if *smoke {
		*sizes, *n, *warm, *forkN = "4MiB", 1, 1, 2
	}
	if err := run(*sizes, *n, *warm, *forkN, *out, *work, *pool, strings.Join(os.Args[1:], " ")); err != nil {
		fmt.Fprintln(os.Stderr, "hosting bench:", err)
		os.Exit(1)
	}
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

func run(sizes string, n, warm, forkN int, outDir, work, pool, args string) error {
	ctx := context.Background()
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	bin := buildSite(work)
	c, err := incus.ConnectIncusUnix("", nil)
	if err != nil {
		return fmt.Errorf("incus: %w (scripts/incus-setup.sh)", err)
	}
	img, err := hostingtest.SiteImage(bin)
	if err != nil {
		return err
	}
	saved := filepath.Join(work, "site.tar")
	if err := tarball.WriteToFile(saved, name.MustParseReference("webserv/bench:latest"), img); err != nil {
		return err
	}
	if _, err := incusmgr.ImportImage(ctx, c, saved, "webserv-bench"); err != nil {
		return err
	}
	m, err := incusmgr.Connect(ctx, nil, incusmgr.Config{Pool: pool})
	if err != nil {
		return err
	}
	defer m.Close(ctx)
	local, err := hosting.NewLocal(nil, filepath.Join(work, "instances"))
	if err != nil {
		return err
	}
	defer local.Close(ctx)

	rep := Report{Machine: machine(), Command: "go run ./bench/hosting " + args}
	for _, s := range strings.Split(sizes, ",") {
		size, err := parseSize(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("size %q: %w", s, err)
		}
		label := strings.ToLower(strings.TrimSpace(s))
		incusSite := &hosting.Site{
			Name: "bench-" + label, Incus: &hosting.IncusRun{Image: "webserv-bench"}, Port: 8080,
			Ready: hosting.Probe{Path: "/ready", TimeoutMs: 600000}, Env: map[string]string{"TOUCH": "/data/big"},
			PostStart: [][]string{{"/app/testsite", "fill", "/data/big", strconv.FormatInt(size, 10)}},
		}
		data := filepath.Join(work, "data-"+label)
		if err := fillData(bin, data, size); err != nil {
			return err
		}
		localSite := &hosting.Site{
			Name: "bench-" + label, Local: &hosting.LocalRun{Command: []string{bin}, DataDir: data},
			Ready: hosting.Probe{Path: "/ready"}, Env: map[string]string{"TOUCH": "{data}/big"},
		}
		for _, site := range []*hosting.Site{incusSite, localSite} {
			if err := site.Validate(); err != nil {
				return err
			}
		}
		fmt.Printf("state %s: preparing the Incus base (written once)...\n", s)
		r, err := measure(ctx, m, incusSite, "incus-cow", size, n, warm, forkN, func(in hosting.Instance) (int64, int64) {
			return btrfsExclusive(pool, in.ID()), incusMemory(c, in.ID())
		})
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
		r, err = measure(ctx, local, localSite, "full-copy", size, n, warm, forkN, func(in hosting.Instance) (int64, int64) {
			return duBytes(filepath.Join(work, "instances", in.ID(), "data")), rssBytes(in)
		})
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, r)
	}
	return write(outDir, rep)
}

// measure launches warm+n instances one after another (each stopped once
// measured, so a full copy of a large state never holds more than one
// copy), resets the last one n times, and forks forkN from a snapshot of
// it. The full copy's fork is capped at what the disk can hold; the
// result says which N ran.
func measure(ctx context.Context, b hosting.Backend, site *hosting.Site, label string, size int64, n, warm, forkN int, probe func(hosting.Instance) (written, mem int64)) (Result, error) {
	r := Result{Backend: label, StateBytes: size}
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
			fmt.Printf("  %-9s launch %d: %7.1f ms, %d bytes written\n", label, i-warm+1, ms(d), w)
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
	fmt.Printf("  %-9s launch p50 %.1f ms, reset p50 %.1f ms, fork %d in %.1f ms\n", label, r.LaunchP50, r.ResetP50, r.ForkN, r.ForkMs)
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

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

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

func buildSite(dir string) string {
	_, file, _, _ := runtime.Caller(0)
	out := filepath.Join(dir, "testsite")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..", "internal", "testsite")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build testsite: %v\n%s", err, b)
		os.Exit(1)
	}
	return out
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

func machine() map[string]string {
	out := map[string]string{"cpus": strconv.Itoa(runtime.NumCPU()), "go": runtime.Version()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		out["memory"] = strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
	}
	if b, err := exec.Command("incus", "--version").Output(); err == nil {
		out["incus"] = strings.TrimSpace(string(b))
	}
	if b, err := exec.Command("uname", "-r").Output(); err == nil {
		out["kernel"] = strings.TrimSpace(string(b))
	}
	return out
}

func write(dir string, rep Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "hosting.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# Hosting: Incus copy-on-write vs full copy\n\n`%s` on %s CPUs, %s, incus %s, kernel %s.\n\n",
		rep.Command, rep.Machine["cpus"], rep.Machine["memory"], rep.Machine["incus"], rep.Machine["kernel"])
	md.WriteString("| state | backend | launch p50 | launch p90 | reset p50 | fork N | fork total | written/launch (p50) | memory/instance (p50) |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		fmt.Fprintf(&md, "| %s | %s | %.0f ms | %.0f ms | %.0f ms | %d | %.0f ms | %s | %s |\n", human(r.StateBytes), r.Backend,
			r.LaunchP50, r.LaunchP90, r.ResetP50, r.ForkN, r.ForkMs, human(r.WrittenP50), human(r.MemoryP50))
	}
	md.WriteString("\nSpeed-up of copy-on-write over full copy, same run:\n\n")
	for i := 0; i+1 < len(rep.Results); i += 2 {
		a, b := rep.Results[i], rep.Results[i+1]
		fmt.Fprintf(&md, "- %s: launch %.1fx faster, %.0fx less written per launch\n", human(a.StateBytes),
			b.LaunchP50/a.LaunchP50, float64(b.WrittenP50)/float64(max(a.WrittenP50, 1)))
	}
	fmt.Print("\n", md.String())
	return os.WriteFile(filepath.Join(dir, "hosting.md"), []byte(md.String()), 0o644)
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
