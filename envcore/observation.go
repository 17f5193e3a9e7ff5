package envcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-rod/rod/lib/proto"

	"github.com/webserv-rl/webserv/inject"
)

// Observation is what an agent sees after a step (WebServ paper, 3.2.1):
// five components (HTML, Clickable, Hoverable, Inputs, Selects) plus the
// page's url and title, the tabs, and what happened on the last step.
type Observation struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	// HTML is the page stripped to what a person sees, with
	// data-semantic-id on every element an action can target.
	HTML string `json:"html"`
	// Clickable lists the semantic ids a click does something on.
	Clickable []string `json:"clickable"`
	// Hoverable lists the ids of elements that listen for hover events.
	Hoverable []string `json:"hoverable"`
	// Inputs are text fields, checkboxes, radios, textareas and
	// contenteditable regions, with their live state.
	Inputs []InputField `json:"inputs"`
	// Selects are <select> elements with their options.
	Selects []SelectField `json:"selects"`
	// Focused is the id of the focused element, if it has one.
	Focused string `json:"focused,omitempty"`

	Tabs      []Tab `json:"tabs"`
	ActiveTab int   `json:"active_tab"`

	// AXTree is an accessibility-tree style text view with the same ids
	// (only when asked for with ObserveOptions.AXTree).
	AXTree string `json:"axtree,omitempty"`
	// Screenshot is a PNG of the viewport (only when asked for).
	Screenshot []byte `json:"screenshot,omitempty"`

	// Dialogs lists alert/confirm/prompt dialogs the page opened since the
	// last observation; WebServ accepts them.
	Dialogs []Dialog `json:"dialogs,omitempty"`
	// Chat holds the messages the agent sent with send_msg_to_user.
	Chat []ChatMessage `json:"chat,omitempty"`

	LastAction      string `json:"last_action,omitempty"`
	LastActionError string `json:"last_action_error,omitempty"`

	// Stats describe the extraction (sizes and its time inside the page).
	// They are not part of what the page shows, so they are not encoded
	// with the observation: the server reports them in a step's info.
	Stats ObservationStats `json:"-"`
}

// InputField is the state of a text field, checkbox, radio, textarea or
// contenteditable region.
type InputField struct {
	ID       string `json:"id"`
	Tag      string `json:"tag"`
	Type     string `json:"type"`
	Value    string `json:"value"`
	Editable bool   `json:"editable"`
	Focused  bool   `json:"focused"`
	// Checked is set for checkboxes and radios.
	Checked *bool `json:"checked,omitempty"`
	// NumericValue is set for type=number with a valid value.
	NumericValue   *float64 `json:"numeric_value,omitempty"`
	SelectionStart *int     `json:"selection_start,omitempty"`
	SelectionEnd   *int     `json:"selection_end,omitempty"`
	Placeholder    string   `json:"placeholder,omitempty"`
	Name           string   `json:"name,omitempty"`
	Required       bool     `json:"required,omitempty"`
}

// SelectField is the state of a <select> element.
type SelectField struct {
	ID            string         `json:"id"`
	Value         string         `json:"value"`
	SelectedIndex int            `json:"selected_index"`
	Multiple      bool           `json:"multiple"`
	Focused       bool           `json:"focused"`
	Disabled      bool           `json:"disabled,omitempty"`
	Options       []SelectOption `json:"options"`
	// Selected holds the values of the selected options.
	Selected []string `json:"selected"`
}

// SelectOption is one option of a SelectField. Its ID is namespaced under the select's
// ("size.large").
type SelectOption struct {
	ID       string `json:"id"`
	Text     string `json:"text"`
	Value    string `json:"value"`
	Selected bool   `json:"selected"`
	Disabled bool   `json:"disabled,omitempty"`
}

// Tab describes one open tab.
type Tab struct {
	Index  int    `json:"index"`
	URL    string `json:"url"`
	Title  string `json:"title"`
	Active bool   `json:"active"`
}

// Dialog is a JavaScript dialog the page opened.
type Dialog struct {
	Type    string `json:"type"` // alert, confirm, prompt, beforeunload
	Message string `json:"message"`
}

// ChatMessage is a message in the agent-user chat.
type ChatMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// ObservationStats describe the extraction.
type ObservationStats struct {
	Visited int     `json:"visited"` // elements looked at
	Kept    int     `json:"kept"`    // elements in the stripped HTML
	Frames  int     `json:"frames"`  // same-origin iframes walked
	Targets int     `json:"targets"` // elements with a semantic id
	JSMs    float64 `json:"ms"`      // time the walk took inside the page
}

// ObserveOptions asks for the optional parts of an observation.
type ObserveOptions struct {
	Screenshot bool `json:"screenshot,omitempty"`
	AXTree     bool `json:"axtree,omitempty"`
}

// pageObservation is what parser.observeJSON returns.
type pageObservation struct {
	URL       string           `json:"url"`
	Title     string           `json:"title"`
	HTML      string           `json:"html"`
	Clickable []string         `json:"clickable"`
	Hoverable []string         `json:"hoverable"`
	Inputs    []InputField     `json:"inputs"`
	Selects   []SelectField    `json:"selects"`
	Focused   *string          `json:"focused"`
	AXTree    string           `json:"axtree"`
	Stats     ObservationStats `json:"stats"`
}

// extract runs the DOM parser in the tab and fills the page parts of obs.
func (t *tab) extract(ctx context.Context, opts ObserveOptions, obs *Observation) error {
	// The parser answers one JSON string: CDP carries a string cheaply,
	// and it is decoded once, here.
	var raw string
	var p pageObservation
	err := t.evalJSON(ctx, inject.Call("parser.observeJSON", map[string]bool{"axtree": opts.AXTree}), &raw)
	if err == nil {
		if err = json.Unmarshal([]byte(raw), &p); err != nil {
			err = fmt.Errorf("decode: %w", err)
		}
	}
	switch {
	case errors.Is(err, errNoInjection):
		// about:blank or a browser error page: nothing to parse.
		obs.URL, obs.Title = t.info()
	case err != nil:
		return fmt.Errorf("extract observation: %w", err)
	default:
		obs.URL, obs.Title, obs.HTML = p.URL, p.Title, p.HTML
		obs.Clickable, obs.Hoverable, obs.Inputs, obs.Selects = p.Clickable, p.Hoverable, p.Inputs, p.Selects
		obs.AXTree, obs.Stats = p.AXTree, p.Stats
		if p.Focused != nil {
			obs.Focused = *p.Focused
		}
	}
	if obs.URL == errorPageURL {
		t.describeFailedLoad(ctx, opts, obs)
	}
	if obs.Clickable == nil {
		obs.Clickable = []string{}
	}
	if obs.Hoverable == nil {
		obs.Hoverable = []string{}
	}
	if obs.Inputs == nil {
		obs.Inputs = []InputField{}
	}
	if obs.Selects == nil {
		obs.Selects = []SelectField{}
	}
	if opts.Screenshot {
		shot, err := proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng}.Call(t.client(ctx))
		if err != nil {
			return fmt.Errorf("screenshot: %w", err)
		}
		obs.Screenshot = shot.Data
	}
	return nil
}
