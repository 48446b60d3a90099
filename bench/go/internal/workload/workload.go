// Package workload runs the three workloads of bench/src/workload.rs that
// the Go driver measures, with the same definitions and sizes, so that its
// rows sit beside loadgen's:
//
//   - uncontended: one client, acquire + release of a fresh resource,
//     Iterations timed cycles after Warmup untimed ones.
//   - parallel: ParallelClients clients, each cycling on its own resource,
//     for 1 s of warm-up and then ParallelSeconds counted; a cycle has 10 s.
//   - contended: ContendedClients clients, one resource, waiting acquires
//     (30 s each) for ContendedSeconds; latency is the handoff: the next
//     grant's arrival − the previous holder's release send (both in this
//     process); grants per second and per client.
//
// Each returns one Row; errors of single operations are counted, not fatal.
package workload

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/warden-locks/warden/bench/go/internal/lockers"
)

// Params are the sizes of each workload (bench/src/workload.rs's Params).
type Params struct {
	Warmup           int
	Iterations       int
	ParallelClients  int
	ParallelSeconds  int
	ContendedClients int
	ContendedSeconds int
}

// Full are loadgen's full-run sizes.
func Full() Params {
	return Params{Warmup: 200, Iterations: 2000, ParallelClients: 64, ParallelSeconds: 10, ContendedClients: 16, ContendedSeconds: 10}
}

// Quick are loadgen's --quick sizes.
func Quick() Params {
	return Params{Warmup: 30, Iterations: 200, ParallelClients: 64, ParallelSeconds: 3, ContendedClients: 16, ContendedSeconds: 2}
}

// Smoke are tiny sizes that check the drivers end to end (gobench --smoke),
// e.g. against a debug build: they measure nothing.
func Smoke() Params {
	return Params{Warmup: 3, Iterations: 20, ParallelClients: 4, ParallelSeconds: 1, ContendedClients: 2, ContendedSeconds: 1}
}

// Row is one row of the results, in the shape of latest.json's `runs`.
type Row struct {
	Workload string   `json:"workload"`
	Backend  string   `json:"backend"`
	Config   string   `json:"config"`
	Safe     bool     `json:"safe"`
	P50ms    *float64 `json:"p50_ms"`
	P99ms    *float64 `json:"p99_ms"`
	P999ms   *float64 `json:"p999_ms"`
	OpsPerS  *float64 `json:"ops_per_s"`
	// Count is the timed operations; Errors the failed ones.
	Count  int `json:"count"`
	Errors int `json:"errors"`
	// Extra holds the workload-specific fields (flattened into the row).
	Extra map[string]any `json:"-"`
}

// Latencies collects durations; quantiles are nearest-rank.
type Latencies []time.Duration

// Quantile in milliseconds (nil when empty), rounded to the microsecond.
func (l Latencies) Quantile(q float64) *float64 {
	if len(l) == 0 {
		return nil
	}
	s := slices.Clone(l)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	i = min(max(i, 0), len(s)-1)
	v := math.Round(float64(s[i].Microseconds())) / 1000
	return &v
}

func newRow(workload string, t lockers.Target, config string, l Latencies) Row {
	return Row{
		Workload: workload, Backend: t.Backend, Config: config, Safe: true,
		P50ms: l.Quantile(0.5), P99ms: l.Quantile(0.99), P999ms: l.Quantile(0.999),
		Count: len(l), Extra: map[string]any{},
	}
}

func ptr(v float64) *float64 { return &v }

func tag() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%x", binary.BigEndian.Uint32(b[:]))
}

// cycle is one operation: acquire a free resource, release it.
func cycle(ctx context.Context, c lockers.Client, resource string) error {
	h, err := c.Lock(ctx, resource)
	if err != nil {
		return fmt.Errorf("lock %s: %w", resource, err)
	}
	if err := h.Release(ctx); err != nil {
		return fmt.Errorf("release %s: %w", resource, err)
	}
	return nil
}

func connect(ctx context.Context, t lockers.Target) (lockers.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := t.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: connect: %w", t.Backend, err)
	}
	return c, nil
}

func connectN(ctx context.Context, t lockers.Target, n int) ([]lockers.Client, error) {
	clients := make([]lockers.Client, 0, n)
	for range n {
		c, err := connect(ctx, t)
		if err != nil {
			closeAll(clients)
			return nil, err
		}
		clients = append(clients, c)
	}
	return clients, nil
}

func closeAll(clients []lockers.Client) {
	for _, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.Close(ctx)
		cancel()
	}
}

// Uncontended: one client, Warmup then Iterations cycles on fresh resources.
func Uncontended(ctx context.Context, t lockers.Target, config string, p Params) (Row, error) {
	c, err := connect(ctx, t)
	if err != nil {
		return Row{}, err
	}
	defer closeAll([]lockers.Client{c})
	tg := tag()
	for i := range p.Warmup {
		if err := cycle(ctx, c, fmt.Sprintf("w%s-%d", tg, i)); err != nil {
			return Row{}, err
		}
	}
	lat := make(Latencies, 0, p.Iterations)
	started := time.Now()
	for i := range p.Iterations {
		t0 := time.Now()
		if err := cycle(ctx, c, fmt.Sprintf("u%s-%d", tg, i)); err != nil {
			return Row{}, err
		}
		lat = append(lat, time.Since(t0))
	}
	wall := time.Since(started).Seconds()
	r := newRow("uncontended", t, config, lat)
	r.OpsPerS = ptr(float64(len(lat)) / wall)
	r.Extra["ops_total"] = p.Warmup + p.Iterations
	return r, nil
}

// Parallel: ParallelClients clients, each cycling on its own resource.
func Parallel(ctx context.Context, t lockers.Target, config string, p Params) (Row, error) {
	clients, err := connectN(ctx, t, p.ParallelClients)
	if err != nil {
		return Row{}, err
	}
	defer closeAll(clients)
	warm, runFor := time.Second, time.Duration(p.ParallelSeconds)*time.Second
	tg := tag()
	start := time.Now()
	measureFrom, stopAt := start.Add(warm), start.Add(warm+runFor)
	type result struct {
		lat         Latencies
		errors, all int
	}
	results := make([]result, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			resource := fmt.Sprintf("p%s-%d", tg, i)
			var r result
			for {
				t0 := time.Now()
				if !t0.Before(stopAt) || ctx.Err() != nil {
					break
				}
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := cycle(cctx, c, resource)
				cancel()
				switch {
				case err != nil:
					r.errors++
				case !t0.Before(measureFrom):
					r.lat = append(r.lat, time.Since(t0))
					r.all++
				default:
					r.all++
				}
			}
			results[i] = r
		})
	}
	wg.Wait()
	var lat Latencies
	errors, all := 0, 0
	for _, r := range results {
		lat = append(lat, r.lat...)
		errors += r.errors
		all += r.all
	}
	row := newRow("parallel", t, config, lat)
	row.OpsPerS = ptr(float64(len(lat)) / runFor.Seconds())
	row.Errors = errors
	row.Extra["ops_total"] = all
	row.Extra["clients"] = p.ParallelClients
	return row, nil
}

// Contended: ContendedClients clients, one resource, waiting acquires.
func Contended(ctx context.Context, t lockers.Target, config string, p Params) (Row, error) {
	clients, err := connectN(ctx, t, p.ContendedClients)
	if err != nil {
		return Row{}, err
	}
	defer closeAll(clients)
	resource := "c" + tag()
	var (
		mu          sync.Mutex
		lastRelease time.Time // zero: no release to measure from
	)
	stopAt := time.Now().Add(time.Duration(p.ContendedSeconds) * time.Second)
	type result struct {
		lat            Latencies
		grants, errors int
	}
	results := make([]result, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			var r result
			for time.Now().Before(stopAt) && ctx.Err() == nil {
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				h, err := c.Lock(wctx, resource)
				if err != nil {
					cancel()
					r.errors++
					continue
				}
				grantedAt := time.Now()
				inTime := !grantedAt.After(stopAt)
				mu.Lock()
				if !lastRelease.IsZero() && inTime {
					r.lat = append(r.lat, grantedAt.Sub(lastRelease))
				}
				// Set just before the release is sent: the next grant's
				// arrival minus this is the handoff.
				lastRelease = time.Now()
				mu.Unlock()
				if inTime {
					r.grants++
				}
				if err := h.Release(wctx); err != nil {
					r.errors++
				}
				cancel()
			}
			results[i] = r
		})
	}
	wg.Wait()
	var lat Latencies
	perClient := make([]int, 0, len(results))
	total, errors := 0, 0
	for _, r := range results {
		lat = append(lat, r.lat...)
		perClient = append(perClient, r.grants)
		total += r.grants
		errors += r.errors
	}
	row := newRow("contended", t, config, lat)
	row.OpsPerS = ptr(float64(total) / float64(p.ContendedSeconds))
	row.Errors = errors
	row.Extra["clients"] = p.ContendedClients
	row.Extra["grants"] = total
	row.Extra["grants_per_client"] = perClient
	row.Extra["latency_is"] = "handoff: release send -> next grant arrival"
	return row, nil
}

// MarshalJSON writes the row with its Extra fields beside the named ones,
// as loadgen's rows flatten theirs.
func (r Row) MarshalJSON() ([]byte, error) {
	type plain Row
	base, err := json.Marshal(plain(r))
	if err != nil {
		return nil, err
	}
	if len(r.Extra) == 0 {
		return base, nil
	}
	m := map[string]any{}
	if err := json.Unmarshal(base, &m); err != nil {
		return nil, err
	}
	for k, v := range r.Extra {
		if _, clash := m[k]; !clash {
			m[k] = v
		}
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads a row as MarshalJSON writes it (and as bench/node's
// driver prints its rows): the named fields, and every other one into
// Extra, a whole number as an int (as the drivers record counts).
func (r *Row) UnmarshalJSON(b []byte) error {
	type plain Row
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for _, named := range []string{"workload", "backend", "config", "safe", "p50_ms", "p99_ms", "p999_ms", "ops_per_s", "count", "errors"} {
		delete(m, named)
	}
	p.Extra = map[string]any{}
	for k, v := range m {
		if f, ok := v.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			v = int(f)
		}
		p.Extra[k] = v
	}
	*r = Row(p)
	return nil
}
