package inject

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed preview.js
var previewJS string

// Preview is an expression that shows (op "show") or removes (op "hide")
// the action preview's outline of the element with semantic id id, labelled
// label (preview.js). It is evaluated on demand, never injected.
func Preview(op, id, label string) string {
	args, err := json.Marshal([]string{op, id, label})
	if err != nil {
		panic(fmt.Sprintf("inject.Preview: %v", err)) // strings always marshal
	}
	return fmt.Sprintf("(%s)(...%s)", previewJS, args)
}
