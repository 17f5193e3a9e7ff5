package miniwob

import "slices"

// realTimeTasks are the tasks whose reward measures real time on the
// page's clock (sorted): button-delay pays for waiting a given time
// between two clicks, chase-circle and hover-shape for how long the
// pointer stayed on a moving target. Their pages keep the real clock
// (their randomness is still seeded): a virtual clock, which moves only
// when the page reads it, would pay an agent for time it did not spend.
var realTimeTasks = []string{
	"button-delay",
	"chase-circle",
	"hover-shape",
}

// RealTime reports whether task name keeps the real clock (realTimeTasks).
func RealTime(name string) bool {
	_, ok := slices.BinarySearch(realTimeTasks, name)
	return ok
}
