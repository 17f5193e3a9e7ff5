// Package tasks reads task files and grades episodes: the bundled sites'
// task sets and WebArena / WebArena-Lite configurations, with WebArena's
// grading semantics so results are comparable with published ones.
//
// Loading fills the site placeholders (__SHOPPING__ and so on) and checks
// every task, naming the file, task and field of what is wrong:
//
//	set, err := tasks.LoadWebArena("test.raw.json", map[string]string{"shopping": shopURL})
//	t := set.ByID[21]
//
// A Grader scores a finished episode from the agent's answer and the
// browser page (any Page: the server passes the environment's active tab):
// string_match (exact, must_include with |OR| and the one-character token
// rule, fuzzy_match through a Judge such as NewOpenAIJudge), url_match,
// program_html (with the five func: helpers run as Go code), state
// (read-only SQL on the bundled shop's database, or on a SQLite file of
// the instance) and check (a verifier program run in the instance, for a
// site definition's own tasks: LoadSiteTasks, check.go). Scores multiply.
//
//	g := &tasks.Grader{Judge: tasks.NewOpenAIJudge("http://127.0.0.1:8000/v1", "model", "")}
//	res, err := g.Grade(ctx, t, page, answer, map[string]tasks.Site{"shopping": {BaseURL: shopURL}})
//
// A grading that cannot be done returns an error, never a silent 0.
//
// # WebArena-Verified
//
// WebArena-Verified's tasks (LoadVerified, ParseVerified) are graded by
// the webarena-verified Python package's own evaluators, not re-written
// in Go: a VerifiedGrader runs that package in one process beside the
// server (python -m webserv.verified serve) and speaks JSON Lines with it,
// one VerifiedRequest (the task, the agent's answer, the episode's network
// trace as a netroute.HAR) per grading:
//
//	g, err := tasks.NewVerifiedGrader(ctx, log, tasks.VerifiedCommand(".venv/bin/python"))
//	res, err := g.Grade(ctx, tasks.VerifiedRequest{TaskID: 21, Environments: envs, AgentResponse: answer, HAR: har})
//
// A graded episode records a VerifiedGrading, all that grading it again
// needs. Offline, ExportHAR writes recorded episodes in the package's
// output layout (network.har, agent_response.json, episode.json) and
// Regrade grades those directories again, for comparison with the rewards
// given online (webserv export --format har, webserv regrade).
package tasks
