package server

import (
	"github.com/webserv-rl/webserv/attack"
	"github.com/webserv-rl/webserv/dream"
	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/tasks"
	"github.com/webserv-rl/webserv/trajectory"
)

// StepInfo is the info of every step reply, and of every reply that
// begins an episode (make, reset, restore, each environment of a fork, a
// group member's): the contract of what a step reports. Its fields go on
// the wire under their json names (the WebSocket's MessagePack encoder
// reads the json tags, encodeReply), and the Python client reads them as
// a dict: a name, a type or whether a key is present is part of the
// protocol (TestStepInfoWire holds it).
//
// A key is present as said of its field; "omitted when empty" keys are
// absent rather than zero. The embedded groups (*Settling, *Stopped,
// *TaskOf, *Graded, *dream.Info) put their keys at the top level of info,
// all of a group present or none.
type StepInfo struct {
	// Step is the number of steps taken in the episode, this one
	// included (0 on an episode's first observation).
	Step int `json:"step"`
	// ElapsedS is the seconds since the episode began.
	ElapsedS float64 `json:"elapsed_s"`
	// Site is the environment's site ("dream" for a dream).
	Site string `json:"site"`
	// Cause is how the episode began (CauseMake, CauseReset, ...): on the
	// replies that begin one.
	Cause string `json:"cause,omitempty"`
	// Restart is how the page of an episode that runs in its page
	// (MiniWoB) was started: RestartInPlace or RestartReload, on the
	// replies that begin one; omitted for other episodes.
	Restart Restart `json:"restart,omitempty"`

	// Settling is how a real environment's action ran and settled: absent
	// on a dream.
	*Settling
	// ObsStats are the observation's extraction sizes and time: a real
	// environment's.
	ObsStats *envcore.ObservationStats `json:"obs_stats,omitempty"`
	// Refused are the requests the environment's network policy refused
	// since the last reply.
	Refused []Refusal `json:"refused,omitempty"`

	// ActionError is why the action failed in the page (also the
	// observation's last_action_error), and ActionErrorCode which of the
	// closed set of failures it was (envcore's codes, and rejected,
	// refused); a dream's predicted failure has no code.
	ActionError     string `json:"action_error,omitempty"`
	ActionErrorCode string `json:"action_error_code,omitempty"`
	// Stopped is the agent's ending of the episode: on the step that
	// stopped or reported the task infeasible.
	*Stopped

	// TaskID is the episode's task, when it has one.
	TaskID string `json:"task_id,omitempty"`
	// TaskOf is where a real environment's task comes from: with TaskID.
	*TaskOf

	// EndReason is why this step ended the episode (EndReason's names,
	// endreason.go): on the step that ended it.
	EndReason string `json:"end_reason,omitempty"`
	// EvalError is why the step was not graded: its reward is then null.
	EvalError string `json:"eval_error,omitempty"`
	// Graded is the task's grade, on a step that was graded.
	*Graded
	// SideEffects are the changes the episode made to its site's state
	// that its task did not ask for (sideeffects.go): on the step that
	// ended a task's episode on a site that declares its state; absent
	// when there were none. SideEffectsNote says how many, what they did
	// to the reward (side_effects: fail scores the episode 0), or, on a
	// task's ending step, why they were not looked for ("side effects not
	// looked for: ...": they are unknown, not none).
	SideEffects     []tasks.RowChange `json:"side_effects,omitempty"`
	SideEffectsNote string            `json:"side_effects_note,omitempty"`
	// Attack is the outcome of the environment's attack (make's attack):
	// on the step that ended its episode.
	Attack *attack.Outcome `json:"attack,omitempty"`
	// MiniWoB is a MiniWoB page's own account of the step.
	MiniWoB *tasks.MiniWoBReport `json:"miniwob,omitempty"`

	// Grader is how the task graded the agent's answer (string_match), on
	// a graded step of a task that asks for one: the semantics (typed.TYPE,
	// or WebArena's webarena.must_include ...), whether an answer listing
	// candidates can be paid, and why a typed answer earned 0.
	Grader *GraderInfo `json:"grader,omitempty"`

	// Review is a person's verdict on the action (make's approve).
	Review *trajectory.Review `json:"review,omitempty"`
	// TargetBox is where the action's target was on the page, when the
	// environment outlines or records it (a step of one action: a
	// multi-action step has none).
	TargetBox *envcore.Box `json:"target_box,omitempty"`
	// SiteDown says the environment's site instance died: the episode is
	// not graded; reset.
	SiteDown string `json:"site_down,omitempty"`
	// RecordError says the episode's recording failed or stopped.
	RecordError string `json:"record_error,omitempty"`
	// GroupRole is a group member's part: leader or member.
	GroupRole string `json:"group_role,omitempty"`
	// Preparing says a group member's start state is still being
	// prepared on its worker.
	Preparing bool `json:"preparing,omitempty"`
	// Fork is how a restore's or a fork's environment was made and
	// whether its first observation is verified to be its parent's at the
	// snapshot: on those replies alone.
	Fork *ForkInfo `json:"fork,omitempty"`

	// Info is a dream's own report: absent on a real environment.
	*dream.Info
}

// Settling is how a real environment's action ran and settled
// (envcore.StepInfo, docs/envcore.md "Settling").
type Settling struct {
	ActionMs  float64 `json:"action_ms"`
	SettleMs  float64 `json:"settle_ms"`
	ExtractMs float64 `json:"extract_ms"`
	Settled   bool    `json:"settled"`
	Attempts  int     `json:"attempts"`
	// SettleReason is why the step returned: drained, idle or timeout.
	SettleReason string `json:"settle_reason,omitempty"`
	// SettleError says a timeout in one sentence.
	SettleError string `json:"settle_error,omitempty"`
	// Pending names what the action caused that was still running at a
	// timeout.
	Pending []string `json:"pending,omitempty"`
}

// ForkInfo is info.fork (forkexact.go, docs/protocol.md "snapshot,
// restore, fork"): how the environment was made from the snapshot and
// whether it continues its parent exactly.
type ForkInfo struct {
	// How is HowRebuild (the captured browser state rebuilt on the
	// snapshot's site) or HowReplay (the episode's actions since its start
	// played again, for a page that keeps its episode in JavaScript).
	How string `json:"how"`
	// Exact says the first observation's page hash
	// (envcore.Observation.PageHash) equals the parent's at the snapshot.
	// False is a warning: the environment is not its parent's state, and
	// Note says how it differs.
	Exact bool `json:"exact"`
	// Replayed is the number of actions replayed (HowReplay).
	Replayed int `json:"replayed,omitempty"`
	// Note says why a fork is not exact.
	Note string `json:"note,omitempty"`
}

// Stopped is the agent's ending of an episode.
type Stopped struct {
	Answer     string `json:"answer"`
	Infeasible bool   `json:"infeasible"`
}

// TaskOf is the task set and variant a real environment's task comes
// from.
type TaskOf struct {
	TaskSet string `json:"task_set"`
	Variant string `json:"variant"`
}

// Graded is a task's grade of a step: the reward is its change since the
// last grade, so that an episode's rewards add up to its final grade.
type Graded struct {
	Grade float64 `json:"grade"`
	// Scores are each evaluator's score (the grade is their product).
	Scores map[string]float64 `json:"scores,omitempty"`
	// Grading is what re-grades the episode offline (WebArena-Verified's
	// request).
	Grading *tasks.VerifiedGrading `json:"grading,omitempty"`
}

// GraderInfo is info.grader: what a reward for an answer pays for
// (docs/tasks.md "What a reward pays for").
type GraderInfo struct {
	// Semantics is typed.number, typed.currency, typed.date, typed.string
	// or typed.string_list (the answer's values of the type against the
	// reference's), or WebArena's webarena.exact_match,
	// webarena.must_include or webarena.fuzzy_match.
	Semantics string `json:"semantics"`
	// HackableByListing says an answer listing many candidates can earn
	// the reward (WebArena's must_include and fuzzy_match); a trainer
	// should not learn from such rewards without strict_answers.
	HackableByListing bool `json:"hackable_by_listing"`
	// Note says why a typed answer earned 0 ("the answer holds 2
	// different price values ...").
	Note string `json:"note,omitempty"`
}

// graderInfo is info.grader of a grading (nil when it graded no answer).
func graderInfo(a *tasks.AnswerGrade) *GraderInfo {
	if a == nil {
		return nil
	}
	return &GraderInfo{Semantics: a.Semantics, HackableByListing: a.HackableByListing, Note: a.Note}
}

// Refusal is a request the environment's network policy refused, with
// its time as RFC 3339 text so that info stays plain data in any client.
type Refusal struct {
	URL        string `json:"url"`
	Method     string `json:"method"`
	Reason     string `json:"reason"`
	Navigation bool   `json:"navigation"`
	Time       string `json:"time"`
}

// GradeOf is the step's grade, if it was graded.
func (i *StepInfo) GradeOf() (float64, bool) {
	if i.Graded == nil {
		return 0, false
	}
	return i.Grade, true
}

// rewardOf is r as a step reply's reward.
func rewardOf(r float64) *float64 { return &r }

// Restart is how a reset started the page of an episode that its page runs
// (Episode.Start: MiniWoB's tasks), in info.restart.
type Restart string

const (
	// RestartInPlace: the next episode was started in the page the last
	// one left, as a fresh load would start it (Episode.Restart).
	RestartInPlace Restart = "in_place"
	// RestartReload: the page was loaded afresh, in a fresh browser
	// context (the task cannot restart in place, or the page was not as
	// its last start left it).
	RestartReload Restart = "reload"
)
