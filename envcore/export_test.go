package envcore

import (
	"context"

	"github.com/go-rod/rod"
)

// NewLauncher is Launch's launcher, for benchmarks that start Chromium the
// same way but drive it themselves (a mode Launch does not offer).
var NewLauncher = newLauncher

// BrowserRod is b's rod connection, for benchmarks that read Chromium
// directly (its traces).
func BrowserRod(b *Browser) *rod.Browser { return b.rod }

// BrowserPID is the process id of b's Chromium.
func BrowserPID(b *Browser) int { return b.launcher.PID() }

// CallActive sends a raw CDP command to e's active tab (probe experiments).
func CallActive(ctx context.Context, e *Env, method string, params map[string]any) (string, error) {
	t := e.activeTab()
	raw, err := t.b.rod.Call(ctx, string(t.session), method, params)
	return string(raw), err
}
