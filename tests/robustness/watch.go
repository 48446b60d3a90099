package robustness

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/warden-locks/warden/clients/go/warden"
)

// watchRecord is one watcher's stream of events of the workload's
// resources (prefix "r"), from the start of the run.
type watchRecord struct {
	name string
	cl   *warden.Client
	rec  *Recorder

	mu      sync.Mutex
	events  []warden.WatchEvent
	errs    []string // each stream end other than the run's, with its time
	gaps    int      // compactions: events possibly missed
	granted map[string]bool
}

func grantKey(r string, lease, token uint64) string { return fmt.Sprintf("%s/%d/%d", r, lease, token) }

// run follows the prefix until ctx ends. A watcher that fails is restarted
// from the last index it returned (skipping the events of that index it
// already saw); one refused as compacted restarts from now and counts a gap.
func (w *watchRecord) run(ctx context.Context) {
	var last uint64
	seenAtLast := 0
	for ctx.Err() == nil {
		wt, err := w.cl.Watch(ctx, warden.WatchPrefix("r"), last)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.note(err)
			if errors.Is(err, warden.ErrCompacted) {
				w.mu.Lock()
				w.gaps++
				w.mu.Unlock()
				last, seenAtLast = 0, 0
			}
			_ = pause(ctx, 200*time.Millisecond)
			continue
		}
		skip := 0
		if last != 0 {
			skip = seenAtLast
		}
		for {
			ev, err := wt.Next(ctx)
			if err != nil {
				wt.Close()
				if ctx.Err() == nil {
					w.note(err)
				}
				break
			}
			if ev.Index == last && skip > 0 {
				skip--
				continue
			}
			skip = 0
			if ev.Index == last {
				seenAtLast++
			} else {
				last, seenAtLast = ev.Index, 1
			}
			w.mu.Lock()
			w.events = append(w.events, ev)
			if ev.Event == "granted" {
				w.granted[grantKey(ev.Resource, ev.LeaseID, ev.FencingToken)] = true
			}
			w.mu.Unlock()
		}
	}
}

func (w *watchRecord) note(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, fmt.Sprintf("%v: %v", time.Duration(w.rec.Now()).Round(time.Millisecond), err))
}

// sawAll reports whether every grant in grants has been seen.
func (w *watchRecord) sawAll(grants []string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, g := range grants {
		if !w.granted[g] {
			return false
		}
	}
	return true
}

// definiteGrants are the history's answered mutex grants (the resources the
// watchers follow) as grant keys.
func definiteGrants(ops []Op) []string {
	var out []string
	for _, op := range ops {
		if op.Input.Model == "mutex" && op.Input.Kind == OpAcquire && op.Output.Status == StatusGranted {
			out = append(out, grantKey(op.Input.Key, op.Input.Lease, op.Output.Token))
		}
	}
	return out
}

// checkWatches checks the watchers' streams against the history and each
// other:
//   - every grant the history saw answered is in every stream that had no
//     compaction gap, exactly once, and every streamed grant was answered
//     as granted to its acquire (or that acquire's outcome is unknown): a
//     grant its client was told it did not get is a violation;
//   - per resource, the granted tokens of a stream grow strictly, and its
//     indexes never go back;
//   - two streams agree on every resource's sequence of events over the
//     indexes both covered (every node derives the same events).
func checkWatches(ops []Op, ws []*watchRecord) (problems []string, events int) {
	grants := definiteGrants(ops)
	// What the history's acquires say of each (resource, lease): the tokens
	// answered granted, and whether one had an unknown outcome.
	answered := map[string]bool{}
	unknownAcq := map[string]bool{}
	for _, op := range ops {
		if op.Input.Model != "mutex" || op.Input.Kind != OpAcquire {
			continue
		}
		rl := fmt.Sprintf("%s/%d", op.Input.Key, op.Input.Lease)
		switch op.Output.Status {
		case StatusGranted:
			answered[grantKey(op.Input.Key, op.Input.Lease, op.Output.Token)] = true
		case StatusUnknown:
			unknownAcq[rl] = true
		}
	}
	perStream := map[string]map[string][]string{}
	var firstIdx []uint64
	for _, w := range ws {
		w.mu.Lock()
		evs := append([]warden.WatchEvent(nil), w.events...)
		gaps := w.gaps
		w.mu.Unlock()
		events += len(evs)
		count := map[string]int{}
		lastTok := map[string]uint64{}
		var lastIdx uint64
		seq := map[string][]string{}
		for _, ev := range evs {
			if ev.Index < lastIdx {
				problems = append(problems, fmt.Sprintf("%s: index %d after %d", w.name, ev.Index, lastIdx))
			}
			lastIdx = ev.Index
			if ev.Event == "granted" {
				k := grantKey(ev.Resource, ev.LeaseID, ev.FencingToken)
				if !answered[k] && !unknownAcq[fmt.Sprintf("%s/%d", ev.Resource, ev.LeaseID)] {
					// The server granted what no acquire was told: every
					// acquire of that lease on that resource was answered
					// not granted (held, wait timed out, ...).
					problems = append(problems, fmt.Sprintf("%s: %s granted to lease %d (token %d, index %d), but no acquire of it was answered granted or left unknown",
						w.name, ev.Resource, ev.LeaseID, ev.FencingToken, ev.Index))
				}
				count[k]++
				if ev.FencingToken <= lastTok[ev.Resource] {
					problems = append(problems, fmt.Sprintf("%s: %s granted token %d after %d", w.name, ev.Resource,
						ev.FencingToken, lastTok[ev.Resource]))
				}
				lastTok[ev.Resource] = ev.FencingToken
			}
			seq[ev.Resource] = append(seq[ev.Resource], fmt.Sprintf("%d:%s:%d:%d", ev.Index, ev.Event, ev.LeaseID, ev.FencingToken))
		}
		perStream[w.name] = seq
		if len(evs) > 0 {
			firstIdx = append(firstIdx, evs[0].Index)
		}
		for k, n := range count {
			if n > 1 {
				problems = append(problems, fmt.Sprintf("%s: grant %s streamed %d times", w.name, k, n))
			}
		}
		if gaps == 0 {
			missing := 0
			example := ""
			for _, g := range grants {
				if count[g] == 0 {
					missing++
					example = g
				}
			}
			if missing > 0 {
				problems = append(problems, fmt.Sprintf("%s: %d answered grants never streamed (e.g. %s)", w.name, missing, example))
			}
		}
	}
	if len(ws) == 2 && len(firstIdx) == 2 {
		from := firstIdx[0]
		if firstIdx[1] > from {
			from = firstIdx[1]
		}
		a, b := perStream[ws[0].name], perStream[ws[1].name]
		var keys []string
		for k := range a {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, r := range keys {
			x, y := after(a[r], from), after(b[r], from)
			n := len(x)
			if len(y) < n {
				n = len(y)
			}
			for i := 0; i < n; i++ {
				if x[i] != y[i] {
					problems = append(problems, fmt.Sprintf("watchers disagree on %s at event %d: %s vs %s", r, i, x[i], y[i]))
					break
				}
			}
		}
	}
	return problems, events
}

// after drops the events below index from (their "index:..." prefix).
func after(seq []string, from uint64) []string {
	for i, s := range seq {
		var idx uint64
		fmt.Sscanf(s, "%d:", &idx)
		if idx >= from {
			return seq[i:]
		}
	}
	return nil
}

// writeWatches writes every watcher's events as JSON lines
// ({"watcher":..., "index":..., "resource":..., "event":..., "lease":...,
// "token":...}).
func writeWatches(path string, ws []*watchRecord) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, wr := range ws {
		wr.mu.Lock()
		evs := append([]warden.WatchEvent(nil), wr.events...)
		wr.mu.Unlock()
		for _, ev := range evs {
			line := struct {
				Watcher  string `json:"watcher"`
				Index    uint64 `json:"index"`
				Resource string `json:"resource"`
				Event    string `json:"event"`
				Lease    uint64 `json:"lease,omitempty"`
				Token    uint64 `json:"token,omitempty"`
			}{wr.name, ev.Index, ev.Resource, ev.Event, ev.LeaseID, ev.FencingToken}
			if err := enc.Encode(line); err != nil {
				f.Close()
				return err
			}
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
