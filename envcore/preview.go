package envcore

import (
	"context"
	"fmt"

	"github.com/webserv-rl/webserv/inject"
)

// Box is a rectangle in viewport pixels.
type Box struct {
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
}

// Previewable reports whether a's target is outlined by Preview: click,
// type, select, hover, clear and press on a target.
func (a Action) Previewable() bool {
	s, ok := specOf(a.Type)
	return ok && s.preview && a.Target != ""
}

// Preview outlines the target of a on the active tab's page (scrolled into
// view, with a label naming the action), so a person watching the page, a
// screenshot or the live picture sees what the action is about to do. It
// answers the target's box, or nil when a has no target or the page has no
// such element (the action itself will report that). Every viewer of the
// live picture (Screencast) has been given a picture with the outline
// before it returns. Call Unpreview before running the action: the outline
// is then gone from the page.
func (e *Env) Preview(ctx context.Context, a Action) (*Box, error) {
	boxes, err := e.PreviewStep(ctx, []Action{a})
	return boxes[0], err
}

// PreviewStep outlines the targets of a step's actions together, as
// Preview does one's: a multi-action step's (Parsed.Actions), each outline
// labelled with its place and action ("2/3 click('a12')") when there are
// several. It answers each action's box in order, nil for one without a
// target or whose target is not on the page now (an element an earlier
// action of the step makes appear cannot be outlined before it runs).
// Unpreview removes every outline.
func (e *Env) PreviewStep(ctx context.Context, acts []Action) ([]*Box, error) {
	boxes := make([]*Box, len(acts))
	op, shown := "show", false
	for i, a := range acts {
		label := a.String()
		if len(acts) > 1 {
			label = fmt.Sprintf("%d/%d %s", i+1, len(acts), label)
		}
		box, err := e.preview(ctx, a, op, label)
		if err != nil {
			return boxes, err
		}
		if box != nil {
			boxes[i], op, shown = box, "add", true
		}
	}
	if shown {
		if t := e.activeTab(); t != nil {
			casts.show(ctx, e, t)
		}
	}
	return boxes, nil
}

func (e *Env) preview(ctx context.Context, a Action, op, label string) (*Box, error) {
	if !a.Previewable() {
		return nil, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.checkedTab()
	if err != nil {
		return nil, err
	}
	var r struct {
		Shown bool `json:"shown"`
		Box
	}
	if err := t.evalJSON(ctx, inject.Preview(op, a.Target, label), &r); err != nil {
		return nil, fmt.Errorf("action preview: %w", err)
	}
	if !r.Shown {
		return nil, nil
	}
	return &r.Box, nil
}

// TargetBox is the box of a's target as the page is now, without
// scrolling or drawing anything: where a screenshot taken now shows it.
// Nil when a has no target or the target is not wholly in view.
func (e *Env) TargetBox(ctx context.Context, a Action) (*Box, error) {
	return e.preview(ctx, a, "measure", "")
}

// Unpreview removes the outline Preview drew on the active tab's page.
func (e *Env) Unpreview(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	t, err := e.checkedTab()
	if err != nil {
		return err
	}
	if err := t.evalJSON(ctx, inject.Preview("hide", "", ""), nil); err != nil {
		return fmt.Errorf("remove the action preview: %w", err)
	}
	return nil
}
