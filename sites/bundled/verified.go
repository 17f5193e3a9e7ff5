package bundled

import (
	"github.com/webserv-rl/webserv/sites/shop"
	"github.com/webserv-rl/webserv/tasks"
)

// VerifiedTasks returns site's WebArena-Verified-style task set (graded
// by the webarena-verified package from each episode's network trace),
// each task signed in as the task of its id in native, the site's native
// set, and allowed to change what that task may (its state checks, kept
// to name the rows it may change, not to grade, and its may_change:
// nothing but the site's bookkeeping for a navigation twin), so that its
// side effects are looked for as the twin's are. A task without a twin
// names nothing: its side effects are not looked for.
func VerifiedTasks(site string, native *tasks.Set) (*tasks.Set, error) {
	raw, err := shop.VerifiedTaskFile(site)
	if err != nil {
		return nil, err
	}
	set, err := tasks.ParseVerified(raw, "bundled verified/"+site+".json")
	if err != nil {
		return nil, err
	}
	for i := range set.Tasks { // signed in as the native task is, changing what it may
		if nt := native.ByID[set.Tasks[i].ID]; nt != nil {
			set.Tasks[i].Login = nt.Login
			set.Tasks[i].Eval.State, set.Tasks[i].MayChange = nt.Eval.State, nt.MayChange
			set.Tasks[i].ScopeNamed = true
		}
	}
	return set, nil
}
