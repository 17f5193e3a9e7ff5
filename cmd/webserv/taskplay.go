package main

import (
	"context"
	"flag"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/server"
)

// taskPlay is what the commands that play a site's tasks (tasks check,
// tasks audit) share: serve's browser and hosting flags, --site,
// --parallel and -v, and a server over the sites' instances.
type taskPlay struct {
	ef       envFlags
	hf       hostingFlags
	only     *string
	parallel *int
	verbose  *bool
}

// register adds the shared flags to fs; verb is what the command does to
// a site's tasks ("check", "audit").
func (p *taskPlay) register(fs *flag.FlagSet, verb string) {
	p.ef.register(fs)
	p.ef.registerBrowsers(fs)
	p.hf.register(fs)
	p.only = fs.String("site", "", verb+" only this site's tasks")
	p.parallel = fs.Int("parallel", 4, "episodes at once")
	p.verbose = fs.Bool("v", false, "log the server's info messages too")
}

// logger is log at the level -v asks for (warnings and errors without it).
func (p *taskPlay) logger(log *zap.Logger) *zap.Logger {
	if log == nil {
		log = zap.NewNop()
	}
	if !*p.verbose {
		log = log.WithOptions(zap.IncreaseLevel(zap.WarnLevel))
	}
	return log
}

// serve starts the sites' instances and a server that plays --parallel
// episodes at once, and reads the task scripts of the sites names; stop
// ends both.
func (p *taskPlay) serve(ctx context.Context, log *zap.Logger, names []string) (srv *server.Server, scripts []server.TaskScripts, stop func(), err error) {
	st, err := startStack(ctx, log, &p.ef, &p.hf)
	if err != nil {
		return nil, nil, nil, err
	}
	n := max(1, *p.parallel)
	srv = server.New(log.Named("server"), st.browser, st.factory, server.Config{Env: p.ef.cfg, MaxEnvs: 2 * n, MaxCreating: n})
	stop = func() {
		srv.Close()
		st.close()
	}
	if scripts, err = st.factory.TaskScripts(names); err != nil {
		stop()
		return nil, nil, nil, err
	}
	return srv, scripts, stop, nil
}
