package workload

import (
	"encoding/json"
	"testing"
	"time"
)

// Quantiles are nearest-rank, as hdrhistogram's value_at_quantile gives
// loadgen's rows, so the Go rows and the Rust rows read the same way.
func TestQuantileIsNearestRank(t *testing.T) {
	var l Latencies
	for i := 100; i >= 1; i-- { // unsorted on purpose
		l = append(l, time.Duration(i)*time.Millisecond)
	}
	cases := map[float64]float64{0.5: 50, 0.99: 99, 0.999: 100, 0.01: 1}
	for q, want := range cases {
		got := l.Quantile(q)
		if got == nil || *got != want {
			t.Errorf("Quantile(%v) = %v, want %v ms", q, got, want)
		}
	}
	if l[0] != 100*time.Millisecond {
		t.Errorf("Quantile sorted the caller's slice")
	}
	if (Latencies{}).Quantile(0.5) != nil {
		t.Errorf("an empty set has no quantile")
	}
}

// A row's workload-specific fields sit beside the named ones in the JSON, as
// loadgen's `#[serde(flatten)]` writes them; a clash never overwrites a named field.
func TestRowFlattensExtra(t *testing.T) {
	p50 := 1.5
	r := Row{Workload: "contended", Backend: "warden-go", Safe: true, P50ms: &p50, Count: 3,
		Extra: map[string]any{"grants": 3, "grants_per_client": []int{1, 2}, "count": 99}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["grants"] != float64(3) || m["p50_ms"] != 1.5 || m["count"] != float64(3) || m["p99_ms"] != nil {
		t.Errorf("row JSON = %s", b)
	}
	if _, ok := m["Extra"]; ok {
		t.Errorf("Extra written as a field: %s", b)
	}
}

// A row read back (bench/node's rows reach gobench this way) has its named
// fields and the rest in Extra, counts as ints.
func TestRowRoundTrips(t *testing.T) {
	in := `{"workload":"parallel","backend":"warden-node","config":"c","safe":true,"p50_ms":1.5,"p99_ms":null,"p999_ms":3,"ops_per_s":100.5,"count":7,"errors":1,"ops_total":9,"client_cpu_ms_per_op":0.25,"client":"x"}`
	var r Row
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if r.Workload != "parallel" || r.Backend != "warden-node" || *r.P50ms != 1.5 || r.P99ms != nil || r.Count != 7 || r.Errors != 1 {
		t.Errorf("named fields: %+v", r)
	}
	if r.Extra["ops_total"] != 9 || r.Extra["client_cpu_ms_per_op"] != 0.25 || r.Extra["client"] != "x" || len(r.Extra) != 3 {
		t.Errorf("Extra = %#v", r.Extra)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Row
	if err := json.Unmarshal(b, &back); err != nil || back.Extra["ops_total"] != 9 || *back.OpsPerS != 100.5 {
		t.Errorf("round trip: %s (%v)", b, err)
	}
}
