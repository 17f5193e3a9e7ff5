package bundled

import (
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/shop"
	"github.com/webserv-rl/webserv/tasks"
)

// VerifiedSets returns the bundled shop's WebArena-Verified-style task
// sets (task_set "webarena-verified", ids like verified.shopping.20),
// beside the native sets Sites returned (base): the same sites, roles
// and sign-in (each task starts signed in as the native task of its id), graded by g from each episode's network trace.
func VerifiedSets(base map[string]*server.SiteTasks, g *server.VerifiedGrader) (map[string]*server.SiteTasks, error) {
	out := map[string]*server.SiteTasks{}
	for name, st := range base {
		raw, err := shop.VerifiedTaskFile(name)
		if err != nil {
			return nil, err
		}
		set, err := tasks.ParseVerified(raw, "bundled verified/"+name+".json")
		if err != nil {
			return nil, err
		}
		for i := range set.Tasks { // signed in as the native task is
			if nt := st.Set.ByID[set.Tasks[i].ID]; nt != nil {
				set.Tasks[i].Login = nt.Login
			}
		}
		v := *st
		v.Set, v.Name, v.IDPrefix, v.Verified, v.VerifiedByID = set, "webarena-verified", "verified.", g, false
		out[name] = &v
	}
	return out, nil
}
