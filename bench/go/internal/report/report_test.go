package report

import (
	"strings"
	"testing"

	"github.com/warden-locks/warden/bench/go/internal/workload"
)

func f(v float64) *float64 { return &v }

// The ratio table divides Warden's figure by etcd's for the same workload
// (latency: below 1x is Warden faster; ops/s: above 1x is Warden faster).
func TestMarkdownRatios(t *testing.T) {
	r := Results{Machine: map[string]any{}, Runs: []workload.Row{
		{Workload: "uncontended", Backend: "etcd-go-concurrency", P50ms: f(4), P99ms: f(10), OpsPerS: f(200)},
		{Workload: "uncontended", Backend: "warden-go", P50ms: f(2), P99ms: f(30), OpsPerS: f(500)},
		{Workload: "parallel", Backend: "warden-go", P50ms: f(1), OpsPerS: f(1)},
	}}
	md := Markdown(r)
	if !strings.Contains(md, "| uncontended | warden-go | 0.50x; medians 0.50x | 3.00x; medians 3.00x | 2.50x; medians 2.50x |") {
		t.Errorf("ratio row missing:\n%s", md)
	}
	if strings.Contains(md, "| parallel | warden-go | 1.00x") || strings.Contains(md, "| parallel | warden-go | –") {
		t.Errorf("a workload without an etcd row got a ratio:\n%s", md)
	}
}

func row(w, backend string, rnd int, p50, ops float64) workload.Row {
	return workload.Row{Workload: w, Backend: backend, P50ms: f(p50), P99ms: f(2 * p50), OpsPerS: f(ops),
		Extra: map[string]any{"round": rnd}}
}

// What metrics cost is read from ratios over the rounds, with the
// round-by-round ratios' range beside them as the noise; a failed row counts
// in neither (the requirement: at most 5 % of 64-client throughput, nothing
// measurable on uncontended p50, shown scraped and unscraped in one run).
func TestMetricsCostRatios(t *testing.T) {
	r := Results{Machine: map[string]any{}, Runs: []workload.Row{
		row("parallel", "warden-go-before", 1, 10, 1000),
		row("parallel", "warden-go", 1, 10, 1000),
		row("parallel", "warden-go-scraped", 1, 10, 900),
		row("parallel", "warden-go-scraped", 2, 10, 1000),
		row("parallel", "warden-go", 2, 10, 1100),
		row("parallel", "warden-go-before", 2, 10, 1000),
		row("parallel", "warden-go-scraped", 3, 10, 5),
		row("parallel", "warden-go", 3, 10, 5000),
	}}
	r.Runs[6].Extra["failed"] = "scrapes failed"
	r.Runs[7].Extra["failed"] = "lost"
	md := Markdown(r)
	// warden-go: median of 1000 and 1100 is 1050; scraped: 950; before: 1000.
	// Per round, scraped ÷ warden-go: 0.90 and 0.91 (median 0.905); warden-go
	// ÷ before: 1.00 and 1.10 (median 1.05). Of the medians: 0.90 and 1.05.
	want := "| parallel | ops/s | 1000.0 (1000.0–1000.0) | 1050.0 (1000.0–1100.0) | 950.0 (900.0–1000.0) | 0.90x (0.90–0.91x) | 0.90x | 1.05x (1.00–1.10x) | 1.05x |"
	if !strings.Contains(md, want) {
		t.Errorf("metrics cost row missing, want\n%s\nin:\n%s", want, md)
	}
	if !strings.Contains(md, "| parallel | warden-go-scraped | 3 | 10.00 | 20.00 | 5.0 | 0 | FAILED: scrapes failed |") {
		t.Errorf("the failed row is not shown as failed:\n%s", md)
	}
}

// The headline ratio of two interleaved backends is the median of the
// round-by-round ratios (each round a pair measured minutes apart), not
// the ratio of the medians, which pairs figures of different rounds; both
// are printed, and they differ when the machine drifts between rounds.
func TestPairedMedianIsTheHeadline(t *testing.T) {
	r := Results{Machine: map[string]any{}, Runs: []workload.Row{
		row("parallel", "warden-go", 1, 10, 100), row("parallel", "warden-go-scraped", 1, 10, 90),
		row("parallel", "warden-go-scraped", 2, 10, 220), row("parallel", "warden-go", 2, 10, 200),
		row("parallel", "warden-go", 3, 10, 300), row("parallel", "warden-go-scraped", 3, 10, 240),
	}}
	md := Markdown(r)
	// Round by round: 0.90, 1.10, 0.80: median 0.90. Medians: 220 ÷ 200 = 1.10.
	want := "| parallel | ops/s | – | 200.0 (100.0–300.0) | 220.0 (90.0–240.0) | 0.90x (0.80–1.10x) | 1.10x | – | – |"
	if !strings.Contains(md, want) {
		t.Errorf("want\n%s\nin:\n%s", want, md)
	}
}

// The metrics-cost table gives the leader's CPU per cycle (the busiest
// node's server_cpu_ms_per_op_by_node, as gobench records it or as JSON
// decodes it), so a cost on the hot path shows beside the throughput.
func TestMetricsCostLeaderCPU(t *testing.T) {
	a, b := row("uncontended", "warden-go", 1, 2, 400), row("uncontended", "warden-go-before", 1, 2, 400)
	a.Extra["server_cpu_ms_per_op_by_node"] = []float64{0.5, 1.25, 0.5}
	b.Extra["server_cpu_ms_per_op_by_node"] = []any{1.0, 0.4, 0.4}
	md := Markdown(Results{Machine: map[string]any{}, Runs: []workload.Row{a, b}})
	want := "| uncontended | leader CPU ms per cycle | 1.000 | 1.250 | – | – | – | 1.25x | 1.25x |"
	if !strings.Contains(md, want) {
		t.Errorf("want\n%s\nin:\n%s", want, md)
	}
	if m := maxOf("not a list"); m != nil {
		t.Errorf("maxOf(a string) = %v, want nil", *m)
	}
}

// Warden's medians are printed once: the "Medians over the rounds" table
// leaves out the backends the metrics-cost table gives, and is left out
// when nothing remains; another backend keeps its medians there.
func TestMediansAreNotPrintedTwice(t *testing.T) {
	runs := []workload.Row{
		row("parallel", "warden-go", 1, 10, 1000), row("parallel", "warden-go-scraped", 1, 10, 900),
		row("parallel", "warden-go-scraped", 2, 10, 950), row("parallel", "warden-go", 2, 10, 1100),
	}
	md := Markdown(Results{Machine: map[string]any{}, Runs: runs})
	if strings.Contains(md, "Medians over the rounds") {
		t.Errorf("a medians table repeats the metrics-cost table:\n%s", md)
	}
	runs = append(runs, row("parallel", "etcd-go-concurrency", 1, 20, 500), row("parallel", "etcd-go-concurrency", 2, 30, 700))
	md = Markdown(Results{Machine: map[string]any{}, Runs: runs})
	_, medians, _ := strings.Cut(md, "Medians over the rounds")
	medians, _, _ = strings.Cut(medians, "Warden ÷ etcd")
	if !strings.Contains(medians, "| parallel | etcd-go-concurrency | 2 | 25.00 (20.00–30.00) |") {
		t.Errorf("etcd's medians are missing:\n%s", md)
	}
	if strings.Contains(medians, "| warden-go") {
		t.Errorf("Warden's medians are printed twice:\n%s", md)
	}
}

// The footer says what was measured: the run's start and end, the load, and
// each Warden binary with the commit the caller gave and its sha256.
func TestFooterNamesTheBinaries(t *testing.T) {
	md := Markdown(Results{Machine: map[string]any{
		"date_utc": "2026-12-01T22:30:00Z", "date_utc_end": "2026-12-01T22:36:00Z",
		"loadavg_start": "0.10 0.20 0.30", "loadavg_end": "5.00 4.00 3.00",
		"warden_bin": "/b/warden-abc", "warden_commit": "abc1234", "warden_bin_sha256": "ff00",
		"warden_bin_before": "/b/warden-before", "warden_commit_before": "d49b711", "warden_bin_before_sha256": "",
	}})
	for _, want := range []string{
		"run from 2026-12-01T22:30:00Z to 2026-12-01T22:36:00Z\n",
		"load average at start: 0.10 0.20 0.30, at end: 5.00 4.00 3.00\n",
		"--warden-bin: /b/warden-abc, built at commit abc1234, sha256 ff00\n",
		"--warden-bin-before: /b/warden-before, built at commit d49b711, sha256 not recorded\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("footer lacks %q:\n%s", want, md)
		}
	}
}

// An even count's median is the mean of the middle two; none has none.
func TestMedian(t *testing.T) {
	if m := Median([]float64{4, 1, 3, 2}); m == nil || *m != 2.5 {
		t.Errorf("Median(4,1,3,2) = %v", m)
	}
	if m := Median([]float64{3, 1, 2}); m == nil || *m != 2 {
		t.Errorf("Median(3,1,2) = %v", m)
	}
	if Median(nil) != nil {
		t.Errorf("Median() is not nil")
	}
}

// The Node client is set beside the Go client of the same round, with each
// client's CPU, and the goals are judged on the paired median.
func TestNodeVsGo(t *testing.T) {
	cpu := func(r workload.Row, v any) workload.Row { r.Extra["client_cpu_ms_per_op"] = v; return r }
	r := Results{Machine: map[string]any{}, Runs: []workload.Row{
		cpu(row("uncontended", "warden-go", 1, 2, 400), 0.5),
		cpu(row("uncontended", "warden-node", 1, 2.8, 300), 1),
		cpu(row("parallel", "warden-go", 1, 20, 2000), 0.25),
		cpu(row("parallel", "warden-node", 1, 40, 1000), 0.5),
		cpu(row("uncontended", "warden-node", 2, 3.2, 300), 1.5),
		cpu(row("uncontended", "warden-go", 2, 2, 400), 0.5),
		cpu(row("parallel", "warden-node", 2, 40, 1600), 0.5),
		cpu(row("parallel", "warden-go", 2, 20, 2000), 0.25),
	}}
	md := Markdown(r)
	for _, want := range []string{
		// p50 ratios 1.4 and 1.6: median 1.5, at the goal.
		"| uncontended | p50 ms | 2.00 (2.00–2.00) | 3.00 (2.80–3.20) | 1.50x (1.40–1.60x) | 1.50x |",
		"| uncontended | client CPU ms per cycle | 0.500 (0.500–0.500) | 1.250 (1.000–1.500) | 2.50x (2.00–3.00x) | 2.50x |",
		// rates 0.5 and 0.8: median 0.65, below the goal.
		"| parallel | ops/s | 2000.0 (2000.0–2000.0) | 1300.0 (1000.0–1600.0) | 0.65x (0.50–0.80x) | 0.65x |",
		"- uncontended p50, Node ÷ Go: 1.50x (1.40–1.60x) (goal: at most 1.5x): met",
		"- 64-client cycles/s, Node ÷ Go: 0.65x (0.50–0.80x) (goal: at least 0.7x): not met",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("missing\n%s\nin:\n%s", want, md)
		}
	}
	// Without Node rows there is no such table.
	if md := Markdown(Results{Machine: map[string]any{}, Runs: r.Runs[:1]}); strings.Contains(md, "warden-node ÷ warden-go") {
		t.Errorf("a Node table without Node rows:\n%s", md)
	}
}
