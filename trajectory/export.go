package trajectory

import (
	"encoding/json"
	"fmt"
	"io"
)

// ExportOptions choose what Export writes.
type ExportOptions struct {
	// Format is "transitions" (observation, action, next observation and
	// the delta between them: the data web world models such as DynaWeb
	// train on) or "sft"
	// (instruction, observation, previous actions, action: NNetNav-style
	// instruction-labelled demonstrations for fine-tuning).
	Format string
	// AXTree uses the accessibility-tree text view as the observation
	// text instead of the stripped HTML.
	AXTree bool
	// MinReward keeps only episodes whose total reward is at least this
	// (sft: successful demonstrations only, with 1).
	MinReward float64
	// Describe, when set (transitions only), describes each transition in
	// words, and the rows are DescribedRows: DynaWeb's training layout.
	// It is given the row and its observation in the row's view
	// (ExportView). A transition it could not describe is written with
	// the reason in the ChangeDescription's Error; an error it returns
	// stops Export (a cancelled context, say).
	Describe func(row TransitionRow, obs Observation) (ChangeDescription, error)
	// IncludeFailed keeps the episodes the infrastructure ended (a site
	// instance that died, a browser that crashed: Episode.InfraFailure),
	// which are left out by default: their last steps show error pages
	// and their rewards were never given.
	IncludeFailed bool
}

// ExportResult is what Export wrote and what it left out.
type ExportResult struct {
	Rows int
	// Failed counts the episodes left out because the infrastructure
	// ended them (none with IncludeFailed).
	Failed int
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
	// Delta is the exact change from the observation to the next, both
	// in the row's view (ExportView): Apply(ExportView(o_t), Delta) equals
	// ExportView(o_{t+1}).
	Delta Delta `json:"delta"`
}

// ChangeDescription is a transition's change in words, with the
// reasoning that leads to it (export --describe-with): what DynaWeb's
// world model learns to answer from the goal, the observation and the
// action. docs/dream.md has the prompt that asks for it.
type ChangeDescription struct {
	Reasoning   string `json:"reasoning"`
	Description string `json:"description"`
	// Error says why the transition has no description (the endpoint
	// failed, after its retries); "" when it has one.
	Error string `json:"describe_error"`
}

// DescribedRow is a transitions row with its change described:
// DynaWeb's training layout, the world model's input (goal, observation,
// action) and its output (reasoning, and the change Δ: the exact delta
// and its description), every column in every row.
type DescribedRow struct {
	TransitionRow
	ChangeDescription
}

// ExportView is observation o as a transitions row's delta sees it: the
// row's text view only (the accessibility tree with axtree, else the
// HTML; the other is left out) and no screenshots, so the delta labels
// the change a world model trained on that view predicts.
func ExportView(o Observation, axtree bool) Observation {
	if axtree {
		o.HTML = ""
	} else {
		o.AXTree = ""
	}
	o.Screenshot, o.ScreenshotSOM, o.SOMLabels, o.ScreenshotScale = nil, nil, nil, 0
	return o
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

// Export reads the recorded episodes under dirs and writes one JSON object
// per line to w, in a fixed schema per format, so Hugging Face
// `datasets.load_dataset("json", ...)` loads it directly. It returns the
// rows written.
func Export(w io.Writer, dirs []string, opts ExportOptions) (int, error) {
	res, err := ExportCounted(w, dirs, opts)
	return res.Rows, err
}

// ExportCounted is Export that also says how many episodes it left out
// because the infrastructure ended them.
func ExportCounted(w io.Writer, dirs []string, opts ExportOptions) (ExportResult, error) {
	var res ExportResult
	if opts.Format != "transitions" && opts.Format != "sft" {
		return res, fmt.Errorf("export format %q: use transitions or sft", opts.Format)
	}
	if opts.Describe != nil && opts.Format != "transitions" {
		return res, fmt.Errorf("export format %s has no transitions to describe: describing is for --format transitions", opts.Format)
	}
	files, err := Find(dirs...)
	if err != nil {
		return res, err
	}
	enc := json.NewEncoder(w)
	for _, f := range files {
		ep, err := Read(f)
		if err != nil {
			return res, err
		}
		if !opts.IncludeFailed && ep.InfraFailure() != nil {
			res.Failed++
			continue
		}
		n, err := exportEpisode(enc, ep, opts)
		res.Rows += n
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

func exportEpisode(enc *json.Encoder, ep *Episode, opts ExportOptions) (int, error) {
	if ep.Reset == nil || ep.Reset.Obs == nil {
		return 0, nil // an episode with no reset recorded
	}
	total := ep.Reward()
	if total < opts.MinReward {
		return 0, nil
	}
	if opts.Format == "sft" && ep.Head.Goal == "" {
		return 0, nil // a demonstration needs its instruction
	}
	id := fmt.Sprintf("%s/%d", ep.Head.Env, ep.Head.Episode)
	text := func(o *Observation) string {
		if opts.AXTree {
			return o.AXTree
		}
		return o.HTML
	}
	rows := 0
	var actions []string
	prev := ep.Reset.Obs
	for i, l := range ep.Steps {
		if l.Obs == nil && l.Error != nil {
			break // the step answered an error: no transition, and the episode ends there
		}
		next := l.Obs
		if next == nil {
			next = &Observation{}
		}
		reward := 0.0
		if l.Reward != nil {
			reward = *l.Reward
		}
		var row any
		if opts.Format == "transitions" {
			from := ExportView(*prev, opts.AXTree)
			tr := TransitionRow{EpisodeID: id, Step: i + 1, Goal: ep.Head.Goal, URL: prev.URL, Observation: text(prev),
				Action: l.Action, ActionError: next.LastActionError, NextURL: next.URL,
				NextObservation: text(next), Reward: reward, Done: l.Terminated || l.Truncated,
				Delta: Diff(from, ExportView(*next, opts.AXTree))}
			row = tr
			if opts.Describe != nil {
				d, err := opts.Describe(tr, from)
				if err != nil {
					return rows, fmt.Errorf("describing %s step %d: %w", id, i+1, err)
				}
				row = DescribedRow{TransitionRow: tr, ChangeDescription: d}
			}
		} else {
			row = SFTRow{EpisodeID: id, Step: i + 1, Instruction: ep.Head.Goal, URL: prev.URL, Observation: text(prev),
				PreviousActions: append([]string{}, actions...), Action: l.Action, EpisodeReward: total}
		}
		if err := enc.Encode(row); err != nil {
			return rows, err
		}
		rows++
		actions = append(actions, l.Action)
		prev = next
	}
	return rows, nil
}
