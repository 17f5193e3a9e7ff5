package attack

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"
)

// libraryJSON is the attack library, the one copy of it: the server's
// attacked task sets draw from it, and the Python package ships it as
// webserv/attacks.json (setup.py copies it into the wheel).
//
//go:embed library.json
var libraryJSON []byte

var library = sync.OnceValues(func() ([]Spec, error) {
	return ParseLibrary(libraryJSON, "attack/library.json")
})

// Library is the attack library (docs/attacks.md): every page channel
// paired with every goal kind, each attack with an id (banner.url) and
// templates in the task's own words. The slice is shared: copy it before
// changing it.
func Library() []Spec {
	specs, err := library()
	if err != nil {
		panic(err) // the embedded file is checked by TestLibrary
	}
	return specs
}

// LibraryJSON is the library as the file holds it.
func LibraryJSON() []byte { return bytes.Clone(libraryJSON) }

// ParseLibrary reads a list of attacks, each checked and with an id of its
// own; where names the source in errors.
func ParseLibrary(b []byte, where string) ([]Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var specs []Spec
	if err := dec.Decode(&specs); err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("%s: no attacks", where)
	}
	seen := map[string]bool{}
	for i := range specs {
		s := &specs[i]
		if s.ID == "" || seen[s.ID] {
			return nil, fmt.Errorf("%s[%d]: every attack needs an id of its own, got %q", where, i, s.ID)
		}
		seen[s.ID] = true
		if err := s.Check(); err != nil {
			return nil, fmt.Errorf("%s[%d] (%s): %w", where, i, s.ID, err)
		}
	}
	return specs, nil
}
