package server

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ExportOptions choose what Export writes.
type ExportOptions struct {
	// Format is "transitions" (observation, action, next observation: the
	// data web world models such as DynaWeb train on) or "sft"
	// (instruction, observation, previous actions, action: NNetNav-style
	// instruction-labelled demonstrations for fine-tuning).
	Format string
	// AXTree uses the accessibility-tree text view as the observation
	// text instead of the stripped HTML.
	AXTree bool
	// MinReward keeps only episodes whose total reward is at least this
	// (sft: successful demonstrations only, with 1).
	MinReward float64
}

// TransitionRow is one line of the transitions format.
type TransitionRow struct {
	EpisodeID       string  `json:"episode_id"`
	Step            int     `json:"step"`
	Goal            string  `json:"goal"`
	URL             string  `json:"url"`
	Observation     string  `json:"observation"`
	Action          string  `json:"action"`
	ActionError     string  `json:"action_error"`
	NextURL         string  `json:"next_url"`
	NextObservation string  `json:"next_observation"`
	Reward          float64 `json:"reward"`
	Done            bool    `json:"done"`
}

// SFTRow is one line of the sft format.
type SFTRow struct {
	EpisodeID       string   `json:"episode_id"`
	Step            int      `json:"step"`
	Instruction     string   `json:"instruction"`
	URL             string   `json:"url"`
	Observation     string   `json:"observation"`
	PreviousActions []string `json:"previous_actions"`
	Action          string   `json:"action"`
	EpisodeReward   float64  `json:"episode_reward"`
}

type trajLine struct {
	Kind       string         `json:"kind"`
	Env        string         `json:"env"`
	Episode    int            `json:"episode"`
	Goal       string         `json:"goal"`
	Action     string         `json:"action"`
	Obs        map[string]any `json:"obs"`
	Reward     float64        `json:"reward"`
	Terminated bool           `json:"terminated"`
	Truncated  bool           `json:"truncated"`
}

// Export reads the recorded episodes (*.jsonl.gz) under dirs and writes
// one JSON object per line to w, in a fixed schema per format, so
// Hugging Face `datasets.load_dataset("json", ...)` loads it directly. It
// returns the rows written.
func Export(w io.Writer, dirs []string, opts ExportOptions) (int, error) {
	if opts.Format != "transitions" && opts.Format != "sft" {
		return 0, fmt.Errorf("export format %q: use transitions or sft", opts.Format)
	}
	var files []string
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() && strings.HasSuffix(p, ".jsonl.gz") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("read recordings: %w", err)
		}
	}
	sort.Strings(files)
	enc := json.NewEncoder(w)
	rows := 0
	for _, f := range files {
		lines, err := readEpisode(f)
		if err != nil {
			return rows, err
		}
		n, err := exportEpisode(enc, lines, opts)
		rows += n
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

func readEpisode(path string) ([]trajLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	sc := bufio.NewScanner(gz)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	var out []trajLine
	for sc.Scan() {
		var l trajLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", path, len(out)+1, err)
		}
		out = append(out, l)
	}
	// A recording cut short (a crash) ends with a partial gzip stream;
	// the complete lines before it still count.
	if err := sc.Err(); err != nil && err != io.ErrUnexpectedEOF && !strings.Contains(err.Error(), "unexpected EOF") {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

func exportEpisode(enc *json.Encoder, lines []trajLine, opts ExportOptions) (int, error) {
	if len(lines) < 2 || lines[0].Kind != "episode" || lines[1].Kind != "reset" {
		return 0, nil // an episode with no reset recorded
	}
	head := lines[0]
	id := fmt.Sprintf("%s/%d", head.Env, head.Episode)
	text := func(o map[string]any) string {
		key := "html"
		if opts.AXTree {
			key = "axtree"
		}
		s, _ := o[key].(string)
		return s
	}
	str := func(o map[string]any, k string) string { s, _ := o[k].(string); return s }
	total := 0.0
	for _, l := range lines[2:] {
		total += l.Reward
	}
	if total < opts.MinReward {
		return 0, nil
	}
	rows := 0
	var actions []string
	prev := lines[1].Obs
	for i, l := range lines[2:] {
		if l.Kind != "step" {
			continue
		}
		var row any
		if opts.Format == "transitions" {
			row = TransitionRow{EpisodeID: id, Step: i + 1, Goal: head.Goal, URL: str(prev, "url"), Observation: text(prev),
				Action: l.Action, ActionError: str(l.Obs, "last_action_error"), NextURL: str(l.Obs, "url"),
				NextObservation: text(l.Obs), Reward: l.Reward, Done: l.Terminated || l.Truncated}
		} else {
			if head.Goal == "" {
				return rows, nil // a demonstration needs its instruction
			}
			row = SFTRow{EpisodeID: id, Step: i + 1, Instruction: head.Goal, URL: str(prev, "url"), Observation: text(prev),
				PreviousActions: append([]string{}, actions...), Action: l.Action, EpisodeReward: total}
		}
		if err := enc.Encode(row); err != nil {
			return rows, err
		}
		rows++
		actions = append(actions, l.Action)
		prev = l.Obs
	}
	return rows, nil
}
