// Package report writes the Go driver's results: a JSON file in the shape of
// loadgen's latest.json ({"machine": {...}, "runs": [...]}) and a markdown
// summary: every row; with several rounds, each backend's medians with
// their min–max (those the metrics-cost table does not already give);
// Warden's ratio to etcd for each workload; when the backends ran, what
// metrics cost (warden-go-scraped ÷ warden-go, and warden-go ÷
// warden-go-before) with the scrapes themselves; and a footer with the load,
// the commits and the binaries' sha256; and when bench/node's driver ran
// on warden-go's clusters, the Node client beside the Go client
// (warden-node ÷ warden-go, with each client's CPU per cycle and the
// goals: 64-client rate at least 0.7x, uncontended p50 at most 1.5x).
//
// Ratios between two backends: the rounds run the backends interleaved (A B
// C, C B A, ...), so a round's two rows are a pair measured minutes apart,
// and the headline ratio is the median of the round-by-round ratios, with
// their min–max (how far the noise reaches); the ratio of the two medians
// is printed beside it.
package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// times is v as "1.23x", or "–".
func times(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.2fx", *v)
}

var workloads = []string{"uncontended", "parallel", "contended"}

func failed(r workload.Row) bool {
	_, ok := r.Extra["failed"]
	return ok
}

func round(r workload.Row) int {
	if v, ok := r.Extra["round"].(int); ok {
		return v
	}
	return 1
}

// A measure picks one figure of a row.
type measure struct {
	name   string
	digits int
	get    func(workload.Row) *float64
}

var measures = []measure{
	{"p50 ms", 2, func(r workload.Row) *float64 { return r.P50ms }},
	{"p99 ms", 2, func(r workload.Row) *float64 { return r.P99ms }},
	{"ops/s", 1, func(r workload.Row) *float64 { return r.OpsPerS }},
}

// leaderCPU is the busiest node's CPU time per cycle (the row's
// server_cpu_ms_per_op_by_node, warm-up included): the leader's, which
// does the most work of the three.
var leaderCPU = measure{"leader CPU ms per cycle", 3, func(r workload.Row) *float64 { return maxOf(r.Extra["server_cpu_ms_per_op_by_node"]) }}

// clientCPU is the client's own CPU time per cycle (the row's
// client_cpu_ms_per_op: gobench's process for the Go client, the driver's
// for the Node client; connects and warm-up included).
var clientCPU = measure{"client CPU ms per cycle", 3, func(r workload.Row) *float64 { return number(r.Extra["client_cpu_ms_per_op"]) }}

// number is v as a float (gobench records float64, a row read back from
// JSON may hold an int); nil for anything else.
func number(v any) *float64 {
	switch x := v.(type) {
	case float64:
		return &x
	case int:
		f := float64(x)
		return &f
	}
	return nil
}

// maxOf is the largest of a list of numbers ([]float64 as gobench records
// it, []any as JSON decodes it); nil for anything else or an empty list.
func maxOf(v any) *float64 {
	var vs []float64
	switch l := v.(type) {
	case []float64:
		vs = l
	case []any:
		for _, x := range l {
			f, ok := x.(float64)
			if !ok {
				return nil
			}
			vs = append(vs, f)
		}
	}
	if len(vs) == 0 {
		return nil
	}
	m := slices.Max(vs)
	return &m
}

// rows are the measured (not failed) rows of one workload and backend.
func rows(r Results, w, backend string) []workload.Row {
	var out []workload.Row
	for _, row := range r.Runs {
		if row.Workload == w && row.Backend == backend && !failed(row) {
			out = append(out, row)
		}
	}
	return out
}

// Median of the values (the mean of the middle two for an even count).
func Median(vs []float64) *float64 {
	if len(vs) == 0 {
		return nil
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return &m
}

func values(rs []workload.Row, m measure) []float64 {
	var vs []float64
	for _, r := range rs {
		if v := m.get(r); v != nil {
			vs = append(vs, *v)
		}
	}
	return vs
}

// spread is "median (min–max)", or the one value for one round.
func spread(vs []float64, digits int) string {
	med := Median(vs)
	if med == nil {
		return "–"
	}
	if len(vs) == 1 {
		return num(med, digits)
	}
	return fmt.Sprintf("%s (%.*f–%.*f)", num(med, digits), digits, slices.Min(vs), digits, slices.Max(vs))
}

// ratios of a ÷ b for one measure: Paired is the median of the
// round-by-round ratios (rounds in which both have a figure), PairedMin and
// PairedMax their range, Rounds how many there were; OfMedians is the ratio
// of the two medians over all their rounds.
type ratios struct {
	Paired, PairedMin, PairedMax *float64
	Rounds                       int
	OfMedians                    string
}

func pairedRatios(as, bs []workload.Row, m measure) ratios {
	out := ratios{OfMedians: ratio(Median(values(as, m)), Median(values(bs, m)))}
	var per []float64
	for _, a := range as {
		for _, b := range bs {
			if round(a) == round(b) && m.get(a) != nil && m.get(b) != nil && *m.get(b) != 0 {
				per = append(per, *m.get(a) / *m.get(b))
			}
		}
	}
	if len(per) > 0 {
		lo, hi := slices.Min(per), slices.Max(per)
		out.Paired, out.PairedMin, out.PairedMax, out.Rounds = Median(per), &lo, &hi, len(per)
	}
	return out
}

// paired is the headline: "0.96x (0.92–1.01x)", the range only with two or
// more paired rounds.
func (r ratios) paired() string {
	out := times(r.Paired)
	if r.Rounds >= 2 {
		out += fmt.Sprintf(" (%.2f–%.2fx)", *r.PairedMin, *r.PairedMax)
	}
	return out
}

// cell is the headline with the ratio of medians beside it, for a table
// that has one column per comparison.
func (r ratios) cell() string {
	return fmt.Sprintf("%s; medians %s", r.paired(), r.OfMedians)
}

// backends in the order they first ran.
func backends(r Results) []string {
	var out []string
	for _, row := range r.Runs {
		if !slices.Contains(out, row.Backend) {
			out = append(out, row.Backend)
		}
	}
	return out
}

// Markdown is every row, then (with several rounds) the medians the
// metrics-cost table does not give, then Warden's ratio to etcd per
// workload (p50 and p99: Warden ÷ etcd, lower is better; ops/s: Warden ÷
// etcd, higher is better), then what metrics cost, then the footer.
func Markdown(r Results) string {
	var b strings.Builder
	rounds := 1
	for _, row := range r.Runs {
		rounds = max(rounds, round(row))
	}
	fmt.Fprintf(&b, "| workload | backend | round | p50 ms | p99 ms | ops/s | count | errors |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range r.Runs {
		errs := fmt.Sprint(row.Errors)
		if failed(row) {
			errs = fmt.Sprintf("FAILED: %v", row.Extra["failed"])
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %d | %s |\n", row.Workload, row.Backend, round(row),
			num(row.P50ms, 2), num(row.P99ms, 2), num(row.OpsPerS, 1), row.Count, errs)
	}
	if rounds > 1 {
		var med strings.Builder
		for _, w := range workloads {
			for _, be := range backends(r) {
				rs := rows(r, w, be)
				if len(rs) == 0 || (metricsCostCovers(r, w) && slices.Contains(metricsCostBackends, be)) {
					continue
				}
				fmt.Fprintf(&med, "| %s | %s | %d | %s | %s | %s |\n", w, be, len(rs),
					spread(values(rs, measures[0]), 2), spread(values(rs, measures[1]), 2), spread(values(rs, measures[2]), 1))
			}
		}
		if med.Len() > 0 {
			fmt.Fprintf(&b, "\nMedians over the rounds (min–max)\n\n| workload | backend | rounds | p50 ms | p99 ms | ops/s |\n|---|---|---:|---:|---:|---:|\n%s", med.String())
		}
	}
	var etcdRatios strings.Builder
	for _, w := range workloads {
		etcd := rows(r, w, "etcd-go-concurrency")
		if len(etcd) == 0 {
			continue
		}
		for _, wb := range []string{"warden-go", "warden-go-insecure", "warden-go-scraped", "warden-go-before"} {
			wr := rows(r, w, wb)
			if len(wr) == 0 {
				continue
			}
			fmt.Fprintf(&etcdRatios, "| %s | %s | %s | %s | %s |\n", w, wb,
				pairedRatios(wr, etcd, measures[0]).cell(), pairedRatios(wr, etcd, measures[1]).cell(), pairedRatios(wr, etcd, measures[2]).cell())
		}
	}
	if etcdRatios.Len() > 0 {
		fmt.Fprintf(&b, "\nWarden ÷ etcd-go-concurrency (latency: lower is better; ops/s: higher is better): the median of the round-by-round ratios (their min–max); the ratio of the medians\n\n")
		fmt.Fprintf(&b, "| workload | backend | p50 | p99 | ops/s |\n|---|---|---:|---:|---:|\n%s", etcdRatios.String())
	}
	b.WriteString(metricsCost(r, rounds))
	b.WriteString(NodeVsGo(r, rounds))
	b.WriteString(footer(r.Machine))
	return b.String()
}

// footer is the load at the start and end, the load note, and what the
// Warden binaries were: the commits the caller gave and each file's sha256.
func footer(m map[string]any) string {
	var b strings.Builder
	if start, ok := m["date_utc"]; ok {
		end := m["date_utc_end"]
		if end == nil {
			end = "not recorded"
		}
		fmt.Fprintf(&b, "run from %v to %v\n", start, end)
	}
	if la, ok := m["loadavg_start"]; ok {
		fmt.Fprintf(&b, "load average at start: %v, at end: %v\n", la, m["loadavg_end"])
	}
	if note, ok := m["load_note"].(string); ok && note != "" {
		fmt.Fprintf(&b, "load note: %s\n", note)
	}
	for _, bin := range []struct{ label, commit, path, sha string }{
		{"--warden-bin", "warden_commit", "warden_bin", "warden_bin_sha256"},
		{"--warden-bin-before", "warden_commit_before", "warden_bin_before", "warden_bin_before_sha256"},
	} {
		path, _ := m[bin.path].(string)
		if path == "" {
			continue
		}
		commit, _ := m[bin.commit].(string)
		if commit == "" {
			commit = "not given"
		}
		sha, _ := m[bin.sha].(string)
		if sha == "" {
			sha = "not recorded"
		}
		fmt.Fprintf(&b, "%s: %s, built at commit %s, sha256 %s\n", bin.label, path, commit, sha)
	}
	if b.Len() == 0 {
		return ""
	}
	return "\n" + b.String()
}

// metricsCostBackends are the backends the metrics-cost table gives.
var metricsCostBackends = []string{"warden-go-before", "warden-go", "warden-go-scraped"}

// metricsCostCovers: the metrics-cost table has workload w (warden-go ran
// beside warden-go-scraped or warden-go-before).
func metricsCostCovers(r Results, w string) bool {
	return len(rows(r, w, "warden-go")) > 0 && (len(rows(r, w, "warden-go-scraped")) > 0 || len(rows(r, w, "warden-go-before")) > 0)
}

// metricsCost is, when warden-go ran beside warden-go-scraped or
// warden-go-before, each workload's figures side by side (medians over the
// rounds, min–max) with the ratios warden-go-scraped ÷ warden-go and
// warden-go ÷ warden-go-before (the median of the round-by-round ratios
// with their min–max, and the ratio of the medians), then the scrapes.
func metricsCost(r Results, rounds int) string {
	var b strings.Builder
	for _, w := range workloads {
		if !metricsCostCovers(r, w) {
			continue
		}
		base, scraped, before := rows(r, w, "warden-go"), rows(r, w, "warden-go-scraped"), rows(r, w, "warden-go-before")
		if b.Len() == 0 {
			what := "the one run"
			if rounds > 1 {
				what = fmt.Sprintf("medians over %d rounds (min–max); the ratios are paired by round: the median of the %d round-by-round ratios (their min–max), and beside it the ratio of the medians", rounds, rounds)
			}
			fmt.Fprintf(&b, "\nWhat metrics cost: %s. scraped ÷ warden-go is the cost of being scraped every second; warden-go ÷ before is the cost of the metrics build against the one before it, unscraped (latency and CPU: above 1x is slower; ops/s: below 1x is slower)\n\n", what)
			fmt.Fprintf(&b, "| workload | figure | warden-go-before | warden-go | warden-go-scraped | scraped ÷ warden-go | (of medians) | warden-go ÷ before | (of medians) |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
		}
		for _, m := range append(slices.Clone(measures), leaderCPU) {
			sc, bf := pairedRatios(scraped, base, m), pairedRatios(base, before, m)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", w, m.name,
				spread(values(before, m), m.digits), spread(values(base, m), m.digits), spread(values(scraped, m), m.digits),
				sc.paired(), sc.OfMedians, bf.paired(), bf.OfMedians)
		}
	}
	var s strings.Builder
	for _, row := range r.Runs {
		if row.Backend != "warden-go-scraped" {
			continue
		}
		n, _ := row.Extra["scrapes"].(int)
		bytes, _ := row.Extra["scrape_bytes"].(int64)
		per := "–"
		if n > 0 {
			per = fmt.Sprint(bytes / int64(n))
		}
		p50, _ := row.Extra["scrape_p50_ms"].(*float64)
		mx, _ := row.Extra["scrape_max_ms"].(*float64)
		fmt.Fprintf(&s, "| %s | %d | %d | %v | %s | %s | %s |\n", row.Workload, round(row), n, row.Extra["scrape_failures"], per, num(p50, 2), num(mx, 2))
	}
	if s.Len() > 0 {
		fmt.Fprintf(&b, "\nScrapes of warden-go-scraped (every node, the whole workload: clients' connects and warm-up included)\n\n")
		fmt.Fprintf(&b, "| workload | round | scrapes | failed | bytes per scrape | scrape p50 ms | scrape max ms |\n|---|---:|---:|---:|---:|---:|---:|\n%s", s.String())
	}
	return b.String()
}

// The Node client's goals against the Go client on the same cluster.
const (
	// NodeRateGoal: the Node client's 64-client cycles/s at least this
	// times the Go client's.
	NodeRateGoal = 0.7
	// NodeP50Goal: its uncontended p50 at most this times the Go client's.
	NodeP50Goal = 1.5
)

// NodeVsGo is, when bench/node's driver ran (rows of warden-node beside
// warden-go's, on the same clusters), each workload's figures side by side
// (medians over the rounds, min–max) with warden-node ÷ warden-go (the
// median of the round-by-round ratios with their min–max, and the ratio of
// the medians), then the two goals, judged on the paired median.
func NodeVsGo(r Results, rounds int) string {
	var b strings.Builder
	var verdicts []string
	for _, w := range []string{"uncontended", "parallel"} {
		gr, nr := rows(r, w, "warden-go"), rows(r, w, "warden-node")
		if len(gr) == 0 || len(nr) == 0 {
			continue
		}
		if b.Len() == 0 {
			what := "the one run"
			if rounds > 1 {
				what = fmt.Sprintf("medians over %d rounds (min–max); the ratios are paired by round (the two clients on one cluster, one right after the other): the median of the round-by-round ratios (their min–max), and beside it the ratio of the medians", rounds)
			}
			fmt.Fprintf(&b, "\nThe Node client beside the Go client (warden-node ÷ warden-go, on the same clusters): %s. Latency and CPU: above 1x is the Node client slower or costlier; ops/s: below 1x is it slower\n\n", what)
			fmt.Fprintf(&b, "| workload | figure | warden-go | warden-node | node ÷ go | (of medians) |\n|---|---|---:|---:|---:|---:|\n")
		}
		for _, m := range append(slices.Clone(measures), clientCPU, leaderCPU) {
			rt := pairedRatios(nr, gr, m)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", w, m.name,
				spread(values(gr, m), m.digits), spread(values(nr, m), m.digits), rt.paired(), rt.OfMedians)
		}
		switch w {
		case "uncontended":
			verdicts = append(verdicts, verdict("uncontended p50", pairedRatios(nr, gr, measures[0]), "at most", NodeP50Goal, func(v float64) bool { return v <= NodeP50Goal }))
		case "parallel":
			verdicts = append(verdicts, verdict("64-client cycles/s", pairedRatios(nr, gr, measures[2]), "at least", NodeRateGoal, func(v float64) bool { return v >= NodeRateGoal }))
		}
	}
	if len(verdicts) > 0 {
		fmt.Fprintf(&b, "\nGoals (on the median of the paired ratios):\n\n%s", strings.Join(verdicts, ""))
	}
	return b.String()
}

func verdict(what string, rt ratios, bound string, goal float64, ok func(float64) bool) string {
	state := "not measured"
	if rt.Paired != nil {
		state = "not met"
		if ok(*rt.Paired) {
			state = "met"
		}
	}
	return fmt.Sprintf("- %s, Node ÷ Go: %s (goal: %s %.1fx): %s\n", what, rt.paired(), bound, goal, state)
}
