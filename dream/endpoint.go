package dream

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/webserv-rl/webserv/trajectory"
)

// The answer formats of an endpoint world model (docs/dream.md).
const (
	// FormatDelta: one call; the model answers the change as a delta in
	// trajectory's format.
	FormatDelta = "delta"
	// FormatText: DynaWeb's. The model describes the change in words; a
	// second call turns the description into a delta.
	FormatText = "text"
)

// Endpoint is a world model behind an OpenAI-compatible chat endpoint.
// It is asked with the prompt PromptMessages builds and must answer one
// JSON object; an answer that is not one, or whose delta does not apply
// to the observation, is asked again (Chat.Retries), and then the step
// fails with a *ModelError.
type Endpoint struct {
	Chat   Chat
	Format string
	view   string
}

// NewEndpoint is an endpoint world model answering in format (FormatDelta
// or FormatText) on view (ViewAXTree or ViewHTML).
func NewEndpoint(chat Chat, format, view string) (*Endpoint, error) {
	if format == "" {
		format = FormatDelta
	}
	if format != FormatDelta && format != FormatText {
		return nil, fmt.Errorf("world model format %q: use %s (a structured delta) or %s (DynaWeb's change description, applied by a second call)", format, FormatDelta, FormatText)
	}
	if view == "" {
		view = ViewAXTree
	}
	if view != ViewAXTree && view != ViewHTML {
		return nil, fmt.Errorf("world model view %q: use %s or %s", view, ViewAXTree, ViewHTML)
	}
	if chat.BaseURL == "" {
		return nil, fmt.Errorf("world model endpoint: give its base URL, like http://127.0.0.1:8000/v1")
	}
	return &Endpoint{Chat: chat, Format: format, view: view}, nil
}

// Name is the endpoint's model name (or its URL).
func (m *Endpoint) Name() string {
	if m.Chat.Model != "" {
		return m.Chat.Model
	}
	return m.Chat.BaseURL
}

// View is the text view the model reads and predicts.
func (m *Endpoint) View() string { return m.view }

// answer is a world model's JSON answer. Keys beyond these are ignored;
// the delta is read strictly.
type answer struct {
	Reasoning string          `json:"reasoning"`
	Change    string          `json:"change"`
	Delta     json.RawMessage `json:"delta"`
	Terminal  bool            `json:"terminal"`
}

// Predict asks the endpoint.
func (m *Endpoint) Predict(ctx context.Context, q Query) (Prediction, error) {
	q.Obs = inView(q.Obs, m.view)
	var p Prediction
	if m.Format == FormatText {
		var a answer
		err := m.Chat.ask(ctx, DescribeMessages(q, m.view), func(out string) error {
			var err error
			a, err = readAnswer(out, false)
			if err == nil && strings.TrimSpace(a.Change) == "" {
				err = fmt.Errorf(`the answer has no "change": describe what the action changes on the page`)
			}
			return err
		})
		if err != nil {
			return p, &ModelError{Model: m.Name(), Err: fmt.Errorf("describing the change: %w", err)}
		}
		p.Reasoning, p.Terminal = strings.TrimSpace(a.Reasoning+"\n"+a.Change), a.Terminal
		err = m.Chat.ask(ctx, ApplyMessages(q, a.Change, m.view), func(out string) error {
			d, err := readDelta(out, q.Obs)
			p.Delta = d
			return err
		})
		if err != nil {
			return p, &ModelError{Model: m.Name(), Err: fmt.Errorf("applying the change description: %w", err)}
		}
		return p, nil
	}
	err := m.Chat.ask(ctx, PromptMessages(q, m.view), func(out string) error {
		a, err := readAnswer(out, true)
		if err != nil {
			return err
		}
		d, err := parseDelta(a.Delta, q.Obs)
		p = Prediction{Delta: d, Terminal: a.Terminal, Reasoning: a.Reasoning}
		return err
	})
	if err != nil {
		return Prediction{}, &ModelError{Model: m.Name(), Err: err}
	}
	return p, nil
}

func readAnswer(out string, needDelta bool) (answer, error) {
	var a answer
	raw, err := jsonObject(out)
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("not the JSON object asked for: %w", err)
	}
	if needDelta && len(a.Delta) == 0 {
		return a, fmt.Errorf(`the answer has no "delta"`)
	}
	return a, nil
}

// readDelta reads the second call's answer of the text format: {"delta": ...}.
func readDelta(out string, obs trajectory.Observation) (trajectory.Delta, error) {
	a, err := readAnswer(out, true)
	if err != nil {
		return trajectory.Delta{}, err
	}
	return parseDelta(a.Delta, obs)
}

// parseDelta reads a delta strictly and checks that it applies to obs.
func parseDelta(raw json.RawMessage, obs trajectory.Observation) (trajectory.Delta, error) {
	d, err := trajectory.ParseDelta(raw)
	if err != nil {
		return d, err
	}
	if _, err := trajectory.Apply(obs, d); err != nil {
		return d, fmt.Errorf("the delta does not apply to the observation: %w", err)
	}
	return d, nil
}

// worldModelSystem is the system prompt of both formats.
const worldModelSystem = `You are a world model of web pages. A web agent pursues a goal on a website. ` +
	`Given the page it sees and the action it takes, you predict the page it sees next.`

// deltaFormat explains the delta format in the prompt.
const deltaFormat = `A delta is a JSON object with these keys, each optional:
  "set": {field: new value}: fields replaced whole: "url", "title", "last_action_error", "focused", "active_tab", or the whole "%[1]s" text;
  "unset": [field, ...]: fields that become empty;
  "%[1]s": {"edits": [...]}: edits of the %[2]s, split into pieces (%[3]s). Each edit is
     {"op": "change", "id": ID, "text": NEW_PIECE} or {"op": "remove", "id": ID}, naming a piece by the id it carries,
     or with "at": N (the piece's position, from 0) in place of "id";
     {"op": "insert", "at": N, "text": NEW_PIECE} inserts before the piece at position N of the old text (N = number of pieces: at the end);
  "clickable", "hoverable": {"remove": [ids], "insert": [{"at": N, "item": id}]}: the ids an action can click or hover.
Give only what changes: an unchanged page is {}. A new page is {"set": {"url": ..., "title": ..., "%[1]s": ...}}.
An action that fails sets "last_action_error" to why.`

// deltaFormatFor is deltaFormat for a view: its text's key, its name and
// how it is cut into pieces.
func deltaFormatFor(view string) string {
	name, pieces := viewNotes(view)
	return fmt.Sprintf(deltaFormat, view, name, pieces)
}

func viewNotes(view string) (name, pieces string) {
	if view == ViewHTML {
		return "page's HTML", "one piece per element: its start tag, its text and the end tags after it; the id is its data-semantic-id"
	}
	return "page's accessibility tree", "one piece per line; the id is the [id] at the start of the line"
}

// observationText is an observation as the prompt shows it.
func observationText(o trajectory.Observation, view string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\nTitle: %s\n", o.URL, o.Title)
	if o.LastActionError != "" {
		fmt.Fprintf(&b, "Error of the previous action: %s\n", o.LastActionError)
	}
	text := o.AXTree
	if view == ViewHTML {
		text = o.HTML
	}
	name, _ := viewNotes(view)
	fmt.Fprintf(&b, "The %s:\n%s\n", name, text)
	return b.String()
}

// PromptMessages are the chat messages of the delta format: the system
// prompt, then the goal, the observation (URL, title, the view's text)
// and the action, asking for
// {"reasoning": "...", "delta": DELTA, "terminal": false}.
func PromptMessages(q Query, view string) []Message {
	user := fmt.Sprintf("Goal: %s\n\n%s\nAction: %s\n\n%s\n\n"+
		`Answer with one JSON object and nothing else: {"reasoning": "why the page changes so", "delta": DELTA, "terminal": false}. `+
		`Set "terminal" to true only when no further action can change anything (the site is gone or the session ended).`,
		q.Goal, observationText(q.Obs, view), q.Action, deltaFormatFor(view))
	return []Message{{Role: "system", Content: worldModelSystem}, {Role: "user", Content: user}}
}

// DescribeMessages are the first call of the text format (DynaWeb's):
// it asks for {"reasoning": "...", "change": "what changes, in words",
// "terminal": false}.
func DescribeMessages(q Query, view string) []Message {
	user := fmt.Sprintf("Goal: %s\n\n%s\nAction: %s\n\n"+
		`Describe how the page changes after this action. Answer with one JSON object and nothing else: `+
		`{"reasoning": "your reasoning about the action's effect", "change": "the change, in words: what appears, disappears or changes, and the new URL if any", "terminal": false}. `+
		`Set "terminal" to true only when no further action can change anything.`,
		q.Goal, observationText(q.Obs, view), q.Action)
	return []Message{{Role: "system", Content: worldModelSystem}, {Role: "user", Content: user}}
}

// ApplyMessages are the second call of the text format: the observation
// and the change description, asking for {"delta": DELTA}.
func ApplyMessages(q Query, change, view string) []Message {
	user := fmt.Sprintf("%s\nAfter the action %s, the page changes so:\n%s\n\nWrite this change as a delta.\n%s\n\n"+
		`Answer with one JSON object and nothing else: {"delta": DELTA}.`,
		observationText(q.Obs, view), q.Action, change, deltaFormatFor(view))
	return []Message{{Role: "system", Content: "You turn descriptions of changes to web pages into exact structured edits."}, {Role: "user", Content: user}}
}
