// Package report writes the Go driver's results: a JSON file in the shape of
// loadgen's latest.json ({"machine": {...}, "runs": [...]}) and a short
// markdown table with Warden's ratio to etcd for each workload.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/warden-locks/warden/bench/go/internal/workload"
)

// Results is the whole file.
type Results struct {
	Machine map[string]any `json:"machine"`
	Runs    []workload.Row `json:"runs"`
}

// WriteJSON writes r to path (through a temp file renamed over it, so a
// reader never sees half a file).
func WriteJSON(path string, r Results) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func num(v *float64, digits int) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.*f", digits, *v)
}

// ratio is a/b as "1.23x", or "–".
func ratio(a, b *float64) string {
	if a == nil || b == nil || *b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", *a / *b)
}

// Markdown is every row, then Warden's ratio to etcd per workload (p50 and
// p99: Warden ÷ etcd, lower is better; ops/s: Warden ÷ etcd, higher is better).
func Markdown(r Results) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| workload | backend | p50 ms | p99 ms | ops/s | count | errors |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, row := range r.Runs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %d |\n", row.Workload, row.Backend,
			num(row.P50ms, 2), num(row.P99ms, 2), num(row.OpsPerS, 1), row.Count, row.Errors)
	}
	find := func(workload, backend string) *workload.Row {
		for i := range r.Runs {
			if r.Runs[i].Workload == workload && r.Runs[i].Backend == backend {
				return &r.Runs[i]
			}
		}
		return nil
	}
	var ratios strings.Builder
	for _, w := range []string{"uncontended", "parallel", "contended"} {
		etcd := find(w, "etcd-go-concurrency")
		if etcd == nil {
			continue
		}
		for _, wb := range []string{"warden-go", "warden-go-insecure"} {
			wr := find(w, wb)
			if wr == nil {
				continue
			}
			fmt.Fprintf(&ratios, "| %s | %s | %s | %s | %s |\n", w, wb,
				ratio(wr.P50ms, etcd.P50ms), ratio(wr.P99ms, etcd.P99ms), ratio(wr.OpsPerS, etcd.OpsPerS))
		}
	}
	if ratios.Len() > 0 {
		fmt.Fprintf(&b, "\nWarden ÷ etcd-go-concurrency (latency: lower is better; ops/s: higher is better)\n\n")
		fmt.Fprintf(&b, "| workload | backend | p50 | p99 | ops/s |\n|---|---|---:|---:|---:|\n%s", ratios.String())
	}
	if la, ok := r.Machine["loadavg_start"]; ok {
		fmt.Fprintf(&b, "\nload average at start: %v, at end: %v\n", la, r.Machine["loadavg_end"])
	}
	return b.String()
}
