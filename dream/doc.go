// Package dream is WebServ's dream environment: an episode whose
// dynamics come from a world model instead of a browser, behind the same
// observation and action grammar (DynaWeb's imagined rollouts).
//
// A Model predicts the next state of a page from an observation and an
// action: Memory, the transition-memory model built from real recorded
// transitions (Dyna-Q's table), or Endpoint, any OpenAI-compatible chat
// endpoint answering in a documented format. Env runs a dream episode on
// a model: it parses and refuses actions as a real environment does,
// applies the model's deltas (trajectory.Apply), ends at max_dream_steps
// or the model's terminal signal, and grades with the task's grader, a
// Judge, or not at all, saying which. Evaluate scores a model on held-out
// real transitions (webserv wm-eval). Describer labels real transitions
// with a reasoning and the change in words, DynaWeb's training data
// (webserv export --describe-with). docs/dream.md has the formats.
package dream
