package logs

import (
	"fmt"

	"go.uber.org/zap"
)

// New builds the commands' logger at level (see the package doc); its
// lines go to paths (stderr when none is given).
func New(level zap.AtomicLevel, paths ...string) (*zap.Logger, error) {
	cfg := zap.NewDevelopmentConfig() // the console encoder: one readable line per entry
	cfg.Development = false
	cfg.Level = level
	if len(paths) > 0 {
		cfg.OutputPaths = paths
	}
	log, err := cfg.Build(zap.AddStacktrace(zap.ErrorLevel))
	if err != nil {
		return nil, fmt.Errorf("build the logger (outputs %v): %w", cfg.OutputPaths, err)
	}
	return log, nil
}
