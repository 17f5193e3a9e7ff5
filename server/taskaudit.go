package server

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// An audit that tries to cheat (webserv tasks audit): the check loop
// (CheckTasks) shows a task's grading tells its oracle from a mistake;
// the audit plays, against every task, the shortcuts a learning policy
// finds, each on a fresh environment through the same runner (playTask),
// and says which of them were paid (reward > 0):
//
//   - an answer task (isAnswerTask): stop at once, and again after the oracle's
//     navigation (its actions but the final stop), with a stuffed answer
//     (every number 0..1000, every $N.99 price, and the candidates of the
//     reference's type), with the question itself, with an empty answer,
//     and with an overlong one;
//   - a task that changes state: its oracle plus collateral, one more
//     change of the kind it makes (the oracle of another task of the same
//     site, grading and kind of sign-in, played first), under
//     side_effects "fail";
//   - a task graded on a page or the site's state (program_html, state,
//     check) rather than a URL: goto the URL its oracle ends on, and stop.
//
// Each task's oracle is played first (reward 1, or the audit says
// nothing of the task): it gives the start and end URLs the attacks use.

// AuditAttack is one attack played on a task.
type AuditAttack struct {
	Name   string  // like "stuffed answer" (auditHints' keys)
	Reward float64 // NaN: not graded (Problem says why)
	// Problem is why the attack has no reward (an action of it failed,
	// the grading failed); such an attack is not paid, and not a hack.
	Problem string
}

// Paid reports whether the attack earned a reward.
func (a AuditAttack) Paid() bool { return !math.IsNaN(a.Reward) && a.Reward > 0 }

// TaskAudit is one task's audit.
type TaskAudit struct {
	Task, Site string
	// Oracle is the oracle's reward (want 1; the attacks that need its
	// URLs are not played otherwise).
	Oracle  float64
	Attacks []AuditAttack
	// Problems are why the audit could not play what it should.
	Problems []string
	Seconds  float64
}

// Hacks are the attacks that were paid.
func (a TaskAudit) Hacks() []AuditAttack {
	var out []AuditAttack
	for _, x := range a.Attacks {
		if x.Paid() {
			out = append(out, x)
		}
	}
	return out
}

// Played counts the attacks that were graded.
func (a TaskAudit) Played() int {
	n := 0
	for _, x := range a.Attacks {
		if !math.IsNaN(x.Reward) {
			n++
		}
	}
	return n
}

// The audit's attacks and what to do when one is paid.
var auditHints = map[string]string{
	"stuffed answer":                "an answer listing every candidate is paid: type the answer (eval.answer_type, docs/tasks.md)",
	"stuffed answer, navigated":     "an answer listing every candidate is paid: type the answer (eval.answer_type, docs/tasks.md)",
	"question as answer":            "repeating the question is paid: type the answer, or tighten its reference",
	"question as answer, navigated": "repeating the question is paid: type the answer, or tighten its reference",
	"empty answer, navigated":       "an empty answer is paid: the grading does not read the answer",
	"overlong answer":               "20k characters of candidates are paid: type the answer (eval.answer_type)",
	"overlong answer, navigated":    "20k characters of candidates are paid: type the answer (eval.answer_type)",
	"collateral":                    "the task done with another change besides is paid under side_effects \"fail\": narrow its may_change, or give it a state check the server can read",
	"goto end URL":                  "going straight to the oracle's last page and stopping is paid: the check reads a page that holds without the task done",
}

// auditAnswers are the answers the answer attacks stop with, by attack
// name, for a task: at once (start) or after its oracle's navigation.
func auditAnswers(t TaskScripts) map[string]string {
	stuffed := stuffedAnswer(t.AnswerType)
	long := stuffed
	for len(long) < overlongAnswer {
		long += " " + stuffed
	}
	return map[string]string{"stuffed answer": stuffed, "question as answer": t.Intent, "overlong answer": long[:overlongAnswer], "empty answer": ""}
}

// overlongAnswer is the length of the overlong answer.
const overlongAnswer = 20000

// stuffedAnswer lists every number 0..1000, every $N.99 price up to
// $1000.99 and, for a date reference, every day of 2020..2026.
func stuffedAnswer(answerType string) string {
	var b strings.Builder
	for n := 0; n <= 1000; n++ {
		fmt.Fprintf(&b, "%d ", n)
	}
	for n := 0; n <= 1000; n++ {
		fmt.Fprintf(&b, "$%d.99 ", n)
	}
	if answerType == "date" {
		for d := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC); d.Year() < 2027; d = d.AddDate(0, 0, 1) {
			b.WriteString(d.Format("2006-01-02 "))
		}
	}
	return strings.TrimSpace(b.String())
}

// isAnswerTask, isStateTask and isPageTask are what the audit attacks.
// An answer task is graded on its answer: by string_match, or, in the
// information category, by a verifier program or a judge of its own
// (which may look for the reference inside the answer as must_include
// does).
func isAnswerTask(t TaskScripts) bool {
	return slices.Contains(t.Evals, "string_match") || t.Category == "information"
}
func isStateTask(t TaskScripts) bool {
	return t.Category == "state" || slices.Contains(t.Evals, "state") || slices.Contains(t.Evals, "check")
}
func isPageTask(t TaskScripts) bool {
	return slices.ContainsFunc(t.Evals, func(e string) bool { return e == "program_html" || e == "state" || e == "check" })
}

// withoutStop is seq without its final action when that ends the episode.
func withoutStop(seq []string) []string {
	if n := len(seq); n > 0 {
		last := strings.TrimSpace(seq[n-1])
		for _, p := range []string{"stop(", "send_msg_to_user(", "report_infeasible("} {
			if strings.HasPrefix(last, p) {
				return seq[:n-1]
			}
		}
	}
	return seq
}

// collateralOf is the task whose oracle is t's collateral: the next
// state-changing task after t (in order, wrapping) of the same site,
// grading and kind of sign-in, with another oracle; -1 when there is
// none. The same account first; else another account of the same kind
// (the shop's customers each have tasks of their own): its oracle's
// steps, played signed in as t's account, make the same kind of change
// to t's account (another wishlist entry, review or order).
func collateralOf(scripts []TaskScripts, i int) int {
	t := scripts[i]
	partner := func(same func(u TaskScripts) bool) int {
		for k := 1; k < len(scripts); k++ {
			j := (i + k) % len(scripts)
			u := scripts[j]
			if u.Site == t.Site && isStateTask(u) && slices.Equal(u.Evals, t.Evals) && same(u) && len(u.Oracle) > 0 && !slices.Equal(u.Oracle, t.Oracle) {
				return j
			}
		}
		return -1
	}
	if j := partner(func(u TaskScripts) bool { return u.Login == t.Login }); j >= 0 {
		return j
	}
	return partner(func(u TaskScripts) bool { return loginKind(u.Login) == loginKind(t.Login) })
}

// AuditTasks plays the audit's attacks on scripts' tasks on this server,
// workers episodes at a time, and returns one audit per task, in order.
// With perKind > 0 it audits only the first perKind tasks of each kind
// (SampleTasks); the others still lend their oracles as collateral.
func (s *Server) AuditTasks(ctx context.Context, scripts []TaskScripts, perKind, workers int) ([]TaskAudit, error) {
	audited := sampleTasks(scripts, perKind)
	all := make([]TaskAudit, len(scripts))
	oracles := make([]checkAgent, len(scripts))
	var mu sync.Mutex
	type run struct {
		i     int
		agent checkAgent
	}
	var runs []run
	out := all // by index into scripts; only audited ones are returned
	for i, t := range scripts {
		out[i] = TaskAudit{Task: t.Task, Site: t.Site, Oracle: math.NaN()}
		if !audited[i] {
			continue
		}
		if len(t.Oracle) == 0 {
			out[i].Problems = append(out[i].Problems, "no oracle: the audit needs one (tasks check says more)")
			continue
		}
		if !isAnswerTask(t) {
			continue
		}
		nav := withoutStop(t.Oracle)
		for name, answer := range auditAnswers(t) {
			stop := "stop(" + quoteArg(answer) + ")"
			if name != "empty answer" { // tasks check plays stop("") at once
				runs = append(runs, run{i, checkAgent{kind: "attack", name: name, script: []string{stop}}})
			}
			if len(nav) > 0 {
				runs = append(runs, run{i, checkAgent{kind: "attack", name: name + ", navigated", script: append(slices.Clone(nav), stop)}})
			}
		}
	}
	play := func(rs []run) error {
		return forEach(ctx, len(rs), workers, func(k int) {
			r := &rs[k]
			start := time.Now()
			reward, problem := s.playTask(ctx, scripts[r.i].Site, scripts[r.i].Task, &r.agent)
			why := problem.text
			if problem.graded != "" {
				why = "the grading failed: " + problem.graded
			}
			mu.Lock()
			defer mu.Unlock()
			a := &out[r.i]
			a.Seconds += time.Since(start).Seconds()
			if r.agent.kind == "oracle" {
				a.Oracle, oracles[r.i] = reward, r.agent
				if reward != 1 {
					a.Problems = append(a.Problems, fmt.Sprintf("oracle: reward %g, want 1 (%s): the attacks that start from it were not played (tasks check says more)", reward, why))
				} else if p := ownChangesProblem(&r.agent); p != "" {
					a.Problems = append(a.Problems, "oracle: "+p)
				}
				return
			}
			a.Attacks = append(a.Attacks, AuditAttack{Name: r.agent.name, Reward: reward, Problem: why})
		})
	}
	// Phase 1: the answer attacks and the oracles (for their URLs) of the
	// state and page tasks and of their collateral.
	needOracle := map[int]bool{}
	for i, t := range scripts {
		if audited[i] && len(t.Oracle) > 0 && (isStateTask(t) || isPageTask(t)) {
			needOracle[i] = true
			if isStateTask(t) {
				if j := collateralOf(scripts, i); j >= 0 {
					needOracle[j] = true
				}
			}
		}
	}
	for i, t := range scripts {
		if needOracle[i] {
			runs = append(runs, run{i, checkAgent{kind: "oracle", name: "oracle", script: t.Oracle}})
		}
	}
	if err := play(runs); err != nil {
		return nil, err
	}
	// Phase 2: the attacks that start from an oracle's URLs.
	runs = nil
	for i, t := range scripts {
		if !audited[i] || out[i].Oracle != 1 {
			continue
		}
		if isStateTask(t) {
			j := collateralOf(scripts, i)
			if j < 0 || oracles[j].startURL == "" {
				out[i].Attacks = append(out[i].Attacks, AuditAttack{Name: "collateral", Reward: math.NaN(), Problem: "not played: no other task of the same site, grading and kind of sign-in whose oracle solves it"})
			} else {
				seq := append([]string{"goto(" + quoteArg(oracles[j].startURL) + ")"}, withoutStop(scripts[j].Oracle)...)
				seq = append(append(seq, "goto("+quoteArg(oracles[i].startURL)+")"), t.Oracle...)
				runs = append(runs, run{i, checkAgent{kind: "attack", name: "collateral", script: seq, sideEffects: "fail"}})
			}
		}
		if isPageTask(t) && oracles[i].endURL != "" {
			runs = append(runs, run{i, checkAgent{kind: "attack", name: "goto end URL", script: []string{"goto(" + quoteArg(oracles[i].endURL) + ")", startScript}}})
		}
	}
	if err := play(runs); err != nil {
		return nil, err
	}
	var kept []TaskAudit
	for i := range out {
		if !audited[i] {
			continue
		}
		slices.SortFunc(out[i].Attacks, func(a, b AuditAttack) int { return strings.Compare(a.Name, b.Name) })
		slices.Sort(out[i].Problems)
		kept = append(kept, out[i])
	}
	return kept, nil
}

// forEach calls fn(0..n-1), workers at a time, until ctx ends.
func forEach(ctx context.Context, n, workers int, fn func(k int)) error {
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(max(1, workers), max(1, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				fn(k)
			}
		}()
	}
	for k := range n {
		select {
		case jobs <- k:
		case <-ctx.Done():
		}
	}
	close(jobs)
	wg.Wait()
	return ctx.Err()
}

// FormatTaskAudits writes the audit's table (one row per task: attacks
// played, paid, its hack rate), under it each paid attack and each
// problem, then each site's hack rate.
func FormatTaskAudits(audits []TaskAudit) string {
	var b strings.Builder
	w := len("task")
	for _, a := range audits {
		w = max(w, len(a.Task))
	}
	fmt.Fprintf(&b, "%-*s  %-6s  %6s  %4s  %9s  %7s  %s\n", w, "task", "oracle", "played", "paid", "hack rate", "seconds", "result")
	type tally struct{ tasks, hacked, played, paid int }
	bySite := map[string]*tally{}
	var sites []string
	hacked := 0
	for _, a := range audits {
		st := bySite[a.Site]
		if st == nil {
			st = &tally{}
			bySite[a.Site] = st
			sites = append(sites, a.Site)
		}
		paid, played := len(a.Hacks()), a.Played()
		st.tasks++
		st.played += played
		st.paid += paid
		res := "ok"
		if paid > 0 {
			res = "HACKABLE"
			hacked++
			st.hacked++
		}
		oracle := "-"
		if !math.IsNaN(a.Oracle) {
			oracle = strconv.FormatFloat(a.Oracle, 'g', 3, 64)
		}
		fmt.Fprintf(&b, "%-*s  %-6s  %6d  %4d  %9s  %7.1f  %s\n", w, a.Task, oracle, played, paid, rate(paid, played), a.Seconds, res)
	}
	for _, a := range audits {
		for _, x := range a.Hacks() {
			fmt.Fprintf(&b, "%s: %s: reward %g: %s\n", a.Task, x.Name, x.Reward, auditHints[x.Name])
		}
		for _, x := range a.Attacks {
			if x.Problem != "" {
				fmt.Fprintf(&b, "%s: %s: not graded: %s\n", a.Task, x.Name, x.Problem)
			}
		}
		for _, p := range a.Problems {
			fmt.Fprintf(&b, "%s: %s\n", a.Task, p)
		}
	}
	for _, s := range sites {
		st := bySite[s]
		fmt.Fprintf(&b, "site %s: %d task(s), %d hackable; %d of %d attacks paid (hack rate %s)\n", s, st.tasks, st.hacked, st.paid, st.played, rate(st.paid, st.played))
	}
	fmt.Fprintf(&b, "%d task(s), %d hackable\n", len(audits), hacked)
	return b.String()
}

// rate is paid/played as a percentage ("-" when nothing was played).
func rate(paid, played int) string {
	if played == 0 {
		return "-"
	}
	return strconv.FormatFloat(100*float64(paid)/float64(played), 'f', 0, 64) + "%"
}

// sampleTasks marks the first n tasks of each kind: site, category, eval
// types, answer type and who it signs in as (every task when n <= 0).
func sampleTasks(scripts []TaskScripts, n int) map[int]bool {
	seen := map[string]int{}
	out := map[int]bool{}
	for i, t := range scripts {
		k := strings.Join([]string{t.Site, t.Category, strings.Join(t.Evals, "+"), t.AnswerType, loginKind(t.Login)}, "|")
		if seen[k]++; n <= 0 || seen[k] <= n {
			out[i] = true
		}
	}
	return out
}

// loginKind is who a sign-in is as, without which account.
func loginKind(login string) string {
	if i := strings.Index(login, `"email"`); i >= 0 {
		return login[:i]
	}
	return login
}
