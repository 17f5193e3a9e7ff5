package envcore_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/webserv-rl/webserv/envcore"
)

// A client can rely on the action error codes: one closed set that the Go
// side, the injected actions.js and docs/envcore.md all use.
func TestActionErrorCodesAreOneClosedSet(t *testing.T) {
	t.Parallel()
	codes := envcore.ActionErrorCodes()

	// The injected script answers only codes of the set.
	env := newEnv(t, envcore.Config{})
	mustReset(t, env, "/a.html")
	var js []string
	if err := env.Evaluate(testCtx(t), "window.__webserv.act.codes", &js); err != nil {
		t.Fatal(err)
	}
	if len(js) == 0 {
		t.Fatal("actions.js lists no codes")
	}
	for _, c := range js {
		if !slices.Contains(codes, c) {
			t.Errorf("actions.js answers %q, which is not in envcore.ActionErrorCodes", c)
		}
	}

	// The Go side sets only codes of the set.
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	used := regexp.MustCompile(`actionErr\("([a-z_]+)"|ActionErrorCode\b[^\n]*"([a-z_]+)"\s*$`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(src), "\n") {
			for _, m := range used.FindAllStringSubmatch(line, -1) {
				c := m[1] + m[2]
				if !slices.Contains(codes, c) {
					t.Errorf("%s uses action error code %q, which is not in envcore.ActionErrorCodes", f, c)
				}
			}
		}
	}

	// The docs explain exactly the set, in its order.
	doc, err := os.ReadFile("../docs/envcore.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "### Error codes")
	if !ok {
		t.Fatal("docs/envcore.md has no \"### Error codes\" section")
	}
	section, _, _ = strings.Cut(section, "\n#")
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	if !slices.Equal(documented, codes) {
		t.Errorf("docs/envcore.md documents %v, envcore.ActionErrorCodes is %v", documented, codes)
	}
}
