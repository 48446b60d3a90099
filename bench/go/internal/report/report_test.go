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
