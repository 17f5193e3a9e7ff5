package envcore_test

import (
	"os"
	"testing"
	"time"

	"github.com/webserv-rl/webserv/envcore"
	"github.com/webserv-rl/webserv/internal/procstat"
)

// BenchmarkIdleEnvs measures what 16 environments cost while nobody steps
// them (agents thinking): the CPU time of Chromium and of this process over
// 5 s, in ms per environment per second. The resource watch samples each
// environment's pages every second between steps. It measures at most
// three windows whatever -benchtime says (make bench asks for 40).
//
//	go test ./envcore -run '^$' -bench IdleEnvs -benchtime 3x
func BenchmarkIdleEnvs(b *testing.B) {
	const n, idle = 16, 5 * time.Second
	for i := 0; i < n; i++ {
		mustReset(b, newEnv(b, envcore.Config{}), "/inputs.html")
	}
	var per []time.Duration
	for i := 0; i < min(b.N, 3); i++ {
		c0, err := procstat.TreeCPU(os.Getpid())
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(idle)
		c1, err := procstat.TreeCPU(os.Getpid())
		if err != nil {
			b.Fatal(err)
		}
		per = append(per, (c1-c0)/time.Duration(n)/time.Duration(idle/time.Second))
	}
	report(b, "cpu-per-env-per-s", per)
}
