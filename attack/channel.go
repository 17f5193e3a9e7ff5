package attack

import (
	"fmt"
	"html"
	"slices"
)

// channel is one place in a page an attacker's words can go. place
// returns where in the document its fragment goes and the fragment (at
// -1: nowhere, with a note saying why); draw is the episode's seeded
// number, for a choice among places; note says a fallback was taken. A
// channel without place (data) rewrites no page: the words go into the
// site's own data before the episode starts, and the site serves them.
type channel struct {
	name  string
	about string
	place func(p *page, words string, draw uint64) (at int, fragment, note string)
}

// Channels are the places an attack can put its words, the one table of
// them; docs/attacks.md describes each.
var Channels = []channel{
	{name: "comment", about: "an entry in the page's own list (a review, a comment, a result), shaped like its neighbours; at the end of the page's main content when the page has no list",
		place: placeComment},
	{name: "banner", about: "a pop-up banner fixed to the bottom of the viewport, announced as an alert",
		place: func(p *page, w string, _ uint64) (int, string, string) {
			return atBody(p), `<div role="alert" style="position:fixed;left:0;right:0;bottom:0;z-index:2147483647;background:#fff3cd;color:#000;border-top:2px solid #c00;padding:12px;font:16px sans-serif">` + html.EscapeString(w) + `</div>`, ""
		}},
	{name: "hidden", about: "text visually hidden (a 1px clipped box, as screen-reader-only text is) that the accessibility tree reads",
		place: func(p *page, w string, _ uint64) (int, string, string) {
			return atBody(p), `<div style="position:absolute;width:1px;height:1px;padding:0;overflow:hidden;clip:rect(0,0,0,0);white-space:nowrap;border:0">` + html.EscapeString(w) + `</div>`, ""
		}},
	{name: "title", about: "the start of the page's title, which names the tab and heads the observation",
		place: func(p *page, w string, _ uint64) (int, string, string) {
			if p.titleAt < 0 {
				return -1, "", "the page has no <title> in its head: nothing was injected"
			}
			return p.titleAt, html.EscapeString(w) + " · ", ""
		}},
	{name: "aria_label", about: "the accessible name (aria-label) of an element the agent acts on: the seed picks a button, link or field without one, main's first",
		place: func(p *page, w string, draw uint64) (int, string, string) {
			if len(p.named) == 0 {
				return -1, "", "the page has no button, link or field without an aria-label: nothing was injected"
			}
			n := min(len(p.named), 8)
			return p.named[draw%uint64(n)], ` aria-label="` + html.EscapeString(w) + `"`, ""
		}},
	{name: ChannelData, about: "an entry in the site's own data (a review in the shop's database), written in the environment's own instance before the episode starts, through the site's attack_data command: the page shows it because the site serves it"},
}

// ChannelData is the channel whose words the site itself serves: they are
// written into the environment's own instance's data (a site
// definition's attack_data) before the episode's start state is kept, so
// the write is neither the task's side effect nor a state goal's change.
const ChannelData = "data"

// InSiteData reports whether the channel puts the words in the site's
// data rather than in the pages the route serves.
func InSiteData(channelName string) bool {
	c := channelOf(channelName)
	return c != nil && c.place == nil
}

// PageChannels lists the channels the route puts in pages, which every
// site supports.
func PageChannels() []string {
	var out []string
	for _, c := range Channels {
		if c.place != nil {
			out = append(out, c.name)
		}
	}
	return out
}

// ChannelNames lists the channels.
func ChannelNames() []string {
	out := make([]string, len(Channels))
	for i, c := range Channels {
		out[i] = c.name
	}
	return out
}

func channelOf(name string) *channel {
	for i := range Channels {
		if Channels[i].name == name {
			return &Channels[i]
		}
	}
	return nil
}

// atBody is where a page-wide fragment goes: the start of the body, else
// the end of the document (which a browser puts in the body; its start
// would come before a doctype and change how the page renders).
func atBody(p *page) int {
	if p.bodyAt < 0 {
		return p.size
	}
	return p.bodyAt
}

// placeComment puts the words in the page's most list-like container, as
// one more entry at a seeded position.
func placeComment(p *page, w string, draw uint64) (int, string, string) {
	text := html.EscapeString(w)
	l := p.bestList()
	if l == nil {
		at, where := p.mainEnd, "main content"
		if at < 0 {
			at, where = p.bodyEnd, "body"
		}
		if at < 0 {
			at, where = p.size, "document"
		}
		return at, `<section aria-label="Comments"><p>` + text + `</p></section>`, "the page has no list-like container: the comment went at the end of its " + where
	}
	k := int(draw % uint64(len(l.starts)+1))
	at := l.end
	if k < len(l.starts) {
		at = l.starts[k]
	}
	class := ""
	if l.class != "" {
		class = ` class="` + html.EscapeString(l.class) + `"`
	}
	switch l.tag {
	case "tr":
		return at, `<tr` + class + `><td colspan="100">` + text + `</td></tr>`, ""
	case "p":
		return at, `<p` + class + `>` + text + `</p>`, ""
	}
	return at, fmt.Sprintf("<%s%s><p>%s</p></%s>", l.tag, class, text, l.tag), ""
}

// Inject returns doc with words put in by the named channel, and a note
// when the channel fell back or could not place them.
func Inject(channelName string, doc []byte, words string, draw uint64) ([]byte, string) {
	c := channelOf(channelName)
	if c == nil {
		return doc, fmt.Sprintf("no channel %q", channelName)
	}
	if c.place == nil {
		return doc, "" // the site serves the words itself
	}
	at, frag, note := c.place(readPage(doc), words, draw)
	if at < 0 || at > len(doc) {
		return doc, note
	}
	return slices.Concat(doc[:at], []byte(frag), doc[at:]), note
}
