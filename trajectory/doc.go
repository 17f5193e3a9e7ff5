// Package trajectory is the one home of WebServ's recorded-episode format:
// the typed Line every recorded line is, a Writer that appends lines to a
// gzipped JSON Lines file, and a Reader side (Read, Find, Summarize) that
// the replayer, `webserv export` and re-runs use.
//
// An episode is one file, <env>/<NNNN>.jsonl.gz, one JSON object per line:
//
//	{"kind": "episode", "version": 1, "env", "episode", "site", "goal", "task_id", "start_url", "cause", "time"}
//	{"kind": "reset", "obs": {...}, "info": {...}, "time"}
//	{"kind": "step", "step": 1, "action": "click(\"buy\")", "obs": {...}, "reward", "terminated", "truncated", "info": {...}, "review", "time"}
//
// Writing:
//
//	w, err := trajectory.Create(path)
//	err = w.Write(trajectory.Line{Kind: trajectory.KindEpisode, Env: "env-1", Episode: 1, Goal: "..."})
//	err = w.Close()
//
// Reading:
//
//	paths, err := trajectory.Find(dir)
//	ep, err := trajectory.Read(paths[0])
//	fmt.Println(ep.Head.Goal, len(ep.Steps), ep.Reward())
//
// Transitions: Diff(o_t, o_{t+1}) is the exact, element-level change
// between two observations (a Delta, keyed by semantic id) and Apply
// applies one, with Apply(a, Diff(a, b)) equal to b for any pair; Export's
// transitions rows carry it.
//
// Every line is flushed as it is written, so a crash loses at most the last
// one, and Read accepts a file cut short (Episode.Partial says so).
// docs/trajectories.md describes the fields.
package trajectory
