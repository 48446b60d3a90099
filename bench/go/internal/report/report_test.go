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
	if !strings.Contains(md, "| uncontended | warden-go | 0.50x | 3.00x | 2.50x |") {
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

// What metrics cost is read from ratios of medians over the rounds, with the
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
	// Per round, scraped ÷ warden-go: 0.90 and 0.91; warden-go ÷ before: 1.00 and 1.10.
	want := "| parallel | ops/s | 1000.0 (1000.0–1000.0) | 1050.0 (1000.0–1100.0) | 950.0 (900.0–1000.0) | 0.90x (0.90–0.91x) | 1.05x (1.00–1.10x) |"
	if !strings.Contains(md, want) {
		t.Errorf("metrics cost row missing, want\n%s\nin:\n%s", want, md)
	}
	if !strings.Contains(md, "| parallel | warden-go-scraped | 3 | 10.00 | 20.00 | 5.0 | 0 | FAILED: scrapes failed |") {
		t.Errorf("the failed row is not shown as failed:\n%s", md)
	}
	if !strings.Contains(md, "| parallel | warden-go | 2 | 10.00 (10.00–10.00) |") {
		t.Errorf("medians count a failed round:\n%s", md)
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
