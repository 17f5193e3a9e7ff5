package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/server"
)

// tasksAuditCmd: webserv tasks audit [--sites DIR [--site NAME]], the
// attacks a learning policy finds, played against every task
// (server.AuditTasks; docs/tasks.md, "What a reward pays for").
func tasksAuditCmd(ctx context.Context, log *zap.Logger, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("tasks audit", flag.ContinueOnError)
	var p taskPlay
	p.register(fs, "audit")
	perKind := fs.Int("per-kind", 0, "audit only the first N tasks of each kind (site, category, grading, answer type, sign-in); 0: every task")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: webserv tasks audit [--sites DIR] [--site NAME] [--per-kind N] [--parallel N] [flags]\n\n"+
			"Plays the shortcuts a learning policy finds against every task, each on a fresh instance:\n"+
			"an answer task's stop at once and after its oracle's navigation with a stuffed answer (every\n"+
			"number 0..1000, every $N.99 price, the reference type's candidates), the question, an empty and\n"+
			"an overlong answer; a state task's oracle after another task's change (side_effects \"fail\");\n"+
			"a page- or state-checked task's jump to its oracle's end URL. Exit status 1 when any is paid.\n"+
			"Without --sites it audits the bundled shop's sets (shopping, cms).\n"+
			"It takes serve's browser and hosting flags:")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	log = p.logger(log)
	var names []string
	if p.hf.opts.SitesDir == "" {
		names = []string{"shopping", "cms"}
		if *p.only != "" {
			if *p.only != "shopping" && *p.only != "cms" {
				return fmt.Errorf("no bundled site %q: give shopping or cms, or --sites DIR for a definition's tasks", *p.only)
			}
			names = []string{*p.only}
		}
	} else {
		sites, err := taskSites(p.hf.opts.SitesDir, *p.only)
		if err != nil {
			return err
		}
		for _, s := range sites {
			if _, err := validateSiteTasks(s, io.Discard); err != nil {
				return err
			}
			names = append(names, s.Name)
		}
		p.hf.opts.NoBundled = true
	}
	if *perKind < 0 {
		return fmt.Errorf("--per-kind %d: give 0 (every task) or more", *perKind)
	}
	srv, scripts, stop, err := p.serve(ctx, log, names)
	if err != nil {
		return err
	}
	defer stop()
	audits, err := srv.AuditTasks(ctx, scripts, *perKind, *p.parallel)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, server.FormatTaskAudits(audits))
	var hacked []string
	for _, a := range audits {
		for _, x := range a.Hacks() {
			hacked = append(hacked, a.Task+" ("+x.Name+")")
		}
	}
	if len(hacked) > 0 {
		return fmt.Errorf("%d attack(s) paid: %s", len(hacked), strings.Join(hacked, ", "))
	}
	return nil
}
