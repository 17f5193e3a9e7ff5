package tasks

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// StorageState is a Playwright storage state file, the form in which
// WebArena keeps signed-in sessions (./.auth/<site>_state.json, made by
// its auto-login script).
type StorageState struct {
	Cookies []StateCookie `json:"cookies"`
	Origins []struct {
		Origin       string `json:"origin"`
		LocalStorage []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"localStorage"`
	} `json:"origins"`
}

// StateCookie is one cookie of a storage state.
type StateCookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain"`
	Path     string  `json:"path"`
	Expires  float64 `json:"expires"`
	HTTPOnly bool    `json:"httpOnly"`
	Secure   bool    `json:"secure"`
}

// LoadStorageState reads a storage state file.
func LoadStorageState(path string) (*StorageState, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("storage state: %w", err)
	}
	var st StorageState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("storage state %s: not a Playwright storage state: %w", path, err)
	}
	return &st, nil
}

// HostlessCookies returns the state's cookies without the host they were
// recorded on (an instance on another loopback port does not share it):
// each keeps its name, value and path, for the caller to set on its
// instance's URL.
func (st *StorageState) HostlessCookies() []StateCookie {
	out := make([]StateCookie, 0, len(st.Cookies))
	for _, c := range st.Cookies {
		c.Domain = ""
		if c.Path == "" || !strings.HasPrefix(c.Path, "/") {
			c.Path = "/"
		}
		out = append(out, c)
	}
	return out
}
