package envcore

import "github.com/go-rod/rod"

// NewLauncher is Launch's launcher, for benchmarks that start Chromium the
// same way but drive it themselves (a mode Launch does not offer).
var NewLauncher = newLauncher

// BrowserRod is b's rod connection, for benchmarks that read Chromium
// directly (its traces).
func BrowserRod(b *Browser) *rod.Browser { return b.rod }

// BrowserPID is the process id of b's Chromium.
func BrowserPID(b *Browser) int { return b.launcher.PID() }
