// Package suites holds WebServ's benchmark suites behind `webserv bench`:
//
//   - system: the WebServ paper's Table 2 on this machine (launch, reset and
//     fork latency, bytes written and memory per instance) for Incus
//     copy-on-write clones against a full copy of the state;
//   - step: per-action latency split into action, settle and extraction on
//     the bundled shop, at idle windows of 500 and 200 ms, with
//     observation sizes;
//   - scale: N environments at once, each with its own shop instance and
//     a scripted policy: steps per second, p50/p95 step latency, memory
//     per environment, CPU; and the largest N whose p95 stays under twice
//     the single-environment figure;
//   - density: environment pairs (a browser context and its own Incus
//     container of the bundled shop, made through the server) held open
//     and stepping at once until memory, the step latency, errors or
//     Incus give out: memory per pair, steps/s per core, reset p50/p99
//     under load, and a fleet sizing table.
//
// The peer (BrowserGym) and settle-strategy suites drive Playwright and
// live in bench/*.py. Every suite writes <suite>.json, <suite>.md and
// <suite>.png into a results folder; each has a smoke mode that runs in
// seconds (CI checks its output) and a full mode (`make bench-all`).
package suites
