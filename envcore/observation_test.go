package envcore_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

func TestObservationDropsWhatPeopleCannotSee(t *testing.T) {
	t.Parallel()
	obs := mustReset(t, newEnv(t, envcore.Config{}), "/filter.html")
	for _, want := range []string{"Visible heading", "Visible paragraph", "Visible inside hidden", "Deep link", "Inline words", "Card body", "More details", "Below the fold", `alt="Shop logo"`} {
		if !strings.Contains(obs.HTML, want) {
			t.Errorf("html lacks %q:\n%s", want, obs.HTML)
		}
	}
	if strings.Contains(obs.HTML, "HIDDEN") {
		t.Errorf("html keeps hidden content:\n%s", obs.HTML)
	}
	if obs.Title != "Filtering" || !strings.HasSuffix(obs.URL, "/filter.html") {
		t.Errorf("url/title = %q/%q", obs.URL, obs.Title)
	}
}

func TestObservationStripsAttributesAndFlattensWrappers(t *testing.T) {
	t.Parallel()
	obs := mustReset(t, newEnv(t, envcore.Config{}), "/filter.html")
	for _, gone := range []string{"class=", "style=", "src=", "width="} {
		if strings.Contains(obs.HTML, gone) {
			t.Errorf("html keeps %s:\n%s", gone, obs.HTML)
		}
	}
	// data-* and whitelisted attributes stay.
	if !strings.Contains(obs.HTML, `data-testid="card"`) || !strings.Contains(obs.HTML, `title="Card"`) {
		t.Errorf("html lost data-testid or title:\n%s", obs.HTML)
	}
	// Four nested plain divs around the link collapse to the link itself.
	if regexp.MustCompile(`<div>\s*<div>`).MatchString(obs.HTML) {
		t.Errorf("wrapper chain not flattened:\n%s", obs.HTML)
	}
	if !strings.Contains(obs.HTML, `<a href="/deep" data-semantic-id="deep-link" data-clickable="true">Deep link</a>`) {
		t.Errorf("flattened link missing:\n%s", obs.HTML)
	}
	// Empty containers are pruned; an empty button (a control) and an image
	// with alt text are kept; an image with nothing to say is dropped.
	if strings.Count(obs.HTML, "<img") != 1 {
		t.Errorf("want exactly the one image with alt text:\n%s", obs.HTML)
	}
	if !contains(obs.Clickable, "close") {
		t.Errorf("empty button named by aria-label missing: %v", obs.Clickable)
	}
}

func TestInputAndSelectState(t *testing.T) {
	t.Parallel()
	obs := mustReset(t, newEnv(t, envcore.Config{}), "/inputs.html")
	in := map[string]envcore.InputField{}
	for _, x := range obs.Inputs {
		in[x.ID] = x
	}
	name := in["profile.full-name"]
	if name.Value != "Ada Lovelace" || !name.Editable || name.Type != "text" || name.Name != "fullname" {
		t.Errorf("full name = %+v", name)
	}
	if age := in["profile.age"]; age.NumericValue == nil || *age.NumericValue != 36 {
		t.Errorf("age numeric value = %+v", age)
	}
	if news := in["profile.newsletter"]; news.Checked == nil || !*news.Checked {
		t.Errorf("newsletter checkbox = %+v", news)
	}
	if free := in["profile.free"]; free.Checked == nil || *free.Checked {
		t.Errorf("free radio = %+v", free)
	}
	if in["profile.code"].Editable || in["profile.off"].Editable {
		t.Errorf("read-only or disabled input reported editable: %+v %+v", in["profile.code"], in["profile.off"])
	}
	if contains(obs.Clickable, "profile.off") {
		t.Errorf("disabled input is clickable")
	}
	if bio := in["profile.about-you"]; bio.Value != "Mathematician" || bio.Tag != "textarea" {
		t.Errorf("textarea = %+v", bio)
	}
	if notes := in["profile.notes"]; notes.Type != "contenteditable" || notes.Value != "Some notes" || !notes.Editable {
		t.Errorf("contenteditable = %+v", notes)
	}
	if born := in["profile.born"]; born.Value != "1815-12-10" || born.Type != "date" {
		t.Errorf("date = %+v", born)
	}
	// The autofocused search box is the focused element.
	if obs.Focused != "search" || !in["search"].Focused {
		t.Errorf("focused = %q, search = %+v", obs.Focused, in["search"])
	}
	if s := in["search"]; s.SelectionStart == nil || s.SelectionEnd == nil {
		t.Errorf("focused text field has no selection range: %+v", s)
	}

	if len(obs.Selects) != 3 {
		t.Fatalf("selects = %+v", obs.Selects)
	}
	country, size, langs := obs.Selects[0], obs.Selects[1], obs.Selects[2]
	// A label around a select names it by the label's own words, not the
	// options' text.
	if size.ID != "profile.size" {
		t.Errorf("select in a label = %q", size.ID)
	}
	if country.ID != "profile.country" || country.Value != "uk" || country.SelectedIndex != 0 || country.Multiple {
		t.Errorf("country = %+v", country)
	}
	if len(country.Options) != 3 || country.Options[1].ID != "profile.country.france" || country.Options[1].Value != "fr" || !country.Options[2].Disabled {
		t.Errorf("country options = %+v", country.Options)
	}
	if !langs.Multiple || strings.Join(langs.Selected, ",") != "English,French" {
		t.Errorf("langs = %+v", langs)
	}
	// Option ids are namespaced under their select and appear in the HTML.
	if !strings.Contains(obs.HTML, `<option data-semantic-id="profile.langs.italian">Italian</option>`) {
		t.Errorf("options missing from html:\n%s", obs.HTML)
	}
}

func TestHoverListenersAreFound(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	obs := mustReset(t, env, "/hover.html")
	// addEventListener('mouseenter') and an onmouseover property.
	if !contains(obs.Hoverable, "top.products") || !contains(obs.Hoverable, "top.shipping-info") {
		t.Fatalf("hoverable = %v\n%s", obs.Hoverable, obs.HTML)
	}
	if !strings.Contains(obs.HTML, `data-maybe-hoverable="true"`) {
		t.Errorf("hoverable elements not annotated:\n%s", obs.HTML)
	}
	if strings.Contains(obs.HTML, "Shoes") {
		t.Fatalf("the submenu shows before hovering:\n%s", obs.HTML)
	}
	obs = mustAct(t, env, `hover("top.products")`)
	if !contains(obs.Clickable, "top.shoes") {
		t.Fatalf("hover did not reveal the submenu: %v\n%s", obs.Clickable, obs.HTML)
	}
	obs = mustAct(t, env, `click("top.shoes")`)
	if !strings.Contains(obs.HTML, "picked shoes") {
		t.Errorf("clicking the revealed item did nothing:\n%s", obs.HTML)
	}
	obs = mustAct(t, env, `hover("top.shipping-info")`)
	if !strings.Contains(obs.HTML, "Free over $50") {
		t.Errorf("tooltip not shown after hover:\n%s", obs.HTML)
	}
}

func TestClickableDetection(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	obs := mustReset(t, env, "/pointer.html")
	want := []string{"pointer-card-with-a-child", "role-button", "onclick-attribute", "listener-div"}
	if strings.Join(obs.Clickable, " ") != strings.Join(want, " ") {
		t.Errorf("clickable = %v, want %v", obs.Clickable, want)
	}
	// The child of a cursor:pointer element inherits the cursor and is not
	// a target of its own; pointer-events:none and disabled are excluded.
	if strings.Contains(obs.HTML, `<span data-semantic-id`) || strings.Contains(obs.HTML, `disabled data-semantic-id`) {
		t.Errorf("non-targets got ids:\n%s", obs.HTML)
	}
	obs = mustAct(t, env, `click("listener-div")`)
	if !strings.Contains(obs.HTML, "listener clicked") {
		t.Errorf("click on a listener div did nothing:\n%s", obs.HTML)
	}
	obs = mustAct(t, env, `click("pointer-card-with-a-child")`)
	if !strings.Contains(obs.HTML, "card clicked") {
		t.Errorf("click on a cursor:pointer div did nothing:\n%s", obs.HTML)
	}
}

func TestSemanticIDsAreUniqueScopedAndStable(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	first := mustReset(t, env, "/repeated.html")
	for _, id := range []string{"add-to-cart", "add-to-cart-2", "add-to-cart-3", "login.email", "newsletter.email", "login.sign-in", "show-more"} {
		if !contains(first.Clickable, id) {
			t.Errorf("missing id %q in %v", id, first.Clickable)
		}
	}
	seen := map[string]bool{}
	for _, id := range first.Clickable {
		if seen[id] {
			t.Errorf("id %q appears twice", id)
		}
		seen[id] = true
	}
	// The delegating list container is not a target of its own.
	if len(first.Clickable) != 8 {
		t.Errorf("clickable = %v", first.Clickable)
	}

	// A second observation of the unchanged page gives the same ids.
	again, err := env.Observe(testCtx(t), envcore.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.HTML != first.HTML || strings.Join(again.Clickable, ",") != strings.Join(first.Clickable, ",") {
		t.Errorf("ids changed on an unchanged page:\n%s\n---\n%s", first.HTML, again.HTML)
	}

	// A new product at the top gets a new id; the old buttons keep theirs.
	obs := mustAct(t, env, `click("show-more")`)
	if !strings.Contains(obs.HTML, `<h3>Blue shirt</h3><button data-semantic-id="add-to-cart" `) ||
		!strings.Contains(obs.HTML, `<h3>New shirt</h3><button data-semantic-id="add-to-cart-4" `) {
		t.Errorf("ids not stable when content is added:\n%s", obs.HTML)
	}
	obs = mustAct(t, env, `click("add-to-cart-2")`)
	if !strings.Contains(obs.HTML, "1 items") {
		t.Errorf("clicking add-to-cart-2 did not add to cart:\n%s", obs.HTML)
	}
}

func TestIDsAreWrittenToTheLiveDOM(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/repeated.html")
	// The live element carries the id, so a script or a person in DevTools
	// finds the element an agent names.
	var placeholder string
	err := env.Evaluate(testCtx(t), `document.querySelector('[data-semantic-id="newsletter.email"]').placeholder + '/' +
		document.querySelector('[data-semantic-id="add-to-cart-3"]').closest('article').querySelector('h3').textContent`, &placeholder)
	if err != nil {
		t.Fatal(err)
	}
	if placeholder != "Email/Green shirt" {
		t.Errorf("live DOM lookup by semantic id = %q", placeholder)
	}
}

func TestShadowDOMAndIframeContentAreObserved(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	obs := mustReset(t, env, "/widgets.html")
	if !strings.Contains(obs.HTML, "Shadow price $5") || !contains(obs.Clickable, "shadow-add") {
		t.Errorf("open shadow root not walked:\n%s", obs.HTML)
	}
	if !contains(obs.Clickable, "load-in-frame") || !strings.Contains(obs.HTML, `<iframe title="Embedded">`) {
		t.Errorf("same-origin iframe not walked:\n%s", obs.HTML)
	}
}

func TestAXTreeAndScreenshot(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/inputs.html")
	obs, err := env.Observe(testCtx(t), envcore.ObserveOptions{AXTree: true, Screenshot: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`[profile.full-name] textbox "Full name" value="Ada Lovelace"`, `[profile.newsletter] checkbox "Newsletter" checked`,
		`[profile.country] combobox`, `[profile.country.france] option "France"`, `[profile.save-profile] button "Save profile"`} {
		if !strings.Contains(obs.AXTree, want) {
			t.Errorf("axtree lacks %q:\n%s", want, obs.AXTree)
		}
	}
	if !bytes.HasPrefix(obs.Screenshot, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("screenshot is not a PNG (%d bytes)", len(obs.Screenshot))
	}
	plain, err := env.Observe(testCtx(t), envcore.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.AXTree != "" || plain.Screenshot != nil {
		t.Errorf("extras returned without being asked for")
	}
}
