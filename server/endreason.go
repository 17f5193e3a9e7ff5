package server

// How an episode ends: info.end_reason on the step that ended it. One
// table says, for each way, the step's two flags, its reward and whose
// doing it is; docs/protocol.md's table is this one (a test keeps them
// equal). terminated means the task itself ended (its grade is final, a
// value-bootstrapping trainer may take it as the true end); every other
// end is a truncation, whose grade says how far the episode got.

// EndReason is the value of info.end_reason.
type EndReason string

// The ways an episode ends.
const (
	EndAgent          EndReason = "agent"           // stop, send_msg_to_user or report_infeasible
	EndModel          EndReason = "model"           // a dream's world model said the task ended
	EndMaxSteps       EndReason = "max_steps"       // make's max_steps
	EndEpisodeTimeout EndReason = "episode_timeout" // make's episode_timeout_ms
	EndStepTimeout    EndReason = "step_timeout"    // a step past make's step_timeout_ms
	EndUnseen         EndReason = "unseen"          // a dream's memory model never saw the action
	EndMaxDreamSteps  EndReason = "max_dream_steps" // a dream reached its length
	EndResourceLimit  EndReason = "resource_limit"  // the policy's pages went past a limit (an error reply)
	EndMaxTurns       EndReason = "max_turns"       // a client's rollout ran out of turns (no reply of the server)
)

// endInfo is one row of the table.
type endInfo struct {
	reason     EndReason
	terminated bool
	reward     string
	fault      Fault
	doc        string
}

// endTable is every way an episode ends.
var endTable = []endInfo{
	{EndAgent, true, "the change in the grade (the grade itself when graded only at the end)", FaultAgent, "the agent ended the task: `stop`, `send_msg_to_user`, `report_infeasible`"},
	{EndModel, true, "as `agent`, from the dream's grader or judge", FaultAgent, "a dream's world model said the task ended"},
	{EndMaxSteps, false, "the change in the grade (0 when the task is graded only at the end)", FaultAgent, "the episode reached make's `max_steps`"},
	{EndEpisodeTimeout, false, "as `max_steps`", FaultAgent, "the episode ran past make's `episode_timeout_ms`"},
	{EndStepTimeout, false, "as `max_steps`", FaultAgent, "a step ran past make's `step_timeout_ms`"},
	{EndUnseen, false, "0 (or the judge's assessment)", FaultInfrastructure, "a dream's memory model never saw this action in this state: the model ran out, the task did not end"},
	{EndMaxDreamSteps, false, "0 (or the judge's assessment)", FaultAgent, "a dream reached `max_dream_steps`"},
	{EndResourceLimit, false, "none: the step fails with error `resource_limit`; the rewards so far stand", FaultAgent, "the pages the policy opened went past an environment limit; the rollout runner and adapters record `truncated` with this reason"},
	{EndMaxTurns, false, "the rewards so far", FaultAgent, "a rollout (`webserv.rollout.run`, the adapters) used its `max_turns`; said by the client, not the server"},
}

// endFlags are the terminated and truncated flags of an end reason ("":
// the episode goes on).
func endFlags(r EndReason) (terminated, truncated bool) {
	for _, e := range endTable {
		if e.reason == r {
			return e.terminated, !e.terminated
		}
	}
	return false, false
}
