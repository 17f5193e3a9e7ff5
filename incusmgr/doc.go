// Package incusmgr runs site instances as Incus system containers, cloned
// copy-on-write from a per-site base snapshot. It implements
// hosting.Backend.
//
// For each site the manager prepares a base once: a container from the
// site's image, started, its post-start commands run, stopped and
// snapshotted. Every instance is a copy of that snapshot on a btrfs (or ZFS)
// storage pool, so a launch writes only the blocks it changes, and starts in
// a fraction of a second whatever the size of the site's state.
//
// Containers get no network device. Each instance has a loopback listener
// on the host (its URL); connections to it are dialed from inside the
// container's network namespace to the site's port, so the browser reaches
// the site on 127.0.0.1 and containers reach nothing.
//
//	m, err := incusmgr.Connect(ctx, logger, incusmgr.Config{Pool: "webserv", Warm: 2})
//	in, err := m.Start(ctx, site)          // a ready clone; in.URL() is http://127.0.0.1:PORT
//	err = in.Snapshot(ctx, "checkout")     // freeze, snapshot, thaw
//	forks, err := in.Fork(ctx, "checkout", 8)
//	err = in.Reset(ctx)                    // a fresh clone behind the same URL
//
// Every container is labelled (user.webserv.role, .site, .owner), so a
// restarted server removes what an earlier one leaked (GC, `webserv gc`).
// ImportImage turns a `docker save` tarball or an OCI layout into an Incus
// image, so existing Docker images run unmodified.
package incusmgr
