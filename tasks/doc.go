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
package tasks
