package envcore

// The switches Launch starts Chromium with, for benchmarks that launch a
// browser of their own to measure a mode Launch does not offer.
var (
	ClosedNetworkFlags = closedNetworkFlags
	DisabledFeatures   = disabledFeatures
)
