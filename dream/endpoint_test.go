package dream_test

import (
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/dream"
)

// The world model's prompts explain the delta format for the view they
// show (its key and how its text is cut into pieces), and show the page
// once: not the goal or the page in the view's place.
func TestPromptsExplainTheView(t *testing.T) {
	o := page("http://shop.test/", "a brass lamp")
	q := dream.Query{Goal: o.Goal, Obs: o, Action: `click("pa")`}
	for _, c := range []struct{ view, key, pieces string }{
		{dream.ViewHTML, `"html": {"edits"`, "the id is its data-semantic-id"},
		{dream.ViewAXTree, `"axtree": {"edits"`, "the id is the [id] at the start of the line"},
	} {
		for call, msgs := range map[string][]dream.Message{
			"delta":    dream.PromptMessages(q, c.view),
			"apply":    dream.ApplyMessages(q, "the lamp is gone", c.view),
			"describe": dream.DescribeMessages(q, c.view),
		} {
			user := msgs[len(msgs)-1].Content
			if call != "describe" && (!strings.Contains(user, c.key) || !strings.Contains(user, c.pieces)) {
				t.Errorf("%s call, %s view: the delta format does not name the view's key %s and pieces:\n%s", call, c.view, c.key, user)
			}
			if n := strings.Count(user, "URL: http://shop.test/"); n != 1 {
				t.Errorf("%s call, %s view: the page is shown %d times, not once:\n%s", call, c.view, n, user)
			}
			if strings.Contains(user, `"`+o.Goal+`"`) {
				t.Errorf("%s call, %s view: the goal stands in the delta format:\n%s", call, c.view, user)
			}
		}
	}
}
