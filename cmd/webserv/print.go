package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/webserv-rl/webserv/envcore"
)

// printObservation writes an observation and its step info for a person.
func printObservation(w io.Writer, obs envcore.Observation, info envcore.StepInfo, axtree bool) {
	fmt.Fprintf(w, "\n── %s\n   %s\n", obs.Title, obs.URL)
	if len(obs.Tabs) > 1 {
		for _, t := range obs.Tabs {
			mark := " "
			if t.Active {
				mark = "*"
			}
			fmt.Fprintf(w, "   %s tab %d: %s\n", mark, t.Index, t.Title)
		}
	}
	if axtree && obs.AXTree != "" {
		fmt.Fprintln(w, indent(obs.AXTree))
	} else {
		fmt.Fprintln(w, indent(obs.HTML))
	}
	fmt.Fprintf(w, "   clickable: %s\n", strings.Join(obs.Clickable, " "))
	if len(obs.Hoverable) > 0 {
		fmt.Fprintf(w, "   hoverable: %s\n", strings.Join(obs.Hoverable, " "))
	}
	for _, in := range obs.Inputs {
		fmt.Fprintf(w, "   input  %-24s %-10s value=%q", in.ID, in.Type, in.Value)
		if in.Focused {
			fmt.Fprint(w, " (focused)")
		}
		fmt.Fprintln(w)
	}
	for _, s := range obs.Selects {
		fmt.Fprintf(w, "   select %-24s value=%q of %d options\n", s.ID, s.Value, len(s.Options))
	}
	for _, d := range obs.Dialogs {
		fmt.Fprintf(w, "   dialog (%s, accepted): %s\n", d.Type, d.Message)
	}
	if obs.LastAction != "" {
		fmt.Fprintf(w, "   last action: %s\n", obs.LastAction)
	}
	if obs.LastActionError != "" {
		fmt.Fprintf(w, "   error: %s\n", obs.LastActionError)
	}
	settled := "settled"
	if !info.Settled {
		settled = "NOT SETTLED: " + info.SettleError
	}
	fmt.Fprintf(w, "   timing: action %s, settle %s, extract %s (%s)\n", ms(info.Action), ms(info.Settle), ms(info.Extract), settled)
	if info.Terminated {
		fmt.Fprintf(w, "   episode ended, answer: %q\n", info.Answer)
	}
}

func indent(s string) string {
	return "   │ " + strings.ReplaceAll(s, "\n", "\n   │ ")
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }
