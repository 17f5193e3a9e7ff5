package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/webserv-rl/webserv/envcore"
)

// metrics are the server's Prometheus metrics, on a registry of its own so
// several servers (tests) can live in one process.
type metrics struct {
	reg        *prometheus.Registry
	envsLive   prometheus.Gauge
	steps      prometheus.Counter
	stepTime   prometheus.Histogram
	errors     *prometheus.CounterVec
	requests   *prometheus.CounterVec
	reclaimed  prometheus.Counter
	notSettled prometheus.Counter
}

// newMetrics makes the metrics; browsers is read at each scrape for the
// browser processes' (webserv_browsers*, webserv_browser_*).
func newMetrics(browsers func() envcore.BrowserHealth) *metrics {
	m := &metrics{
		reg:      prometheus.NewRegistry(),
		envsLive: prometheus.NewGauge(prometheus.GaugeOpts{Name: "webserv_envs_live", Help: "Environments open now."}),
		steps:    prometheus.NewCounter(prometheus.CounterOpts{Name: "webserv_steps_total", Help: "Steps executed."}),
		stepTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "webserv_step_seconds", Help: "Step latency: action, settle and extraction.",
			Buckets: []float64{.05, .1, .2, .3, .5, .6, .75, 1, 1.5, 2, 3, 5, 10, 30},
		}),
		errors:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "webserv_errors_total", Help: "Error replies by code."}, []string{"code"}),
		requests:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "webserv_requests_total", Help: "Requests by op."}, []string{"op"}),
		reclaimed:  prometheus.NewCounter(prometheus.CounterOpts{Name: "webserv_envs_reclaimed_total", Help: "Environments closed after their idle TTL."}),
		notSettled: prometheus.NewCounter(prometheus.CounterOpts{Name: "webserv_steps_not_settled_total", Help: "Steps whose page did not settle in time."}),
	}
	m.reg.MustRegister(m.envsLive, m.steps, m.stepTime, m.errors, m.requests, m.reclaimed, m.notSettled,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range []struct {
		name, help string
		gauge      bool
		read       func(envcore.BrowserHealth) int64
	}{
		{"webserv_browsers", "Browser processes the server keeps running.", true, func(h envcore.BrowserHealth) int64 { return int64(h.Browsers) }},
		{"webserv_browsers_alive", "Browser processes running now.", true, func(h envcore.BrowserHealth) int64 { return int64(h.Alive) }},
		{"webserv_browser_crashes_total", "Browser processes that died without being closed (killed, out of memory, crashed).", false, func(h envcore.BrowserHealth) int64 { return h.Crashes }},
		{"webserv_browser_restarts_total", "Replacement browser processes started after a crash.", false, func(h envcore.BrowserHealth) int64 { return h.Restarts }},
		{"webserv_browser_restart_failures_total", "Replacement browser processes that failed to start (retried after a back-off).", false, func(h envcore.BrowserHealth) int64 { return h.RestartFailures }},
	} {
		f := func() float64 { return float64(c.read(browsers())) }
		if c.gauge {
			m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: c.name, Help: c.help}, f))
		} else {
			m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help}, f))
		}
	}
	return m
}
