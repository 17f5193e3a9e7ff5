package envcore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-rod/rod/lib/proto"
)

// The coordinate actions, for computer-use style policies that act on what
// they see in a screenshot. Their names and argument order are BrowserGym's;
// coordinates are CSS pixels of the viewport, as in the bbox of
// Observation.ExtraElementProperties (divide a screenshot's pixel by
// Observation.ScreenshotScale to get them). They send real input through
// CDP, and the step waits for what that input causes like any other action.
const (
	MouseClick     ActionType = "mouse_click"          // click at (X, Y) with Button
	MouseDblClick  ActionType = "mouse_dblclick"       // double-click at (X, Y) with Button
	MouseMove      ActionType = "mouse_move"           // move the mouse to (X, Y)
	MouseDrag      ActionType = "mouse_drag_and_drop"  // press at (X, Y), move to (ToX, ToY), release
	Scroll         ActionType = "scroll"               // turn the wheel by (DeltaX, DeltaY) where the mouse is
	KeyboardType   ActionType = "keyboard_type"        // type Text into the focused element
	MouseDown      ActionType = "mouse_down"           // move to (X, Y), press Button and hold it
	MouseUp        ActionType = "mouse_up"             // move to (X, Y), release Button
	ScrollAt       ActionType = "scroll_at"            // move to (X, Y), turn the wheel by (DeltaX, DeltaY)
	KeyboardInsert ActionType = "keyboard_insert_text" // insert Text at the focus, without key events
	MouseUpload    ActionType = "mouse_upload_file"    // click at (X, Y) and give the file chooser it opens Files
)

// coordAction is one coordinate action of the grammar: its call form's
// arguments in BrowserGym's order, the Action fields they fill, and how it
// runs. coordActions is the one table parsing, validation, printing and
// execution read; keyboard_press is Press without a target.
type coordAction struct {
	typ ActionType
	// desc and example describe it for a model and for tools (Actions).
	desc, example string
	// params are the numeric arguments, each with the Action field it fills.
	params []coordParam
	// button: takes an optional button="left"|"middle"|"right".
	button bool
	// text: takes one string argument, Text.
	text bool
	// files: takes a file argument (a path or a list), Files.
	files bool
	// points are the viewport points the action touches, checked before it
	// runs.
	points func(a Action) [][2]float64
	run    func(t *tab, ctx context.Context, a Action) error // a method expression or its like
}

type coordParam struct {
	name  string
	field func(a *Action) *float64
}

func param(name string, field func(a *Action) *float64) coordParam {
	return coordParam{name, field}
}

var (
	pX      = param("x", func(a *Action) *float64 { return &a.X })
	pY      = param("y", func(a *Action) *float64 { return &a.Y })
	pFromX  = param("from_x", func(a *Action) *float64 { return &a.X })
	pFromY  = param("from_y", func(a *Action) *float64 { return &a.Y })
	pToX    = param("to_x", func(a *Action) *float64 { return &a.ToX })
	pToY    = param("to_y", func(a *Action) *float64 { return &a.ToY })
	pDeltaX = param("delta_x", func(a *Action) *float64 { return &a.DeltaX })
	pDeltaY = param("delta_y", func(a *Action) *float64 { return &a.DeltaY })
	pDX     = param("dx", func(a *Action) *float64 { return &a.DeltaX })
	pDY     = param("dy", func(a *Action) *float64 { return &a.DeltaY })
)

func atXY(a Action) [][2]float64 { return [][2]float64{{a.X, a.Y}} }

var coordActions = []coordAction{
	{typ: MouseClick, desc: "Click at a point of the viewport.", example: `mouse_click(120, 48)`,
		params: []coordParam{pX, pY}, button: true, points: atXY,
		run: func(t *tab, ctx context.Context, a Action) error { return t.clickAt(ctx, a.X, a.Y, a.Button, 1) }},
	{typ: MouseDblClick, desc: "Double-click at a point of the viewport.", example: `mouse_dblclick(120, 48)`,
		params: []coordParam{pX, pY}, button: true, points: atXY,
		run: func(t *tab, ctx context.Context, a Action) error { return t.clickAt(ctx, a.X, a.Y, a.Button, 2) }},
	{typ: MouseMove, desc: "Move the mouse to a point of the viewport.", example: `mouse_move(120, 48)`,
		params: []coordParam{pX, pY}, points: atXY,
		run: func(t *tab, ctx context.Context, a Action) error {
			return t.mouse(ctx, proto.InputDispatchMouseEventTypeMouseMoved, a.X, a.Y, "", 0)
		}},
	{typ: MouseDrag, desc: "Press the mouse at one point, move it to another and release it there.", example: `mouse_drag_and_drop(10, 20, 200, 20)`,
		params: []coordParam{pFromX, pFromY, pToX, pToY},
		points: func(a Action) [][2]float64 { return [][2]float64{{a.X, a.Y}, {a.ToX, a.ToY}} },
		run:    (*tab).dragAndDrop},
	{typ: Scroll, desc: "Turn the mouse wheel where the mouse is, by delta_x and delta_y CSS pixels (positive delta_y scrolls down).", example: `scroll(0, 400)`,
		params: []coordParam{pDeltaX, pDeltaY}, run: (*tab).wheel},
	{typ: KeyboardType, desc: "Type text into the focused element, key by key.", example: `keyboard_type("hello")`,
		text: true,
		run:  func(t *tab, ctx context.Context, a Action) error { return t.typeText(ctx, a.Text) }},
	{typ: MouseDown, desc: "Move the mouse to a point of the viewport, press a button there and hold it (until mouse_up; mouse_move drags meanwhile).", example: `mouse_down(120, 48)`,
		params: []coordParam{pX, pY}, button: true, points: atXY,
		run: func(t *tab, ctx context.Context, a Action) error {
			if err := t.mouse(ctx, proto.InputDispatchMouseEventTypeMouseMoved, a.X, a.Y, "", 0); err != nil {
				return err
			}
			return t.mouse(ctx, proto.InputDispatchMouseEventTypeMousePressed, a.X, a.Y, a.Button, 1)
		}},
	{typ: MouseUp, desc: "Move the mouse to a point of the viewport and release a button there.", example: `mouse_up(200, 48)`,
		params: []coordParam{pX, pY}, button: true, points: atXY,
		run: func(t *tab, ctx context.Context, a Action) error {
			if err := t.mouse(ctx, proto.InputDispatchMouseEventTypeMouseMoved, a.X, a.Y, "", 0); err != nil {
				return err
			}
			return t.mouse(ctx, proto.InputDispatchMouseEventTypeMouseReleased, a.X, a.Y, a.Button, 1)
		}},
	{typ: ScrollAt, desc: "Move the mouse to a point of the viewport and turn the wheel there by dx and dy CSS pixels (scrolls what is under that point).", example: `scroll_at(600, 300, 0, 400)`,
		params: []coordParam{pX, pY, pDX, pDY}, points: atXY,
		run: func(t *tab, ctx context.Context, a Action) error {
			if err := t.mouse(ctx, proto.InputDispatchMouseEventTypeMouseMoved, a.X, a.Y, "", 0); err != nil {
				return err
			}
			return t.wheel(ctx, a)
		}},
	{typ: KeyboardInsert, desc: "Insert text at the focus at once, as a paste does: one input event, no key events.", example: `keyboard_insert_text("hello")`,
		text: true,
		run:  func(t *tab, ctx context.Context, a Action) error { return t.insertText(ctx, a.Text) }},
	{typ: MouseUpload, desc: "Click a point of the viewport that opens a file chooser and choose files in it; an empty list clears the choice. Paths are inside the environment's upload directory, which is their root.", example: `mouse_upload_file(120, 48, ["receipt.pdf"])`,
		params: []coordParam{pX, pY}, files: true, points: atXY,
		run: func(t *tab, ctx context.Context, a Action) error {
			return t.chooseFiles(ctx, a.Type, a.Files, func() error { return t.clickAt(ctx, a.X, a.Y, "left", 1) })
		}},
}

// coordActionOf returns the table entry of type typ.
func coordActionOf(typ ActionType) (coordAction, bool) {
	for _, c := range coordActions {
		if c.typ == typ {
			return c, true
		}
	}
	return coordAction{}, false
}

// mouseButtons are the buttons a mouse action takes, with their bit in the
// DOM's MouseEvent.buttons.
var mouseButtons = map[string]struct {
	b   proto.InputMouseButton
	bit int
}{
	"left":   {proto.InputMouseButtonLeft, 1},
	"right":  {proto.InputMouseButtonRight, 2},
	"middle": {proto.InputMouseButtonMiddle, 4},
}

// validate checks a's fields for c.
func (c coordAction) validate(a Action) error {
	if c.files {
		if err := checkFiles(a); err != nil {
			return err
		}
	}
	if c.text && a.Text == "" {
		return fmt.Errorf("%s needs text (the characters to type into the focused element)", a.Type)
	}
	if a.Button != "" {
		if _, ok := mouseButtons[a.Button]; !ok || !c.button {
			if !c.button {
				return fmt.Errorf("%s takes no button", a.Type)
			}
			return fmt.Errorf("%s: button must be \"left\", \"middle\" or \"right\", got %q", a.Type, a.Button)
		}
	}
	return nil
}

// parse reads c's call form: numbers in BrowserGym's order (or by name),
// then button= or text.
func (c coordAction) parse(name string, args callArgs) (Action, error) {
	a := Action{Type: c.typ}
	for i, p := range c.params {
		v, ok := args.arg(i, p.name)
		if !ok {
			return a, fmt.Errorf("%s(%s) needs %s", name, c.signature(), p.name)
		}
		if v.kind != "num" {
			return a, fmt.Errorf("%s(%s): %s must be a number of CSS pixels", name, c.signature(), p.name)
		}
		*p.field(&a) = v.num
	}
	n := len(c.params)
	if c.text {
		v, ok := args.arg(0, "text")
		s, isText := v.text()
		if !ok || !isText || v.kind != "str" {
			return a, fmt.Errorf("%s(text) needs the text to type as a string", name)
		}
		a.Text = s
		n++
	}
	if c.files {
		v, ok := args.arg(len(c.params), "file", "files")
		if !ok {
			return a, fmt.Errorf("%s(%s) needs the file to upload (a path, or a list of paths)", name, c.signature())
		}
		files, err := parsedCall{name: name}.strings(v, "file")
		if err != nil {
			return a, err
		}
		a.Files = files
		n++
	}
	if c.button {
		if v, ok := args.arg(len(c.params), "button"); ok {
			a.Button, _ = v.text()
			if a.Button == "left" {
				a.Button = "" // the default, as String prints it
			}
			n++
		}
	}
	if args.count() > n {
		return a, fmt.Errorf("%s(%s) takes %d argument(s), got %d", name, c.signature(), n, args.count())
	}
	return a, a.Validate()
}

// signature is c's argument list as documentation shows it.
func (c coordAction) signature() string {
	var parts []string
	for _, p := range c.params {
		parts = append(parts, p.name)
	}
	if c.text {
		parts = append(parts, "text")
	}
	if c.files {
		parts = append(parts, "file")
	}
	if c.button {
		parts = append(parts, `button="left"`)
	}
	return strings.Join(parts, ", ")
}

// format writes a in c's call form.
func (c coordAction) format(a Action) string {
	var parts []string
	for _, p := range c.params {
		parts = append(parts, strconv.FormatFloat(*p.field(&a), 'f', -1, 64))
	}
	if c.text {
		parts = append(parts, quote(a.Text))
	}
	if c.files {
		parts = append(parts, filesLiteral(a.Files))
	}
	if c.button && a.Button != "" && a.Button != "left" {
		parts = append(parts, "button="+quote(a.Button))
	}
	return string(c.typ) + "(" + strings.Join(parts, ", ") + ")"
}

// execute checks that a's points are inside the viewport and runs it.
func (c coordAction) execute(ctx context.Context, e *Env, t *tab, a Action) error {
	if c.points != nil {
		vp := e.cfg.Viewport
		for _, p := range c.points(a) {
			if p[0] < 0 || p[1] < 0 || p[0] >= float64(vp.Width) || p[1] >= float64(vp.Height) {
				return actionErr("out_of_viewport", "%s: (%g, %g) is outside the viewport, which is %dx%d CSS pixels (x from 0 to %d, y from 0 to %d); "+
					"coordinates are CSS pixels of the viewport (a screenshot's pixel divided by screenshot_scale); scroll to bring what is below into view",
					a.Type, p[0], p[1], vp.Width, vp.Height, vp.Width-1, vp.Height-1)
			}
		}
	}
	if c.files {
		files, err := e.uploadPaths(a)
		if err != nil {
			return err
		}
		a.Files = files
	}
	return c.run(t, ctx, a)
}

// clickAt presses and releases button at (x, y) clicks times: a click, or
// a double-click (two presses, the second with click count 2).
func (t *tab) clickAt(ctx context.Context, x, y float64, button string, clicks int) error {
	if err := t.mouse(ctx, proto.InputDispatchMouseEventTypeMouseMoved, x, y, "", 0); err != nil {
		return err
	}
	for n := 1; n <= clicks; n++ {
		if err := t.mouse(ctx, proto.InputDispatchMouseEventTypeMousePressed, x, y, button, n); err != nil {
			return err
		}
		if err := t.mouse(ctx, proto.InputDispatchMouseEventTypeMouseReleased, x, y, button, n); err != nil {
			return err
		}
	}
	return nil
}

// dragSteps is how many mouse moves a drag makes between its ends, so that
// pages that follow the pointer (sliders, sortable lists) see it travel.
const dragSteps = 10

// dragAndDrop presses the left button at (a.X, a.Y), moves to (a.ToX,
// a.ToY) in steps and releases it there.
func (t *tab) dragAndDrop(ctx context.Context, a Action) error {
	if err := t.mouse(ctx, proto.InputDispatchMouseEventTypeMouseMoved, a.X, a.Y, "", 0); err != nil {
		return err
	}
	if err := t.mouse(ctx, proto.InputDispatchMouseEventTypeMousePressed, a.X, a.Y, "left", 1); err != nil {
		return err
	}
	for i := 1; i <= dragSteps; i++ {
		f := float64(i) / dragSteps
		x, y := a.X+(a.ToX-a.X)*f, a.Y+(a.ToY-a.Y)*f
		if err := t.mouse(ctx, proto.InputDispatchMouseEventTypeMouseMoved, x, y, "left", 0); err != nil {
			return err
		}
	}
	return t.mouse(ctx, proto.InputDispatchMouseEventTypeMouseReleased, a.ToX, a.ToY, "left", 1)
}

// wheel turns the mouse wheel by (a.DeltaX, a.DeltaY) CSS pixels where the
// mouse is, as a person scrolling does (and as BrowserGym's scroll does).
func (t *tab) wheel(ctx context.Context, a Action) error {
	t.mu.Lock()
	x, y := t.mouseX, t.mouseY
	t.mu.Unlock()
	err := proto.InputDispatchMouseEvent{Type: proto.InputDispatchMouseEventTypeMouseWheel, X: x, Y: y, DeltaX: a.DeltaX, DeltaY: a.DeltaY}.Call(t.client(ctx))
	if err != nil {
		return fmt.Errorf("mouse wheel: %w", err)
	}
	return nil
}
