// Package hosting is the server side of an environment: the website an agent
// works on, one isolated, resettable instance per environment.
//
// A Site is a definition (YAML or JSON, docs/sites.md): how to run the
// website (a local command with its own copy of a data directory, or an
// Incus image), its canonical origin, its readiness probe, its sign-in and
// its tasks. A Backend starts instances of a site; Local runs each as a
// process of this host, and package incusmgr runs each in a container cloned
// copy-on-write. An Instance is one running copy, with the URL on 127.0.0.1 the
// per-environment route sends the site's origin to, and, where the backend
// can, commands run inside it (Execer) for task setup and verifiers.
//
// Reading definitions:
//
//	sites, err := hosting.LoadSites("examples/sites") // every *.yaml, *.yml, *.json
//
// Starting and stopping an instance:
//
//	local, err := hosting.NewLocal(log, os.TempDir())
//	inst, err := local.Start(ctx, sites[0]) // ready: its probe answered
//	defer inst.Stop(ctx)
//
// The package knows nothing of browsers, WebSockets or the protocol; the
// server binds an instance to an environment (docs/sites.md).
package hosting
