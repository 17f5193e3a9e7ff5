package envcore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/envcore"
)

// BenchmarkFill measures a fill of long text into a textarea that counts
// its keydown and input events (/hostile.html): the action's time, which
// must grow with the text's length by a small constant.
//
//	go test ./envcore -run '^$' -bench Fill -benchtime 3x
func BenchmarkFill(b *testing.B) {
	env := newEnv(b, envcore.Config{IdleWindow: 100 * time.Millisecond, ActionTimeout: 120 * time.Second})
	mustReset(b, env, "/hostile.html")
	for _, kb := range []int{1, 10, 30} {
		b.Run(fmt.Sprintf("%dKB", kb), func(b *testing.B) {
			text := strings.Repeat("abcdefghi ", kb*1024/10)
			var act []time.Duration
			for i := 0; i < b.N; i++ {
				obs, info, err := env.StepText(testCtx(b), `fill("notes", "`+text+`")`)
				if err != nil {
					b.Fatalf("fill %d KB: %v", kb, err)
				}
				if info.ActionError != "" || inputValue(obs, "notes") != text {
					b.Fatalf("fill %d KB: %s (value of %d bytes)", kb, info.ActionError, len(inputValue(obs, "notes")))
				}
				act = append(act, info.Action)
			}
			report(b, "action", act)
		})
	}
}
