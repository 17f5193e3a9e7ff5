package catalog

import (
	"github.com/webserv-rl/webserv/attack"
	"github.com/webserv-rl/webserv/tasks"
)

// AttackedPrefix starts the ids of an attacked task set's tasks
// (attacked.shopping.3): make with such a task id, or with task_set
// "<site>-attacked", picks the set.
const AttackedPrefix = "attacked."

// Attacked is st's attacked variant (docs/attacks.md, "attacked task
// sets"): the same tasks, named <site>-attacked, each episode carrying an
// attack drawn from specs by the task and the reset's seed (a task that
// has attacks of its own keeps them). The server lists it in the tasks op,
// so any client can make its tasks.
func Attacked(st *TaskSet, site string, specs []attack.Spec) *TaskSet {
	set := &tasks.Set{Tasks: make([]tasks.Task, len(st.Set.Tasks)), ByID: map[int]*tasks.Task{}}
	for i, t := range st.Set.Tasks {
		if len(t.Attacks) == 0 {
			t.Attacks = specs
		}
		set.Tasks[i] = t
		set.ByID[t.ID] = &set.Tasks[i]
	}
	v := *st
	v.Set, v.Name, v.IDPrefix = set, site+"-attacked", AttackedPrefix
	return &v
}
