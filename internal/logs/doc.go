// Package logs builds the logger WebServ's commands run with: `webserv`
// (serve, mcp, explore, ...) and `webserv-bench`, so that a benchmark
// measures the server as it runs in production, logging included.
//
// The logger writes human-readable lines to stderr at a level the caller
// holds (a zap.AtomicLevel, which a --log-level flag can change after the
// logger is built), with a stack trace on errors only: zap's development
// logger adds one to every warning, a page of noise per refused request,
// and logs at debug level, which a benchmark would pay for.
//
//	level := zap.NewAtomicLevelAt(zap.InfoLevel)
//	log, err := logs.New(level)
//	if err != nil { ... }
//	defer log.Sync()
//
// The logger is passed to whatever needs it (server.New, envcore.Launch,
// ...); nothing in WebServ reads a global logger.
package logs
