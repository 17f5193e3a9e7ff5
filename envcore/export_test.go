package envcore

// NewLauncher is Launch's launcher, for benchmarks that start Chromium the
// same way but drive it themselves (a mode Launch does not offer).
var NewLauncher = newLauncher
