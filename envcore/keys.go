package envcore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-rod/rod/lib/input"
	"github.com/go-rod/rod/lib/proto"

	"github.com/webserv-rl/webserv/inject"
)

// namedKeys maps the key names agents use (Playwright's, plus common
// aliases, compared case-insensitively) to rod's US keyboard layout.
var namedKeys = map[string]input.Key{
	"enter": input.Enter, "return": input.Enter, "tab": input.Tab, "escape": input.Escape, "esc": input.Escape,
	"backspace": input.Backspace, "delete": input.Delete, "del": input.Delete, "insert": input.Insert,
	"space": input.Space, " ": input.Space,
	"arrowup": input.ArrowUp, "up": input.ArrowUp, "arrowdown": input.ArrowDown, "down": input.ArrowDown,
	"arrowleft": input.ArrowLeft, "left": input.ArrowLeft, "arrowright": input.ArrowRight, "right": input.ArrowRight,
	"home": input.Home, "end": input.End, "pageup": input.PageUp, "pagedown": input.PageDown,
	"f1": input.F1, "f2": input.F2, "f3": input.F3, "f4": input.F4, "f5": input.F5, "f6": input.F6,
	"f7": input.F7, "f8": input.F8, "f9": input.F9, "f10": input.F10, "f11": input.F11, "f12": input.F12,
}

// modifierKeys maps modifier names to rod keys.
var modifierKeys = map[string]input.Key{
	"control": input.ControlLeft, "ctrl": input.ControlLeft, "controlormeta": input.ControlLeft,
	"shift": input.ShiftLeft, "alt": input.AltLeft, "option": input.AltLeft,
	"meta": input.MetaLeft, "cmd": input.MetaLeft, "command": input.MetaLeft, "super": input.MetaLeft,
}

// printable holds the ASCII characters rod's layout can type as keystrokes.
var printable = func() map[rune]input.Key {
	m := map[rune]input.Key{}
	for r := rune(32); r < 127; r++ {
		if k, ok := asciiKey(r); ok {
			m[r] = k
		}
	}
	m['\n'] = input.Enter
	return m
}()

func asciiKey(r rune) (k input.Key, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	k = input.Key(r)
	k.Info() // panics for keys outside the layout
	return k, true
}

// keyCombo is a parsed key press: modifiers held while key is pressed.
type keyCombo struct {
	mods []input.Key
	key  input.Key
}

// parseKeyCombo reads "Enter", "a", "Control+a", "Shift+Tab", "Meta+Shift+z".
func parseKeyCombo(s string) (keyCombo, error) {
	var kc keyCombo
	if s == "" {
		return kc, fmt.Errorf("empty key")
	}
	parts := strings.Split(s, "+")
	if strings.HasSuffix(s, "++") || s == "+" { // the "+" key itself
		parts = append(parts[:len(parts)-2], "+")
	}
	for i, p := range parts {
		last := i == len(parts)-1
		if !last {
			m, ok := modifierKeys[strings.ToLower(strings.TrimSpace(p))]
			if !ok {
				return kc, fmt.Errorf("unknown modifier %q in key %q; use Control, Shift, Alt or Meta", p, s)
			}
			kc.mods = append(kc.mods, m)
			continue
		}
		if k, ok := namedKeys[strings.ToLower(p)]; ok {
			kc.key = k
		} else if m, ok := modifierKeys[strings.ToLower(p)]; ok {
			kc.key = m
		} else if r, size := utf8.DecodeRuneInString(p); size == len(p) && printable[r] != 0 {
			kc.key = printable[r]
		} else {
			return kc, fmt.Errorf("unknown key %q; use a name like Enter, Tab, Escape, Backspace, ArrowDown, PageUp, F5, or one character", p)
		}
	}
	return kc, nil
}

func modifierBit(k input.Key) int {
	switch k {
	case input.ControlLeft:
		return input.ModifierControl
	case input.ShiftLeft:
		return input.ModifierShift
	case input.AltLeft:
		return input.ModifierAlt
	case input.MetaLeft:
		return input.ModifierMeta
	}
	return 0
}

// press sends the combo as real key events: modifiers down, key down and
// up, modifiers up.
func (t *tab) press(ctx context.Context, kc keyCombo) error {
	c := t.client(ctx)
	t.mu.Lock()
	mods := t.mods // held with keyboard_down
	t.mu.Unlock()
	for _, m := range kc.mods {
		mods |= modifierBit(m)
		if err := m.Encode(proto.InputDispatchKeyEventTypeKeyDown, mods).Call(c); err != nil {
			return fmt.Errorf("key down: %w", err)
		}
	}
	down := kc.key.Encode(proto.InputDispatchKeyEventTypeKeyDown, mods)
	if mods&(input.ModifierControl|input.ModifierAlt|input.ModifierMeta) != 0 {
		// A shortcut produces no text; Chromium runs the editing command.
		down.Type = proto.InputDispatchKeyEventTypeRawKeyDown
		down.Text, down.UnmodifiedText = "", ""
		if cmd := editCommand(kc); cmd != "" {
			down.Commands = []string{cmd}
		}
	}
	if err := down.Call(c); err != nil {
		return fmt.Errorf("key down: %w", err)
	}
	if err := kc.key.Encode(proto.InputDispatchKeyEventTypeKeyUp, mods).Call(c); err != nil {
		return fmt.Errorf("key up: %w", err)
	}
	for i := len(kc.mods) - 1; i >= 0; i-- {
		mods &^= modifierBit(kc.mods[i])
		if err := kc.mods[i].Encode(proto.InputDispatchKeyEventTypeKeyUp, mods).Call(c); err != nil {
			return fmt.Errorf("key up: %w", err)
		}
	}
	return nil
}

// editCommand names the editing command of common shortcuts, which headless
// Chromium runs only when asked to.
func editCommand(kc keyCombo) string {
	if len(kc.mods) != 1 || (kc.mods[0] != input.ControlLeft && kc.mods[0] != input.MetaLeft) {
		return ""
	}
	switch kc.key {
	case input.KeyA:
		return "selectAll"
	case input.KeyC:
		return "copy"
	case input.KeyX:
		return "cut"
	case input.KeyV:
		return "paste"
	case input.KeyZ:
		return "undo"
	}
	return ""
}

// keyByKeyMax is the longest text typed one key event per character.
// Chromium handles each key event with a layout of the field as it is, so
// key-by-key typing costs time in the square of the length (10 KB took 18 s,
// 30 KB over a minute); longer text goes in at once.
const keyByKeyMax = 256

// typeText types text as key events, one per character, so pages that react
// to keydown/keyup (autocomplete, validation) see what typing produces.
// Characters outside the US layout go in through Input.insertText. The
// events are pipelined (a session's commands are handled in order) and only
// the last is awaited, so typing costs one round trip, not two per
// character.
//
// Text longer than keyByKeyMax characters goes in as a paste or an input
// method does: all but its last character at once (insertText: one input
// event), then the last character as a key, so the page's key handlers see
// typing end and its input handlers the whole value. Its time grows with
// the length by a small constant.
func (t *tab) typeText(ctx context.Context, text string) error {
	c := t.client(ctx)
	if utf8.RuneCountInString(text) > keyByKeyMax {
		_, size := utf8.DecodeLastRuneInString(text)
		if err := t.insertText(ctx, text[:len(text)-size]); err != nil {
			return err
		}
		text = text[len(text)-size:]
	}
	var events []proto.Request
	var pending strings.Builder
	flush := func() {
		if pending.Len() > 0 {
			events = append(events, proto.InputInsertText{Text: pending.String()})
			pending.Reset()
		}
	}
	for _, r := range text {
		k, ok := printable[r]
		if !ok {
			pending.WriteRune(r)
			continue
		}
		flush()
		down := k.Encode(proto.InputDispatchKeyEventTypeKeyDown, 0)
		up := k.Encode(proto.InputDispatchKeyEventTypeKeyUp, 0)
		if r != '\n' {
			// Shifted characters ("A", "!") carry their own key and text.
			down.Text, down.UnmodifiedText, down.Key = string(r), string(r), string(r)
			up.Key = string(r)
		}
		events = append(events, down, up)
	}
	flush()
	for i, ev := range events {
		var err error
		if i == len(events)-1 {
			_, err = c.b.Call(ctx, string(c.id), ev.ProtoReq(), ev) // the barrier: all before it are done
		} else {
			err = c.send(ev)
		}
		if err != nil {
			return fmt.Errorf("type text: %w", err)
		}
	}
	return nil
}

// insertText inserts text at the focus at once: in an <input> or <textarea>
// through the page (act.insertText, in time proportional to the text),
// elsewhere (contenteditable) with CDP's Input.insertText.
func (t *tab) insertText(ctx context.Context, text string) error {
	var r struct {
		Inserted bool `json:"inserted"`
	}
	err := t.evalJSON(ctx, inject.Call("act.insertText", text), &r)
	if err != nil && !errors.Is(err, errNoInjection) {
		return fmt.Errorf("type text: %w", err)
	}
	if r.Inserted {
		return nil
	}
	if err := (proto.InputInsertText{Text: text}).Call(t.client(ctx)); err != nil {
		return fmt.Errorf("type text: %w", err)
	}
	return nil
}

// modifierMask reads the modifiers of a click (BrowserGym's modifiers=:
// "Alt", "Control", "ControlOrMeta", "Meta", "Shift") into their keys.
func modifierMask(typ ActionType, names []string) ([]input.Key, error) {
	var keys []input.Key
	for _, n := range names {
		k, ok := modifierKeys[strings.ToLower(n)]
		if !ok {
			return nil, fmt.Errorf("%s: unknown modifier %q; modifiers are Alt, Control, ControlOrMeta, Meta and Shift", typ, n)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// keyEvent sends key k down or up as one real key event and keeps the
// modifiers held (t.mods) in step: keyboard_down and keyboard_up, and the
// modifiers a click holds.
func (t *tab) keyEvent(ctx context.Context, k input.Key, down bool) error {
	t.mu.Lock()
	mods := t.mods
	if bit := modifierBit(k); bit != 0 {
		if down {
			mods |= bit
		} else {
			mods &^= bit
		}
	}
	t.mu.Unlock()
	typ := proto.InputDispatchKeyEventTypeKeyUp
	if down {
		typ = proto.InputDispatchKeyEventTypeKeyDown
	}
	ev := k.Encode(typ, mods)
	if down && mods&(input.ModifierControl|input.ModifierAlt|input.ModifierMeta) != 0 && modifierBit(k) == 0 {
		// A shortcut produces no text (see press).
		ev.Type = proto.InputDispatchKeyEventTypeRawKeyDown
		ev.Text, ev.UnmodifiedText = "", ""
	}
	if err := ev.Call(t.client(ctx)); err != nil {
		return fmt.Errorf("key %s: %w", typ, err)
	}
	t.mu.Lock()
	t.mods = mods
	t.mu.Unlock()
	return nil
}

// holding runs act with the modifier keys held down: each pressed, act,
// then each released, as a person holding Shift while clicking does.
func (t *tab) holding(ctx context.Context, keys []input.Key, act func() error) error {
	for i, k := range keys {
		if err := t.keyEvent(ctx, k, true); err != nil {
			for j := i - 1; j >= 0; j-- {
				_ = t.keyEvent(ctx, keys[j], false)
			}
			return err
		}
	}
	err := act()
	for j := len(keys) - 1; j >= 0; j-- {
		if uerr := t.keyEvent(ctx, keys[j], false); uerr != nil && err == nil {
			err = uerr
		}
	}
	return err
}

func (e *Env) runKeyDown(ctx context.Context, t *tab, a Action) (int, error) {
	kc, err := parseKeyCombo(a.Key)
	if err != nil {
		return 1, actionErr("bad_action", "%v", err)
	}
	return 1, t.keyEvent(ctx, kc.key, true)
}

func (e *Env) runKeyUp(ctx context.Context, t *tab, a Action) (int, error) {
	kc, err := parseKeyCombo(a.Key)
	if err != nil {
		return 1, actionErr("bad_action", "%v", err)
	}
	return 1, t.keyEvent(ctx, kc.key, false)
}
