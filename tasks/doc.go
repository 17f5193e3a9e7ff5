// Package tasks reads WebArena and WebArena-Lite task configurations and
// scores agents with WebArena's grading semantics, so results are
// comparable with published ones.
//
// This first part covers loading (with the site placeholders such as
// __SHOPPING__ replaced by the instance URLs) and the string_match and
// url_match evaluators; program_html, the fuzzy_match judge and the
// native state evaluator come with the bundled sites.
//
//	set, err := tasks.LoadWebArena("../shared/data/webarena/test.raw.json", map[string]string{"shopping": shopURL})
//	t := set.ByID[21]
//	score := tasks.StringMatch(t.Eval.ReferenceAnswers, answer, nil)
package tasks
