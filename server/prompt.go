package server

import "strings"

// The text a language model reads of an episode: its goal first, then the
// page. Every model-facing front end of the server (MCP, OpenEnv's
// observation text) writes it with ModelText, and the Python package's
// webserv.prompt.render writes the same text for the trainer adapters, so
// a policy reads its task the same way whichever door it came through.

// GoalHeader is the goal's part of the text: "Goal: ...\n\n" ("" when the
// episode has no goal).
func GoalHeader(goal string) string {
	goal = strings.TrimSpace(goal)
	if goal == "" {
		return ""
	}
	return "Goal: " + goal + "\n\n"
}

// ModelText is an observation as a model reads it: the goal, the last
// action's error if it failed, and the page (the accessibility tree, else
// the pruned HTML).
func ModelText(obs Observation) string {
	page := obs.AXTree
	if page == "" {
		page = obs.HTML
	}
	if obs.LastActionError != "" {
		page = "Error: " + obs.LastActionError + "\n\n" + page
	}
	return GoalHeader(obs.Goal) + page
}
