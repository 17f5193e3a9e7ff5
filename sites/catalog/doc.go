// Package catalog is the site catalogue of a WebServ server: which sites
// exist, which task sets each has, and how an environment's instance of
// one starts. A Catalog is the server.Factory that package server asks
// for the site side of every environment; the server keeps the browser
// side, the wire and the sessions.
//
// # Sites
//
// A site is a hosting.Site definition: a name, a canonical origin (the
// URL the agent sees, whatever port its instance really has), a backend
// that runs it (local processes or an Incus container) and a readiness
// probe. Four sources give a catalogue its sites:
//
//   - Site definitions of one's own, YAML or JSON files in a directory
//     (Options.SitesDir; docs/sites.md). A definition's tasks: files are
//     its site's task set (SiteTaskSet): ids <site>.<task_id>, its
//     placeholders at the site's origin, setup commands and check
//     programs run in the environment's own instance.
//   - The bundled shop (package bundled): two sites, shopping (the
//     storefront) and cms (its admin panel), one shop program per
//     instance, with native task sets graded in Go and, where a
//     WebArena-Verified grader runs, Verified-style sets beside them
//     (Bundled, BundledVerified).
//   - WebArena's images: a role (shopping, shopping_admin, gitlab, reddit)
//     whose image has been imported into Incus under Options.WebArena's
//     prefix becomes a site at the origin the image has baked in, and
//     replaces the bundled site of that role. WebArena's or
//     WebArena-Lite's task file gives each role the tasks of that role
//     alone; tasks that need several roles whose images are all here are
//     the task set of the joined site name ("gitlab+reddit"), served as
//     one environment with an instance of each site. With a Verified
//     grader, WebArena-Verified's tasks and its Hard subset are further
//     task sets (task_set "webarena-verified", ids verified.<site>.<id>).
//   - MiniWoB++'s task pages (package miniwob), where the miniwob Python
//     package is installed: the static site miniwob, whose task set
//     (TaskSet.MiniWoB) starts each episode in the page with the reset's
//     seed and takes the page's own reward and done flag.
//
// Open builds all of this from Options (webserv serve's hosting flags) and
// opens the backends; Close frees them:
//
//	c, err := catalog.Open(ctx, log, catalog.Options{SitesDir: "examples/sites", NoBundled: true})
//	defer c.Close()
//	s := server.New(log, browser, c, server.Config{})
//
// New makes a catalogue of given sites on backends its caller owns, and
// SetTasks and AddTaskSet give them task sets, as the tests do.
//
// A task author's loop (webserv tasks validate|check) starts here too:
// ValidateSiteTasks checks a definition's task files without starting
// anything, and TaskScripts lists each task's oracle and wrong sequences
// for the server's CheckTasks to replay on fresh instances.
//
// # Episodes
//
// make starts an instance of the site on its backend (several at once for
// a joined name), routed at the site's origin in the environment's browser
// context only. Each episode resets the instance to the site's base state
// (a fresh one is used as is) and picks its task from the task set: by id,
// else by seed, else at random. The task's placeholders are filled with
// the canonical origins, its setup commands run in the instance, and the
// episode starts signed in where the task says so (cookies, a storage
// state, or the site's own login). A TaskSet grades the episode: in Go
// (tasks.Grader) after the agent stops, or after every step where the
// task allows it, or by WebArena-Verified's evaluators from the episode's
// network trace (tasks.VerifiedGrader). Instances snapshot, restore and
// fork through their backend (server.Snapshotter).
//
// Errors a request caused (an unknown site, task or task set, a start URL
// off the site) are marked server.BadRequest; sites this server cannot run
// (no Incus, no image, no grader) server.Unconfigured; anything else is
// the infrastructure's.
package catalog
