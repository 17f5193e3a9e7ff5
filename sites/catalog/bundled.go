package catalog

import (
	"context"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/sites/bundled"
	"github.com/webserv-rl/webserv/tasks"
)

// Bundled returns the bundled shop's sites (package bundled) and their
// native task sets by site name ("bundled-shopping", "bundled-cms"),
// graded by grader (nil: one without a judge, which the bundled tasks do
// not need), signed in by the shop's own login.
func Bundled(ctx context.Context, o bundled.Options, grader *tasks.Grader) ([]*hosting.Site, map[string]*TaskSet, error) {
	shop, err := bundled.Sites(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	if grader == nil {
		grader = &tasks.Grader{}
	}
	sets := map[string]*TaskSet{}
	for _, s := range shop.Sites {
		sets[s.Name] = &TaskSet{
			Set: shop.Tasks[s.Name], Name: "bundled-" + s.Name, Variant: "bundled",
			Roles: shop.TaskRoles, Admin: shop.Admin, EvalToken: shop.EvalToken,
			Login: bundled.Login, Grader: grader,
		}
	}
	return shop.Sites, sets, nil
}

// BundledVerified returns the bundled shop's WebArena-Verified-style task
// sets (task_set "webarena-verified", ids like verified.shopping.20)
// beside the native sets Bundled returned: the same sites, roles and
// sign-in (each task starts signed in as the native task of its id),
// graded by g from each episode's network trace.
func BundledVerified(native map[string]*TaskSet, g *tasks.VerifiedGrader) (map[string]*TaskSet, error) {
	out := map[string]*TaskSet{}
	for name, st := range native {
		set, err := bundled.VerifiedTasks(name, st.Set)
		if err != nil {
			return nil, err
		}
		v := *st
		v.Set, v.Name, v.IDPrefix, v.Verified, v.VerifiedByID = set, "webarena-verified", "verified.", g, false
		out[name] = &v
	}
	return out, nil
}
