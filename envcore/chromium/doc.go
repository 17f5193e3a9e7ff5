// Package chromium starts and ends one Chromium process for WebServ: which
// binary, its command line, the account and sandbox it runs in, the
// directories it writes to, and the DevTools pipe the server talks to it
// over (docs/envcore.md, "The browser's sandbox" and "Browser processes").
// It knows nothing of pages or environments: package envcore's Browser
// runs its environments in a Process, and its Pool keeps several running
// with package envcore/fleet.
//
// # Starting one
//
//	opts := chromium.Options{}               // Bin's choice, headless, sandbox on
//	p, err := chromium.Start(ctx, log, chromium.Bin(opts), opts)
//	...
//	rb, err := p.Connect(ctx, life, p.Pipe()) // rod's client over the pipe
//	...
//	defer p.Stop(2 * time.Second)
//
// Bin picks the binary: Options.Bin, else $WEBSERV_CHROMIUM, else Debian's
// chromium-headless-shell when installed and no window is asked for, else
// /usr/bin/chromium. Nothing is downloaded. The command line keeps
// Chromium off the network on its own account (no sync, component
// updates, phishing checks, QUIC), turns off the features WebServ runs
// without, and adds Options.Flags and $WEBSERV_CHROMIUM_FLAGS.
//
// # Account and sandbox
//
// Chromium's sandbox cannot start as root, so a server running as root
// starts Chromium as an unprivileged user (DefaultUser, or Options.User),
// with no groups and only part of the server's environment (never its
// secrets). A server that is not root runs Chromium as itself. Either way
// the sandbox is on unless Options.NoSandbox turns it off, which Start
// logs as a warning. The profile (and, as another user, HOME and TMPDIR)
// live in one directory under $TMPDIR (Process.Dir), which Stop removes;
// Start removes the directories of servers that died without stopping
// their browsers.
//
// # The DevTools pipe
//
// Chromium runs with --remote-debugging-pipe: it reads DevTools commands
// from its file descriptor 3 and writes replies and events to its 4, each
// message JSON ended by a NUL byte. No process of the browser listens on a
// port, so no other local process can attach to it. Process.Pipe is the
// server's end as rod's cdp.WebSocketable; Process.Closed is closed when
// the pipe is, which is how the browser's end is seen.
//
// # Its end
//
// The process runs in a process group of its own behind leakless (a guard
// that kills it if the server dies first). Kill sends SIGKILL to the
// group; Stop waits a grace for it to exit on its own, kills what is
// left, and removes its directories. MainPID is the browser process as
// Chromium names it (PID may be Debian's wrapper script), and StartsPages
// tells whether it still has a zygote to start renderers with: a browser
// without one answers the protocol but opens no page.
package chromium
