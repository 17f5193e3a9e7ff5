package shop

import (
	"embed"
	"fmt"
)

//go:embed tasks/verified/*.json
var verifiedFS embed.FS

// VerifiedTaskFile returns the WebArena-Verified-style version of a bundled
// task set ("shopping" or "cms"): its navigation and state-changing tasks,
// under the same ids, in WebArena-Verified's task format (a structured
// answer, and the network event the trace must hold), graded by the
// webarena-verified package's evaluators.
func VerifiedTaskFile(site string) ([]byte, error) {
	b, err := verifiedFS.ReadFile("tasks/verified/" + site + ".json")
	if err != nil {
		return nil, fmt.Errorf("the bundled shop has no Verified-style task set %q; it has shopping and cms", site)
	}
	return b, nil
}
