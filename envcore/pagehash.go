package envcore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// PageHash is a digest of what the page shows in o: its URL and title,
// the stripped HTML, the clickable and hoverable ids, the inputs and
// selects with their live state, the focused element, the tabs and the
// viewport (size and scroll). Two observations of the same page state have
// the same hash whatever else the observation carried: the last action and
// its error, dialogs, chat, screenshots, the accessibility tree (present
// only when asked for) and the extraction's figures are left out.
//
// Forks verify themselves with it (the server's info.fork.exact) and
// recorded trajectories carry it per step (obs_hash), so a replay can say
// at which step it first saw something else.
func (o *Observation) PageHash() string {
	page := struct {
		URL       string        `json:"url"`
		Title     string        `json:"title"`
		HTML      string        `json:"html"`
		Clickable []string      `json:"clickable"`
		Hoverable []string      `json:"hoverable"`
		Inputs    []InputField  `json:"inputs"`
		Selects   []SelectField `json:"selects"`
		Focused   string        `json:"focused"`
		Tabs      []Tab         `json:"tabs"`
		ActiveTab int           `json:"active_tab"`
		Viewport  ViewportState `json:"viewport"`
	}{o.URL, o.Title, o.HTML, o.Clickable, o.Hoverable, o.Inputs, o.Selects, o.Focused, o.Tabs, o.ActiveTab, o.Viewport}
	b, err := json.Marshal(page)
	if err != nil {
		// Plain strings, numbers and slices of them always encode.
		panic("envcore: page hash: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}
