package dream

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/webserv-rl/webserv/trajectory"
)

// Memory is the transition-memory world model, Dyna-Q's table: for an
// (observation, action) pair it has seen in real transitions it answers
// the recorded next state, and for any other pair it ends the dream
// (Prediction.Unseen). It needs no endpoint, is exact on what it saw, and
// is the baseline every learned world model must beat.
//
// Built from recorded episodes (trajectory files or directories), its
// table is keyed by the whole observation, less what only reports the
// step that led to it (last_action, last_action_error, dialogs,
// blocked_tabs) and the goal, and it answers the recorded next
// observation whole. Built from transitions files (`webserv export
// --format transitions`), whose rows carry one text view and the delta in
// that view, it is keyed by the URL and that view's text and answers the
// row's delta; its View is then that of the export (html, or axtree).
type Memory struct {
	view  string
	table map[string]memEntry
	// starts are the recorded first observations, by task id.
	starts map[string]trajectory.Observation
	// rewards are the real rewards of the recorded episodes the agent
	// ended, by their path (goal, start state, actions): what a dream
	// that follows one step for step recalls.
	rewards map[string]recorded
	// Seen counts the transitions loaded, Conflicts those that disagreed
	// with an earlier one for the same pair (the first is kept).
	Seen, Conflicts int
}

// recorded is a path's real reward; ambiguous when two recordings of
// the path disagree (the site was not deterministic), which recalls none.
type recorded struct {
	reward    float64
	ambiguous bool
}

type memEntry struct {
	next  *trajectory.Observation
	delta trajectory.Delta
}

// MemoryOptions say how a memory model reads its sources.
type MemoryOptions struct {
	// AXTree: transitions files were exported with --axtree (their
	// observations are accessibility-tree text). Without transitions
	// files it keeps dreams in the accessibility-tree view too.
	AXTree bool
	// TextView keys the table by the URL and one text view (the HTML, or
	// the accessibility tree with AXTree) even when built from episodes
	// only: what a transitions row has (wm-eval).
	TextView bool
}

// LoadMemory builds a memory model from paths: directories of recorded
// episodes, episode files (*.jsonl.gz), and transitions files (any other
// file: JSON Lines of `webserv export --format transitions`).
func LoadMemory(paths []string, opts MemoryOptions) (*Memory, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("the memory world model needs at least one source: recorded episodes (a directory or *.jsonl.gz) or a transitions file (webserv export --format transitions)")
	}
	m := NewMemory("")
	var episodes []string
	var transitions []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("memory model source: %w", err)
		}
		switch {
		case st.IsDir():
			files, err := trajectory.Find(p)
			if err != nil {
				return nil, err
			}
			if len(files) == 0 {
				return nil, fmt.Errorf("memory model source %s: no recorded episodes (*%s) in it", p, trajectory.Ext)
			}
			episodes = append(episodes, files...)
		case strings.HasSuffix(p, trajectory.Ext):
			episodes = append(episodes, p)
		default:
			transitions = append(transitions, p)
		}
	}
	if len(transitions) > 0 || opts.AXTree || opts.TextView {
		m.view = ViewHTML
		if opts.AXTree {
			m.view = ViewAXTree
		}
	}
	for _, f := range episodes {
		ep, err := trajectory.Read(f)
		if err != nil {
			return nil, err
		}
		m.AddEpisode(ep)
	}
	for _, f := range transitions {
		if err := m.addTransitions(f); err != nil {
			return nil, err
		}
	}
	if m.Seen == 0 {
		return nil, fmt.Errorf("memory model: its sources (%s) hold no transitions", strings.Join(paths, ", "))
	}
	return m, nil
}

// NewMemory is an empty memory model in view (ViewWhole, ViewHTML or
// ViewAXTree); AddEpisode fills it.
func NewMemory(view string) *Memory {
	return &Memory{view: view, table: map[string]memEntry{}, starts: map[string]trajectory.Observation{}, rewards: map[string]recorded{}}
}

// AddEpisode adds a recorded episode's transitions.
func (m *Memory) AddEpisode(ep *trajectory.Episode) {
	if ep.Reset == nil || ep.Reset.Obs == nil {
		return
	}
	if id := ep.Head.TaskID; id != "" {
		if _, ok := m.starts[id]; !ok {
			m.starts[id] = *ep.Reset.Obs
		}
	}
	start := inView(*ep.Reset.Obs, m.view)
	prev := start
	actions := make([]string, 0, len(ep.Steps))
	for i, l := range ep.Steps {
		actions = append(actions, CanonicalAction(l.Action))
		if last := i == len(ep.Steps)-1; last && l.Terminated && !l.Truncated && l.Reward != nil && !ep.Partial {
			m.remember(m.path(ep.Reset.Obs.Goal, start, actions), *l.Reward)
		}
		if l.Obs == nil {
			return
		}
		next := inView(*l.Obs, m.view)
		m.add(m.key(prev, CanonicalAction(l.Action)), memEntry{next: &next, delta: trajectory.Diff(prev, next)})
		prev = next
	}
}

// path keys a recorded episode, or a dream, by its goal, its start state
// (in the model's view) and its actions, canonical.
func (m *Memory) path(goal string, start trajectory.Observation, actions []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q\x00%s", goal, m.key(inView(start, m.view), ""))
	for _, a := range actions {
		fmt.Fprintf(h, "\x00%q", a)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func (m *Memory) remember(path string, reward float64) {
	if r, ok := m.rewards[path]; ok {
		r.ambiguous = r.ambiguous || r.reward != reward
		m.rewards[path] = r
		return
	}
	m.rewards[path] = recorded{reward: reward}
}

// Recall is the real reward of the recorded episode a dream followed step
// for step: the same goal, start state and actions, ending where the
// recording's agent ended it (with the same answer). False when the
// memory has none, or recordings of that path disagree.
func (m *Memory) Recall(goal string, start trajectory.Observation, actions []string) (float64, bool) {
	r, ok := m.rewards[m.path(goal, start, actions)]
	if !ok || r.ambiguous {
		return 0, false
	}
	return r.reward, true
}

func (m *Memory) addTransitions(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("memory model source: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	line := 0
	for sc.Scan() {
		line++
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var row trajectory.TransitionRow
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			return fmt.Errorf("%s line %d: not a transitions row (webserv export --format transitions writes them): %w", path, line, err)
		}
		m.add(textKey(row.URL, row.Observation, CanonicalAction(row.Action)), memEntry{delta: row.Delta})
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func (m *Memory) add(k string, e memEntry) {
	m.Seen++
	if old, ok := m.table[k]; ok {
		if !sameEntry(old, e) {
			m.Conflicts++
		}
		return
	}
	m.table[k] = e
}

func sameEntry(a, b memEntry) bool {
	ja, _ := json.Marshal(a.delta)
	jb, _ := json.Marshal(b.delta)
	return string(ja) == string(jb)
}

// key is the table key of observation o (in the model's view) and a
// canonical action.
func (m *Memory) key(o trajectory.Observation, action string) string {
	switch m.view {
	case ViewHTML:
		return textKey(o.URL, o.HTML, action)
	case ViewAXTree:
		return textKey(o.URL, o.AXTree, action)
	}
	return "state\x00" + stateHash(o) + "\x00" + action
}

func textKey(url, text, action string) string {
	h := sha256.Sum256([]byte(text))
	return "text\x00" + url + "\x00" + fmt.Sprintf("%x", h[:]) + "\x00" + action
}

// stateHash identifies an observation's state: everything but the goal
// and the fields that report the step that led to it.
func stateHash(o trajectory.Observation) string {
	o.Goal, o.LastAction, o.LastActionError, o.Dialogs, o.BlockedTabs = "", "", "", nil, 0
	o.Screenshot, o.ScreenshotSOM, o.SOMLabels, o.ScreenshotScale = nil, nil, nil, 0
	b, _ := json.Marshal(o)
	h := sha256.Sum256(b)
	return fmt.Sprintf("%x", h[:])
}

// Name is "memory".
func (m *Memory) Name() string { return "memory" }

// View is the model's view.
func (m *Memory) View() string { return m.view }

// Len is the number of distinct (observation, action) pairs it holds.
func (m *Memory) Len() int { return len(m.table) }

// Start is the recorded first observation of task id, if the memory's
// episodes have one.
func (m *Memory) Start(taskID string) (trajectory.Observation, bool) {
	o, ok := m.starts[taskID]
	return o, ok
}

// Predict answers the recorded next state, or Unseen.
func (m *Memory) Predict(_ context.Context, q Query) (Prediction, error) {
	e, ok := m.table[m.key(inView(q.Obs, m.view), q.Action)]
	if !ok {
		return Prediction{Terminal: true, Unseen: true}, nil
	}
	p := Prediction{Delta: e.delta}
	if e.next != nil {
		n := *e.next
		p.Next = &n
	}
	return p, nil
}
