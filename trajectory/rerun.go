package trajectory

import (
	"context"
	"fmt"
	"strings"
)

// Player runs episodes for Rerun: a fresh environment of a recorded
// episode's site and task.
type Player interface {
	// Start makes an environment for the episode head describes (site,
	// task, start page, goal) and returns its first observation.
	Start(ctx context.Context, head Line) (*Observation, error)
	// Step runs one action string and returns the next observation.
	Step(ctx context.Context, action string) (*Observation, error)
	// Close ends the environment.
	Close() error
}

// RerunReport says whether a re-run of an episode saw what the recording
// saw, and where it first did not.
type RerunReport struct {
	Path     string `json:"path"`
	Steps    int    `json:"steps"`    // the steps run
	Diverged bool   `json:"diverged"` // some observation differed
	// Step is the first step whose observation differed (0: the first
	// observation, before any action), Action its action.
	Step   int    `json:"step"`
	Action string `json:"action,omitempty"`
	// Field is what differed (url, html, last_action_error), with the
	// first differing line of each side.
	Field    string `json:"field,omitempty"`
	Recorded string `json:"recorded,omitempty"`
	Rerun    string `json:"rerun,omitempty"`
}

func (r RerunReport) String() string {
	if !r.Diverged {
		return fmt.Sprintf("%s: %d steps re-run, every observation as recorded", r.Path, r.Steps)
	}
	where := "the first observation (before any action)"
	if r.Step > 0 {
		where = fmt.Sprintf("step %d (%s)", r.Step, r.Action)
	}
	return fmt.Sprintf("%s: the observation after %s differs in %s\n  recorded: %s\n  re-run:   %s", r.Path, where, r.Field, r.Recorded, r.Rerun)
}

// Compare reports the first part in which two observations differ: the
// URL, the stripped HTML or the last action's error, with the first line
// that differs on each side. Screenshots and timings are not compared.
func Compare(recorded, rerun *Observation) (field, a, b string, differs bool) {
	if recorded == nil || rerun == nil {
		return "", "", "", false
	}
	for _, f := range []struct{ name, a, b string }{
		{"url", recorded.URL, rerun.URL},
		{"html", recorded.HTML, rerun.HTML},
		{"last_action_error", recorded.LastActionError, rerun.LastActionError},
	} {
		if f.a != f.b {
			a, b := firstDifferentLine(f.a, f.b)
			return f.name, a, b, true
		}
	}
	return "", "", "", false
}

// compareLine is Compare of line l's observation with a re-run's, and
// then, where l carries its page hash (obs_hash), of the two page hashes:
// a difference Compare does not look at (an input's value, the focus,
// the tabs, the scroll) is field "page".
func compareLine(l Line, rerun *Observation) (field, a, b string, differs bool) {
	if field, a, b, differs = Compare(l.Obs, rerun); differs || l.ObsHash == "" || rerun == nil {
		return field, a, b, differs
	}
	if got := rerun.PageHash(); got != l.ObsHash {
		return "page", "page hash " + l.ObsHash + " (the inputs, focus, tabs or scroll differ)", "page hash " + got, true
	}
	return "", "", "", false
}

// Hashed reports whether every observation of e carries its page hash
// (obs_hash), which `webserv replay --verify` checks: recordings made
// before WebServ wrote it do not.
func (e *Episode) Hashed() bool {
	if e.Reset == nil || e.Reset.Obs == nil || e.Reset.ObsHash == "" {
		return false
	}
	for _, l := range e.Steps {
		if l.Obs != nil && l.ObsHash == "" {
			return false
		}
	}
	return true
}

// firstDifferentLine is the first line that differs on each side, cut
// to the part around the first character that differs.
func firstDifferentLine(a, b string) (string, string) {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < max(len(la), len(lb)); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			p := 0
			for p < len(x) && p < len(y) && x[p] == y[p] {
				p++
			}
			return around(x, p), around(y, p)
		}
	}
	return "", ""
}

// around is s from a little before byte p, at most 240 bytes.
func around(s string, p int) string {
	from, prefix := max(0, p-60), ""
	if from > 0 {
		prefix = "…"
	}
	to, suffix := min(len(s), from+240), ""
	if to < len(s) {
		suffix = "…"
	}
	return prefix + strings.ToValidUTF8(s[from:to], "") + suffix
}

// Rerun runs ep's actions on a fresh environment from p and compares each
// observation with the recorded one, stopping at the first that differs.
func Rerun(ctx context.Context, ep *Episode, p Player) (RerunReport, error) {
	rep := RerunReport{Path: ep.Path}
	obs, err := p.Start(ctx, ep.Head)
	if err != nil {
		return rep, fmt.Errorf("start a fresh environment of site %q task %q: %w", ep.Head.Site, ep.Head.TaskID, err)
	}
	defer p.Close()
	var head Line
	if ep.Reset != nil {
		head = *ep.Reset
	}
	if f, a, b, d := compareLine(head, obs); d {
		rep.Diverged, rep.Field, rep.Recorded, rep.Rerun = true, f, a, b
		return rep, nil
	}
	for _, l := range ep.Steps {
		if l.Review != nil && l.Review.Verdict == VerdictRejected {
			// The recorded action was not run: a person rejected it.
			rep.Steps++
			continue
		}
		obs, err := p.Step(ctx, l.Action)
		if err != nil {
			return rep, fmt.Errorf("step %d (%s): %w", l.Step, l.Action, err)
		}
		rep.Steps++
		if f, a, b, d := compareLine(l, obs); d {
			rep.Diverged, rep.Step, rep.Action, rep.Field, rep.Recorded, rep.Rerun = true, l.Step, l.Action, f, a, b
			return rep, nil
		}
	}
	return rep, nil
}
