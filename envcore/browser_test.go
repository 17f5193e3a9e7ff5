package envcore_test

import (
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/webserv-rl/webserv/envcore"
)

// $WEBSERV_CHROMIUM_FLAGS reaches the browser a command launches, dashes or
// not, after the switches WebServ sets itself.
func TestChromiumFlagsFromTheEnvironment(t *testing.T) {
	t.Setenv("WEBSERV_CHROMIUM_FLAGS", "--user-agent=WebServ-Flag-Test lang=de-DE")
	b, err := envcore.Launch(testCtx(t), zap.NewNop(), envcore.BrowserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	env := b.NewEnv(envcore.Config{})
	defer env.Close()
	obs, _, err := env.Reset(testCtx(t), site.URL+"/agent.html")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(obs.HTML, "WebServ-Flag-Test") {
		t.Errorf("the user agent switch did not reach the browser:\n%s", obs.HTML)
	}
}
