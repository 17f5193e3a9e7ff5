// Package fleet keeps a fixed number of browser processes running: the
// supervision of WebServ's Chromium fleet, apart from what runs in the
// processes. It knows nothing of pages or environments: package envcore's
// Pool keeps its Browsers with a Keeper and places environments on them,
// and package envcore/chromium starts each process.
//
// # Keeping N
//
//	k, err := fleet.Keep(ctx, log, 2, func(ctx context.Context, log *zap.Logger) (*myBrowser, error) {
//		return launchMyBrowser(ctx, log) // a Member
//	})
//	...
//	defer k.Close()
//	ms := k.Members() // in slot order; a dead one stays until replaced
//
// Keep starts n members at once (their logs carry "browser": slot); if
// any fails, it closes those that started and returns the failures, said
// once when they all failed alike (a missing user, a sandbox that cannot
// start), else per slot. Then a supervisor watches each slot: when its
// member's Closed channel closes without the Keeper being closed, that
// is a crash; the dead member is closed (to reap its processes and
// directories) and a replacement started in its slot.
//
// # Back-off
//
// The first restart of a slot is immediate; each further one in a row
// waits a second, doubling up to MaxRestartDelay. A member that ran a
// minute before dying starts the count again. A replacement that fails to
// start is logged and retried after the next wait: a Keeper never gives
// a slot up.
//
// # Watching it
//
// Replaced is closed when a replacement takes its slot (or the Keeper
// closes): wait on it, then call it again for the next. Counts are the
// crashes, restarts and failed restarts so far, which envcore's
// BrowserHealth reports. Close stops the supervisors, then closes every
// member at once.
package fleet
