package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/hosting"
	"github.com/webserv-rl/webserv/server"
	"github.com/webserv-rl/webserv/sites/catalog"
)

// tasksCmd: webserv tasks validate|check --sites DIR [--site NAME], a task
// author's loop over the tasks: files of site definitions (docs/tasks.md).
func tasksCmd(ctx context.Context, log *zap.Logger, args []string, stdin io.Reader, stdout io.Writer) error {
	const usage = "usage: webserv tasks validate|check|audit --sites DIR [--site NAME] [flags]"
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "validate":
		return tasksValidateCmd(args[1:], stdout)
	case "check":
		return tasksCheckCmd(ctx, log, args[1:], stdout)
	case "audit":
		return tasksAuditCmd(ctx, log, args[1:], stdout)
	case "-h", "--help", "help":
		fmt.Fprintln(os.Stderr, usage+"\n\n  validate  load every task file of the sites and check it (no browser, no site started)\n  check     replay every task's oracle and solutions (reward must be 1), wrong sequence, stop(\"\") on its start state and null agents (reward 0) on fresh instances\n  audit     play the shortcuts a learning policy finds (stuffed, question, empty and overlong answers; collateral changes; a jump to the end URL): none may be paid")
		return flag.ErrHelp
	}
	return fmt.Errorf("unknown tasks command %q; %s", args[0], usage)
}

// taskSites loads the definitions in dir that have tasks, or the one
// named site.
func taskSites(dir, site string) ([]*hosting.Site, error) {
	if dir == "" {
		return nil, errors.New("give --sites DIR, the directory of site definitions (docs/sites.md)")
	}
	all, err := hosting.LoadSites(dir)
	if err != nil {
		return nil, err
	}
	var out []*hosting.Site
	var names []string
	for _, s := range all {
		if len(s.Tasks) == 0 {
			continue
		}
		names = append(names, s.Name)
		if site == "" || s.Name == site {
			out = append(out, s)
		}
	}
	switch {
	case site != "" && len(out) == 0:
		return nil, fmt.Errorf("no site %q with tasks in %s (sites with tasks: %s)", site, dir, strings.Join(names, ", "))
	case len(out) == 0:
		return nil, fmt.Errorf("no site definition in %s has tasks: (docs/tasks.md)", dir)
	}
	return out, nil
}

func tasksValidateCmd(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("tasks validate", flag.ContinueOnError)
	dir := fs.String("sites", "", "directory of site definitions (*.yaml, *.json; docs/sites.md)")
	only := fs.String("site", "", "validate only this site's tasks")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: webserv tasks validate --sites DIR [--site NAME]\n\n"+
			"Loads every task file of the site definitions in DIR that have tasks: and checks it:\n"+
			"fields, oracle and wrong actions, and (local backend) setup and check programs.")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	sites, err := taskSites(*dir, *only)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range sites {
		n, err := validateSiteTasks(s, stdout)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(stdout, "%s: %d task(s) valid\n", s.Name, n)
	}
	return errors.Join(errs...)
}

// validateSiteTasks checks a site's task files (catalog.ValidateSiteTasks)
// and writes what it read to stdout.
func validateSiteTasks(s *hosting.Site, stdout io.Writer) (int, error) {
	files, n, err := catalog.ValidateSiteTasks(s)
	for _, f := range files {
		fmt.Fprintf(stdout, "%s: %s (%s schema): %d task(s)\n", s.Name, f.Path, f.Schema, f.Count)
	}
	return n, err
}

func tasksCheckCmd(ctx context.Context, log *zap.Logger, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("tasks check", flag.ContinueOnError)
	var p taskPlay
	p.register(fs, "check")
	strict := fs.Bool("strict", false, "fail on unverified tasks too (those without an independent solution)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: webserv tasks check --sites DIR [--site NAME] [--parallel N] [flags]\n\n"+
			"Replays every task's oracle (reward must be 1), wrong sequence (reward 0), stop(\"\") on its\n"+
			"start state (reward 0), null agents (stop with the start page's title, random actions: reward 0)\n"+
			"and independent solutions (reward 1) of the site definitions in DIR that have tasks:, each on a\n"+
			"fresh instance; a grading that fails is reported as the verifier's. Exit status 1 on any\n"+
			"failure (and, with --strict, on a task without an independent solution).\n"+
			"It takes serve's browser and hosting flags (the bundled shop is never served):")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	log = p.logger(log)
	sites, err := taskSites(p.hf.opts.SitesDir, *p.only)
	if err != nil {
		return err
	}
	for _, s := range sites {
		if _, err := validateSiteTasks(s, io.Discard); err != nil {
			return err
		}
	}
	// Only the definitions' sites: the bundled shop has its own oracle test.
	p.hf.opts.NoBundled = true
	var names []string
	for _, s := range sites {
		names = append(names, s.Name)
	}
	srv, scripts, stop, err := p.serve(ctx, log, names)
	if err != nil {
		return err
	}
	defer stop()
	checks, err := srv.CheckTasks(ctx, scripts, *p.parallel)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, server.FormatTaskChecks(checks))
	failed, unverified := 0, 0
	for _, c := range checks {
		switch {
		case !c.OK():
			failed++
		case c.Unverified():
			unverified++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d task(s) failed", failed, len(checks))
	}
	if *strict && unverified > 0 {
		return fmt.Errorf("%d of %d task(s) unverified (--strict): give each an independent solution (solutions:, docs/tasks.md)", unverified, len(checks))
	}
	return nil
}
