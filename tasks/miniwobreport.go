package tasks

// MiniWoBReport is a MiniWoB page's own account of a step (info.miniwob
// in the step reply): the page's seed and, while the page is the task's,
// its reward figures; else why the episode ended.
type MiniWoBReport struct {
	PageSeed int64 `json:"page_seed"`
	// Error says why the episode ended with reward 0 when the page is no
	// longer the task's; the figures are then absent.
	Error string `json:"error,omitempty"`
	*MiniWoBFigures
}

// MiniWoBFigures are the page's reward figures, as its globals have them.
type MiniWoBFigures struct {
	RawReward float64 `json:"raw_reward"` // WOB_RAW_REWARD_GLOBAL
	Reward    float64 `json:"reward"`     // WOB_REWARD_GLOBAL: scaled by time where the task says so
	// Reason is the page's own value for why it is done (MiniWoB sets
	// any JavaScript value; a timeout is the string "timed out"), so it
	// stays open.
	Reason any  `json:"reason"`
	Done   bool `json:"done"`
}
