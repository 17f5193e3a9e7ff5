package envcore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/webserv-rl/webserv/envcore/budget"
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

	// Viewport is the active tab's viewport: its size in CSS pixels, the
	// device scale factor and how far the page is scrolled.
	Viewport ViewportState `json:"viewport"`

	// AXTree is an accessibility-tree style text view with the same ids
	// (only when asked for with ObserveOptions.AXTree).
	AXTree string `json:"axtree,omitempty"`
	// Screenshot is the viewport as a PNG or JPEG (ObserveOptions.Screenshot
	// or Marks), without marks.
	Screenshot []byte `json:"screenshot,omitempty"`
	// ScreenshotSOM is the same picture with set-of-marks: every visible
	// element with a semantic id boxed and labelled with a short number
	// (ObserveOptions.Marks). SOMLabels maps each number to its id.
	ScreenshotSOM []byte            `json:"screenshot_som,omitempty"`
	SOMLabels     map[string]string `json:"som_labels,omitempty"`
	// ScreenshotScale is the screenshots' pixels per CSS pixel: the device
	// scale factor, less when ObserveOptions.MaxSide shrank them. Divide
	// a point of the picture by it to get the coordinates mouse_click takes.
	ScreenshotScale float64 `json:"screenshot_scale,omitempty"`
	// ExtraElementProperties holds the geometry of every element with a
	// semantic id, keyed by id, in BrowserGym's extra_element_properties
	// shape (ObserveOptions.Geometry or Marks). Asked for, it is on the
	// wire even when empty (a page with no ids), as BrowserGym always
	// gives the key; not asked for (nil), it is left out.
	ExtraElementProperties ElementPropertiesByID `json:"extra_element_properties,omitempty"`
	// AXTreeObject and DOMObject are BrowserGym's axtree_object and
	// dom_object (ObserveOptions.BrowserGym): what Chromium answers to
	// Accessibility.getFullAXTree ({"nodes": [...]}, every frame's merged)
	// and DOMSnapshot.captureSnapshot ({"documents": [...], "strings":
	// [...]}), with each semantic id where BrowserGym's utilities read
	// theirs: the node's browsergym_id, the element's bid attribute
	// (browsergym.go). Numbers are integers where the JSON has whole ones.
	AXTreeObject map[string]any `json:"axtree_object,omitempty"`
	DOMObject    map[string]any `json:"dom_object,omitempty"`

	// Dialogs lists alert/confirm/prompt dialogs the page opened since the
	// last observation; WebServ accepts them.
	Dialogs []Dialog `json:"dialogs,omitempty"`
	// BlockedTabs counts the tabs the page opened since the last
	// observation while Config.MaxTabs were open; WebServ closed them as
	// they appeared (before any of their content loaded).
	BlockedTabs int `json:"blocked_tabs,omitempty"`
	// Chat holds the messages the agent sent with send_msg_to_user.
	Chat []ChatMessage `json:"chat,omitempty"`

	LastAction      string `json:"last_action,omitempty"`
	LastActionError string `json:"last_action_error,omitempty"`

	// ObsTokens is the number of tokens in the budgeted text view (AXTree,
	// or HTML with ObserveOptions.View "html") as the budget's tokenizer
	// counts them (ObserveOptions.MaxTokens; docs/envcore.md, "Token
	// budget"), and ObsTruncated says whether the page was pruned to fit.
	ObsTokens    int  `json:"obs_tokens,omitempty"`
	ObsTruncated bool `json:"obs_truncated,omitempty"`

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

// ViewportState is the viewport an observation was taken in.
type ViewportState struct {
	Width             int     `json:"width"`  // CSS pixels
	Height            int     `json:"height"` // CSS pixels
	DeviceScaleFactor float64 `json:"device_scale_factor"`
	ScrollX           float64 `json:"scroll_x"`
	ScrollY           float64 `json:"scroll_y"`
}

// ElementPropertiesByID is Observation.ExtraElementProperties: each
// element's properties by its semantic id.
type ElementPropertiesByID map[string]ElementProperties

// IsZero reports whether m was not asked for (nil). The MessagePack wire
// leaves out only such a map under omitempty, so an asked-for empty one
// still gives its key (encoding/json's omitempty does not read IsZero:
// JSON writers that need the key add it, as OpenEnv's does).
func (m ElementPropertiesByID) IsZero() bool { return m == nil }

// ElementProperties is the geometry of one element, in the shape of
// BrowserGym's extra_element_properties (visibility, bbox, clickable,
// set_of_marks) plus the two parts visibility is made of.
type ElementProperties struct {
	// Visibility is the share of the element's area a person sees: the
	// share inside the viewport times the share of sample points (a 3x3
	// grid) where the element, not something on top of it, is hit. With
	// ObserveOptions.BrowserGym it is BrowserGym's: the share inside the
	// viewport alone (InViewport, rounded to hundredths).
	Visibility float64 `json:"visibility"`
	// BBox is [x, y, width, height] in CSS pixels of the top-level
	// viewport, as the element's getBoundingClientRect (plus its frame's
	// offset) says; x and y may be negative or beyond the viewport.
	BBox [4]float64 `json:"bbox"`
	// Clickable is set for the ids in Observation.Clickable; with
	// ObserveOptions.BrowserGym, it is BrowserGym's: Chromium's own
	// answer (DOMSnapshot's isClickable: click listeners, links).
	Clickable bool `json:"clickable"`
	// SetOfMarks is set for the elements boxed in ScreenshotSOM: those with
	// some visibility.
	SetOfMarks bool `json:"set_of_marks"`
	// InViewport is the share of the element's area inside the viewport.
	InViewport float64 `json:"in_viewport"`
	// Covered is set when other elements hide most of the element's part
	// in the viewport (fewer than half of the sample points hit it).
	Covered bool `json:"covered"`
}

// ObserveOptions asks for the optional parts of an observation. Each costs
// nothing unless asked for.
type ObserveOptions struct {
	Screenshot bool `json:"screenshot,omitempty"`
	AXTree     bool `json:"axtree,omitempty"`
	// Geometry adds ExtraElementProperties.
	Geometry bool `json:"geometry,omitempty"`
	// Marks adds ScreenshotSOM and SOMLabels; it implies Screenshot and
	// Geometry.
	Marks bool `json:"marks,omitempty"`
	// BrowserGym adds BrowserGym's raw objects, AXTreeObject and DOMObject,
	// for agents that build their prompts with BrowserGym's utilities; it
	// implies Geometry (extra_element_properties). They are large: off
	// unless asked for.
	BrowserGym bool `json:"browsergym,omitempty"`
	// Layout adds cols="N" to containers in HTML whose children sit side
	// by side (N in the widest row): product grids, flex rows.
	Layout bool `json:"layout,omitempty"`
	// Format of the screenshots: "png" (the default) or "jpeg".
	Format string `json:"format,omitempty"`
	// Quality of JPEG screenshots, 1 to 100; 0 means 80.
	Quality int `json:"quality,omitempty"`
	// MaxSide, if set, shrinks the screenshots so that their longer side
	// is at most this many pixels (marks are drawn after, so their labels
	// stay legible).
	MaxSide int `json:"max_side,omitempty"`
	// MaxTokens, if set, bounds the text view View names: it is pruned to
	// at most this many tokens as Counter counts them, in the order
	// docs/envcore.md gives, and the other text view is left out.
	MaxTokens int `json:"max_tokens,omitempty"`
	// View is the text view a budget prunes: "axtree" (the default; AXTree
	// is turned on and HTML left out) or "html" (HTML, written one element
	// per line, and no AXTree). Without a budget, "axtree" is AXTree and
	// "html" changes nothing.
	View string `json:"view,omitempty"`
	// Tokenizer names the tokenizer.json Counter was loaded from.
	Tokenizer string         `json:"tokenizer,omitempty"`
	Counter   budget.Counter `json:"-"`
}

// TextViews are the values of ObserveOptions.View ("" is "axtree").
var TextViews = []string{"axtree", "html"}

// Validate checks the options' values.
func (o ObserveOptions) Validate() error {
	switch o.Format {
	case "", "png", "jpeg":
	default:
		return fmt.Errorf("screenshot format must be \"png\" or \"jpeg\", got %q", o.Format)
	}
	if o.Quality < 0 || o.Quality > 100 {
		return fmt.Errorf("screenshot quality must be between 1 and 100 (0 for the default 80), got %d", o.Quality)
	}
	if o.MaxSide < 0 || (o.MaxSide > 0 && o.MaxSide < 64) {
		return fmt.Errorf("max_side must be 64 pixels or more (0: full size), got %d", o.MaxSide)
	}
	if o.MaxTokens < 0 || (o.MaxTokens > 0 && o.MaxTokens < budget.MinTokens) {
		return fmt.Errorf("max_tokens must be %d or more (0: no budget), got %d", budget.MinTokens, o.MaxTokens)
	}
	if o.View != "" && !slices.Contains(TextViews, o.View) {
		return fmt.Errorf("view must be \"axtree\" or \"html\", got %q", o.View)
	}
	if o.MaxTokens > 0 && o.View == "html" && o.AXTree {
		return fmt.Errorf("a token budget prunes one text view: with view \"html\" leave axtree out (or use view \"axtree\")")
	}
	if o.MaxTokens > 0 && o.Counter == nil {
		return fmt.Errorf("max_tokens needs a tokenizer: the tokenizer.json its tokens are counted with")
	}
	return nil
}

// geometry is whether the observation carries ExtraElementProperties.
func (o ObserveOptions) geometry() bool { return o.Geometry || o.Marks || o.BrowserGym }

// budgetsHTML is whether a budget prunes the HTML view.
func (o ObserveOptions) budgetsHTML() bool { return o.MaxTokens > 0 && o.View == "html" }

// budget prunes the view opts names to its token budget and leaves the
// other out; places are the view's lines' places.
func (t *tab) budget(opts ObserveOptions, places string, obs *Observation) {
	view, text := budget.AXTree, &obs.AXTree
	if opts.budgetsHTML() {
		view, text = budget.HTML, &obs.HTML
		obs.AXTree = ""
	} else {
		obs.HTML = ""
	}
	if *text == "" { // no injected script: the title alone
		*text = view.Title(obs.Title)
		places = ""
	}
	r := budget.Fit(*text, places, opts.MaxTokens, opts.Counter, t.expansion(), view)
	*text, obs.ObsTokens, obs.ObsTruncated = r.Text, r.Tokens, r.Truncated
	t.shown(r.Folds)
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
	Places    string           `json:"places"`
	Viewport  ViewportState    `json:"viewport"`
	Geometry  []elementBox     `json:"geometry"`
	Stats     ObservationStats `json:"stats"`
}

// elementBox is one element's geometry as parser.js reports it, in
// document order.
type elementBox struct {
	ID string `json:"id"`
	ElementProperties
}

// extract runs the DOM parser in the tab and fills the page parts of obs.
func (t *tab) extract(ctx context.Context, opts ObserveOptions, obs *Observation) error {
	// The parser answers one JSON string: CDP carries a string cheaply,
	// and it is decoded once, here.
	if err := opts.Validate(); err != nil {
		return fmt.Errorf("observe: %w", err)
	}
	var raw string
	var p pageObservation
	outline := opts.budgetsHTML()
	err := t.evalJSON(ctx, inject.Call("parser.observeJSON", map[string]bool{
		"axtree": (opts.AXTree || opts.View == "axtree" || opts.MaxTokens > 0) && !outline, "geometry": opts.geometry(),
		"layout": opts.Layout, "places": opts.MaxTokens > 0, "outline": outline,
	}), &raw)
	if limit := t.owner().cfg.MaxObservationBytes; err == nil && len(raw) > limit {
		return &ResourceLimitError{What: "observation", Used: int64(len(raw)), Limit: int64(limit)}
	}
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
		obs.AXTree, obs.Stats, obs.Viewport = p.AXTree, p.Stats, p.Viewport
		if p.Focused != nil {
			obs.Focused = *p.Focused
		}
		if opts.geometry() {
			obs.ExtraElementProperties = make(map[string]ElementProperties, len(p.Geometry))
			for _, g := range p.Geometry {
				obs.ExtraElementProperties[g.ID] = g.ElementProperties
			}
		}
	}
	if obs.Viewport.Width == 0 { // no injected script: the configured viewport
		vp := t.owner().cfg.Viewport
		obs.Viewport = ViewportState{Width: vp.Width, Height: vp.Height, DeviceScaleFactor: 1}
	}
	if obs.URL == errorPageURL {
		t.describeFailedLoad(ctx, opts, obs)
	}
	if opts.MaxTokens > 0 {
		t.budget(opts, p.Places, obs)
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
	if opts.BrowserGym {
		if err := t.browserGym(ctx, obs.ids(), obs); err != nil {
			return err
		}
	}
	if opts.Screenshot || opts.Marks {
		return t.screenshot(ctx, opts, p.Geometry, obs)
	}
	return nil
}

// ids are the semantic ids the observation names: every element's with
// geometry, and the options of its selects.
func (o *Observation) ids() map[string]bool {
	ids := make(map[string]bool, len(o.ExtraElementProperties))
	for id := range o.ExtraElementProperties {
		ids[id] = true
	}
	for _, l := range [][]string{o.Clickable, o.Hoverable} {
		for _, id := range l {
			ids[id] = true
		}
	}
	for _, f := range o.Inputs {
		ids[f.ID] = true
	}
	for _, s := range o.Selects {
		ids[s.ID] = true
		for _, opt := range s.Options {
			ids[opt.ID] = true
		}
	}
	return ids
}
