package catalog

import (
	"fmt"

	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/tasks"
)

// TaskDef finds a task of the catalogue's sites by id and gives its
// definition, placeholders filled in for the site's origins, and its
// grader (server.TaskDefiner: a dream grades its episodes with them).
func (c *Catalog) TaskDef(task string) (*tasks.Task, *tasks.Grader, error) {
	site := server.TaskSite(task)
	s, ok := c.sites[site]
	if !ok {
		return nil, nil, fmt.Errorf("task %s: no hosted site %q", task, site)
	}
	st, err := c.taskSet(server.MakeSpec{Site: site, Task: task})
	if err != nil {
		return nil, nil, err
	}
	if st == nil {
		return nil, nil, fmt.Errorf("site %s has no tasks", site)
	}
	if st.MiniWoB != nil {
		return nil, nil, fmt.Errorf("task %s is a MiniWoB page, graded by the page itself, which needs the episode's live page", task)
	}
	t, err := st.pick(site, task, nil)
	if err != nil {
		return nil, nil, err
	}
	if t.Eval.Verified != nil {
		return nil, nil, fmt.Errorf("task %s is graded by WebArena-Verified's evaluators, which need the episode's network trace", task)
	}
	inst, err := tasks.Instantiate(t, st.roleOrigins(s.Origin))
	if err != nil {
		return nil, nil, err
	}
	return inst, st.Grader, nil
}

var _ server.TaskDefiner = (*Catalog)(nil)
