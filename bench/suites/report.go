package suites

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/webserv-rl/webserv/envcore/chromium"
)

// Machine describes where a suite ran: every figure states it.
type Machine struct {
	Cores    int    `json:"cores"`
	MemoryGB string `json:"memory_gib"`
	CPU      string `json:"cpu"`
	Kernel   string `json:"kernel"`
	Chromium string `json:"chromium"`
	Go       string `json:"go"`
	Incus    string `json:"incus,omitempty"`
}

// Header is the common part of every report.
type Header struct {
	Suite    string    `json:"suite"`
	Smoke    bool      `json:"smoke"`
	Command  string    `json:"command"`
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Machine  Machine   `json:"machine"`
	Headline string    `json:"headline"`
}

func newHeader(suite, command string, smoke bool) Header {
	return Header{Suite: suite, Command: command, Smoke: smoke, Started: time.Now().UTC(), Machine: machine()}
}

func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				m.MemoryGB = fmt.Sprintf("%.1f", kb/1024/1024)
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	m.Kernel = strings.TrimSpace(run("uname", "-r"))
	m.Chromium = strings.TrimSpace(chromium.Bin(chromium.Options{}) + ": " + run(chromium.Bin(chromium.Options{}), "--version"))
	if v := strings.TrimSpace(run("incus", "version")); v != "" {
		m.Incus = strings.ReplaceAll(v, "\n", ", ")
	}
	return m
}

func run(name string, args ...string) string {
	b, err := exec.Command(name, args...).Output()
	if err != nil {
		return ""
	}
	return string(b)
}

// write saves a suite's report as JSON and Markdown (with the machine and
// command first) next to its plot.
func write(dir string, h *Header, rep any, md string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	h.Seconds = time.Since(h.Started).Seconds()
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, h.Suite+".json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# %s\n\n%s\n\n", h.Suite, h.Headline)
	fmt.Fprintf(&buf, "Machine: %d cores (%s), %s GiB, kernel %s; %s; %s", h.Machine.Cores, h.Machine.CPU, h.Machine.MemoryGB, h.Machine.Kernel, h.Machine.Chromium, h.Machine.Go)
	if h.Machine.Incus != "" {
		fmt.Fprintf(&buf, "; Incus %s", h.Machine.Incus)
	}
	fmt.Fprintf(&buf, ".\nCommand: `%s` (%s, %.0f s).\n\n", h.Command, h.Started.Format("2006-01-02"), h.Seconds)
	if h.Smoke {
		buf.WriteString("**Smoke run: a few samples to check the output, not figures to quote.**\n\n")
	}
	buf.WriteString(md)
	fmt.Fprintf(&buf, "\n![%s](%s.png)\n", h.Suite, h.Suite)
	return os.WriteFile(filepath.Join(dir, h.Suite+".md"), buf.Bytes(), 0o644)
}

// progress is a progress bar on stderr for n units of work.
func progress(out io.Writer, n int, what string) *progressbar.ProgressBar {
	if out == nil {
		out = io.Discard
	}
	return progressbar.NewOptions(n, progressbar.OptionSetWriter(out), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionSetWidth(30), progressbar.OptionOnCompletion(func() { fmt.Fprintln(out) }))
}

// Stats are the order statistics of a sample.
type Stats struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P95 float64 `json:"p95"`
	Max float64 `json:"max"`
}

func stats(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	at := func(q float64) float64 { return s[int(q*float64(len(s)-1)+0.5)] }
	return Stats{N: len(s), P50: at(.5), P90: at(.9), P95: at(.95), Max: s[len(s)-1]}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
