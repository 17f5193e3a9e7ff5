package trajectory

import (
	"time"

	"github.com/webserv-rl/webserv/envcore"
)

// Version is the format version written in each episode line.
const Version = 1

// The kinds of line: an episode's head, its first observation, and one per
// step.
const (
	KindEpisode = "episode"
	KindReset   = "reset"
	KindStep    = "step"
)

// Observation is an observation as the protocol sends it: envcore's fields
// plus the episode's goal.
type Observation struct {
	envcore.Observation
	Goal string `json:"goal"`
}

// Review is a person's verdict on an action they were asked to approve
// (make's approve option): approved or rejected, with their comment. A
// rejected action was not run; a review that timed out is a rejection.
type Review struct {
	Verdict string `json:"verdict"` // VerdictApproved or VerdictRejected
	Comment string `json:"comment,omitempty"`
	// By says who decided: "person", or "timeout" when nobody did in time.
	By     string  `json:"by,omitempty"`
	WaitMS float64 `json:"wait_ms"`
}

// The verdicts of a Review.
const (
	VerdictApproved = "approved"
	VerdictRejected = "rejected"
)

// Line is one line of a recorded episode. Which fields are set depends on
// Kind: the episode line has the head fields (Version to Cause), the reset
// line Obs and Info, a step line Step to Review. Empty fields are left out.
type Line struct {
	Kind string    `json:"kind"`
	Time time.Time `json:"time"`

	// The episode line.
	Version  int    `json:"version,omitempty"`
	Env      string `json:"env,omitempty"`
	Episode  int    `json:"episode,omitempty"`
	Site     string `json:"site,omitempty"`
	Goal     string `json:"goal,omitempty"`
	TaskID   string `json:"task_id,omitempty"`
	StartURL string `json:"start_url,omitempty"`
	Cause    string `json:"cause,omitempty"` // make, reset, group, restore, fork
	// Seed is the reset's seed, when it was given: a re-run starts the same
	// instance with it (a MiniWoB page's).
	Seed *int64 `json:"seed,omitempty"`

	// The reset and step lines.
	Step   int          `json:"step,omitempty"`
	Action string       `json:"action,omitempty"` // the action's string form
	Obs    *Observation `json:"obs,omitempty"`
	// ObsHash is Obs's page hash (envcore.Observation.PageHash): what
	// `webserv replay --verify` checks a re-run's observation against.
	ObsHash    string   `json:"obs_hash,omitempty"`
	Reward     *float64 `json:"reward,omitempty"` // nil on a step whose grading failed (Info's eval_error says why)
	Terminated bool     `json:"terminated,omitempty"`
	Truncated  bool     `json:"truncated,omitempty"`
	// Info is the reply's info: timings (action_ms, settle_ms,
	// extract_ms), settled, settle_error, action_error, ...
	Info   map[string]any `json:"info,omitempty"`
	Review *Review        `json:"review,omitempty"`
	// Began is when a step's action began to run (after any preview or
	// review); Time is when its reply was ready. Files written before
	// Began was recorded leave it out (Start estimates it).
	Began time.Time `json:"began,omitzero"`
	// Error is the fault that ended the episode at this step: the error
	// the step answered (then there is no Obs), or why a terminating step
	// was not graded (site_down). An infrastructure fault marks the whole
	// episode as failed by the infrastructure (Episode.InfraFailure).
	Error *Failure `json:"error,omitempty"`
}

// Failure is a wire error as recorded: its code, whose fault it is
// ("client", "agent", "infrastructure") and its message.
type Failure struct {
	Code    string `json:"code"`
	Fault   string `json:"fault"`
	Message string `json:"message"`
}

// FaultInfrastructure is the fault of a failure that was not the policy's.
const FaultInfrastructure = "infrastructure"

// InfoFloat is a number from Info (0 when missing).
func (l Line) InfoFloat(key string) float64 {
	f, _ := l.Info[key].(float64)
	return f
}

// InfoString is a string from Info ("" when missing).
func (l Line) InfoString(key string) string {
	s, _ := l.Info[key].(string)
	return s
}

// Start is when the step of line l began to run its action: Began, or for
// a line written before Began was recorded, its reply time less its
// action, settle and extraction times.
func (l Line) Start() time.Time {
	if !l.Began.IsZero() {
		return l.Began
	}
	ms := l.InfoFloat("action_ms") + l.InfoFloat("settle_ms") + l.InfoFloat("extract_ms")
	return l.Time.Add(-time.Duration(ms * float64(time.Millisecond)))
}
