package robustness

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/warden-locks/warden/clients/go/warden"
)

// Config is one run.
type Config struct {
	Seed     int64
	Duration time.Duration // of the workload under faults
	// Recovery: the workload goes on this long after every fault is healed;
	// some acquire must be granted in it (the cluster recovered, L1).
	Recovery  time.Duration
	Workers   int
	Resources int // per epoch
	Epoch     time.Duration
	TTL       time.Duration
	Nemesis   bool
	// Liars: how many workers carry the planted client bug (worker.lie).
	Liars int
	// Mutate corrupts one recorded answer before the check (the checker
	// must then report a violation).
	Mutate bool
	// OutDir receives the history, the verdict and, on failure, Porcupine's
	// visualization.
	OutDir string
	// CheckTimeout bounds each Porcupine check (0 = none).
	CheckTimeout time.Duration
	// Visualize writes the visualization even when the check passes.
	Visualize bool
	// Kinds: a quarter of the steps take a permit of a semaphore, a
	// quarter a read-write lock (else all take a mutex).
	Kinds bool
}

// Result is a run's measured outcome.
type Result struct {
	Seed            int64
	Verdict         string // PASS, FAIL or UNKNOWN (a check timed out)
	Problems        []string
	Ops             int // recorded operations
	Definite        int // with an answer
	Unknown         int // pending forever
	Grants          int
	Renewals        int // acknowledged renewals (checked with the mutexes)
	Released        int
	Accepted        int // fenced writes accepted
	Stale           int // fenced writes refused as stale
	StaleAfterPause int // refused writes by a worker that had paused past its TTL
	RecoveryGrants  int
	Faults          map[string]int
	Partitions      int // Porcupine partitions checked (both models)
	Elapsed         time.Duration
	CheckTime       time.Duration
	HistoryPath     string
	HTML            []string
	Mutation        string
	// Findings outside the models (the monitor's probes, node logs).
	Findings []Finding
	Probes   int
	// Watch streams: events received (both watchers), stream ends that
	// were resumed, and compaction gaps.
	WatchEvents, WatchErrors, WatchGaps int
	// The longest window without an answered lock call.
	LongestStall Stall
}

// Line is the one-line verdict.
func (r *Result) Line() string {
	var fs []string
	for k, v := range r.Faults {
		fs = append(fs, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(fs)
	s := fmt.Sprintf("robustness seed=%d: %s ops=%d (answered %d, unknown %d) grants=%d renewals=%d writes accepted=%d stale=%d (after a client pause %d) partitions=%d watch events=%d (resumed %d, gaps %d) faults[%s] run=%v check=%v history=%s",
		r.Seed, r.Verdict, r.Ops, r.Definite, r.Unknown, r.Grants, r.Renewals, r.Accepted, r.Stale, r.StaleAfterPause, r.Partitions, r.WatchEvents, r.WatchErrors, r.WatchGaps,
		strings.Join(fs, " "), r.Elapsed.Round(time.Second), r.CheckTime.Round(time.Millisecond), r.HistoryPath)
	if len(r.HTML) > 0 {
		s += " visualization=" + strings.Join(r.HTML, ",")
	}
	s += fmt.Sprintf(" probes=%d longest-stall=%v", r.Probes, r.LongestStall.Len().Round(time.Millisecond))
	for _, f := range r.Findings {
		s += fmt.Sprintf(" finding[%s node %d x%d]", f.Kind, f.Node, f.Count)
	}
	if len(r.Problems) > 0 {
		s += " problems: " + strings.Join(r.Problems, "; ")
	}
	return s
}

// Run starts a cluster and a fenced store under cfg.OutDir, runs the
// workload (and the nemesis), heals, lets the workload recover, and checks
// the history.
func Run(cfg Config) (*Result, error) {
	start := time.Now()
	dir, err := os.MkdirTemp("", "warden-robustness-")
	if err != nil {
		return nil, err
	}
	if os.Getenv("WARDEN_KEEP_TEST_DIRS") == "" {
		defer os.RemoveAll(dir)
	}
	c, err := StartCluster(dir)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	if c.Store, err = StartFencedStore(c.Bin, dir); err != nil {
		return nil, err
	}
	rec := NewRecorder()
	wl := &workload{rec: rec, cluster: c, ttl: cfg.TTL, resources: cfg.Resources, epoch: cfg.Epoch,
		kinds: cfg.Kinds, keys: map[string]struct{}{}}
	seeds := rand.New(rand.NewSource(cfg.Seed))
	var workers []*worker
	for i := 0; i < cfg.Workers; i++ {
		cl, err := c.Client(warden.Options{})
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		workers = append(workers, &worker{id: i, wl: wl, cl: cl, rng: rand.New(rand.NewSource(seeds.Int63())),
			lie: i < cfg.Liars, client: rec.NewClient(), leaseLost: &atomic.Bool{}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Two watchers of every workload resource, from the start.
	var watchers []*watchRecord
	wctx, wcancel := context.WithCancel(ctx)
	var wwg sync.WaitGroup
	for i := 0; i < 2; i++ {
		cl, err := c.Client(warden.Options{})
		if err != nil {
			wcancel()
			return nil, err
		}
		defer cl.Close()
		w := &watchRecord{name: fmt.Sprintf("watcher %d", i), cl: cl, rec: rec, granted: map[string]bool{}}
		watchers = append(watchers, w)
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			w.run(wctx)
		}()
	}
	defer wcancel()
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func(w *worker) {
			defer wg.Done()
			w.run(ctx)
		}(w)
	}
	mon := &monitor{c: c, rec: rec, findings: map[string]*Finding{}}
	mctx, mcancel := context.WithCancel(ctx)
	var mwg sync.WaitGroup
	mwg.Add(1)
	go func() {
		defer mwg.Done()
		mon.run(mctx)
	}()
	nem := &nemesis{rng: rand.New(rand.NewSource(seeds.Int63())), c: c, rec: rec, ttl: cfg.TTL, workers: workers,
		counts: map[string]int{}}
	nctx, ncancel := context.WithTimeout(ctx, cfg.Duration)
	if cfg.Nemesis {
		nem.run(nctx) // returns healed once the duration is over
	} else {
		<-nctx.Done()
	}
	ncancel()
	healedAt := rec.Now()
	_ = pause(ctx, cfg.Recovery) // the recovery phase: the workload runs on a healed cluster
	wl.stop.Store(true)
	wg.Wait()
	mcancel()
	mwg.Wait()

	// Final reads of every key, retried until answered: the last accepted
	// value of each register must be what the history says.
	keys := make([]string, 0, len(wl.keys))
	for k := range wl.keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	final := &worker{id: -1, wl: wl, client: rec.NewClient()}
	for _, k := range keys {
		fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
		for fctx.Err() == nil {
			h := rec.Invoke(final.client, -1, Input{Model: "store", Kind: OpRead, Key: k})
			v, found, err := c.Store.Read(fctx, k)
			if err == nil {
				rec.Return(h, Output{Status: StatusValue, Value: v, Found: found})
				break
			}
			rec.Return(h, Output{Status: StatusUnknown, Err: err.Error()})
			final.client = rec.NewClient()
			_ = pause(fctx, 200*time.Millisecond)
		}
		fcancel()
	}

	// The watchers must catch up with every answered grant (deadline 30 s).
	sofar, _ := rec.Snapshot()
	grants := definiteGrants(sofar)
	wdeadline, wdcancel := context.WithTimeout(ctx, 30*time.Second)
	for _, w := range watchers {
		// A lying worker's made-up grants are never streamed: no wait then.
		for cfg.Liars == 0 && !w.sawAll(grants) && pause(wdeadline, 100*time.Millisecond) == nil {
		}
	}
	wdcancel()
	wcancel()
	wwg.Wait()

	ops, faults := rec.Snapshot()
	res := &Result{Seed: cfg.Seed, Faults: nem.counts, Elapsed: time.Since(start), Probes: mon.probes}
	res.Findings = append(mon.list(), scanLogs(c)...)
	pausedTaken := 0
	for _, w := range workers {
		pausedTaken += w.pauses
		res.StaleAfterPause += w.staleAfterPause
	}
	if cfg.Nemesis {
		res.Faults["client-pause-taken"] = pausedTaken
	}
	for _, op := range ops {
		if op.Input.Kind == OpAcquire && op.Output.Status == StatusGranted && op.Call >= healedAt {
			res.RecoveryGrants++
		}
	}
	if cfg.Liars == 0 && res.RecoveryGrants == 0 {
		res.Problems = append(res.Problems, fmt.Sprintf("no acquire was granted in the %v after every fault was healed (L1)", cfg.Recovery))
	}
	if err := os.MkdirAll(cfg.OutDir, 0o755); err == nil {
		// The streams themselves, for diagnosing a violation (which grants
		// and ends the server streamed around it).
		_ = writeWatches(filepath.Join(cfg.OutDir, fmt.Sprintf("watch-%d.jsonl", cfg.Seed)), watchers)
	}
	if cfg.Liars == 0 {
		wp, n := checkWatches(ops, watchers)
		res.Problems = append(res.Problems, wp...)
		res.WatchEvents = n
		for _, w := range watchers {
			res.WatchErrors += len(w.errs)
			res.WatchGaps += w.gaps
		}
	}
	if err := Check(cfg, ops, faults, res); err != nil {
		return res, err
	}
	if res.Verdict != "PASS" || len(res.Findings) > 0 {
		keepLogs(c, filepath.Join(cfg.OutDir, fmt.Sprintf("logs-%d", cfg.Seed)))
	}
	return res, nil
}

// Check checks a history (mutating it first when cfg.Mutate), fills res,
// and writes the history, the verdict and (on failure) the visualizations
// under cfg.OutDir.
func Check(cfg Config, ops []Op, faults []Fault, res *Result) error {
	if err := os.MkdirAll(cfg.OutDir, 0o755); err != nil {
		return err
	}
	if cfg.Mutate {
		desc, ok := Mutate(ops)
		if !ok {
			res.Problems = append(res.Problems, "--mutate found no answer to corrupt")
		}
		res.Mutation = desc
	}
	res.HistoryPath = filepath.Join(cfg.OutDir, fmt.Sprintf("history-%d.jsonl", cfg.Seed))
	if err := WriteHistory(res.HistoryPath, ops, faults); err != nil {
		return err
	}
	if err := CheckOnly(cfg, ops, faults, res); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cfg.OutDir, fmt.Sprintf("verdict-%d.txt", cfg.Seed)), []byte(res.Line()+"\n"), 0o644)
}

// CheckOnly checks a history with Porcupine and the token-uniqueness check
// and fills res (visualizations under cfg.OutDir on failure, or always with
// cfg.Visualize); it writes no history and no verdict file.
func CheckOnly(cfg Config, ops []Op, faults []Fault, res *Result) error {
	countOps(ops, res)
	if st := Stalls(ops, faults, 1); len(st) > 0 {
		res.LongestStall = st[0]
	}
	res.Problems = append(res.Problems, uniqueTokens(ops)...)

	checkStart := time.Now()
	verdict := "PASS"
	for _, m := range []struct {
		name  string
		model porcupine.Model
	}{{"mutex", MutexModel()}, {"semaphore", SemaphoreModel()}, {"rwlock", RWLockModel()}, {"store", StoreModel()}} {
		pops := porcupineOps(ops, m.name)
		if len(pops) == 0 {
			continue
		}
		if m.name == "mutex" {
			res.Partitions += len(partitionWithRenewals(pops))
		} else {
			res.Partitions += len(partitionByKey(pops))
		}
		result, info := porcupine.CheckOperationsVerbose(m.model, pops, cfg.CheckTimeout)
		switch result {
		case porcupine.Illegal:
			verdict = "FAIL"
			res.Problems = append(res.Problems, fmt.Sprintf("%s history is not linearizable", m.name))
		case porcupine.Unknown:
			if verdict == "PASS" {
				verdict = "UNKNOWN"
			}
			res.Problems = append(res.Problems, fmt.Sprintf("%s check timed out after %v", m.name, cfg.CheckTimeout))
		}
		if result != porcupine.Ok || cfg.Visualize {
			info.AddAnnotations(annotations(faults))
			path := filepath.Join(cfg.OutDir, fmt.Sprintf("%s-%d.html", m.name, cfg.Seed))
			if err := porcupine.VisualizePath(m.model, info, path); err != nil {
				return err
			}
			res.HTML = append(res.HTML, path)
		}
	}
	res.CheckTime = time.Since(checkStart)
	if verdict == "PASS" && len(res.Problems) > 0 {
		verdict = "FAIL"
	}
	res.Verdict = verdict
	return nil
}

// keepLogs copies the node and store logs to dir (evidence for findings).
func keepLogs(c *Cluster, dir string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	files := []string{c.Store.LogFile}
	for _, n := range c.Nodes {
		files = append(files, n.LogFile)
	}
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil {
			_ = os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644)
		}
	}
}

func countOps(ops []Op, res *Result) {
	for _, op := range ops {
		res.Ops++
		if op.Output.Status == StatusUnknown {
			res.Unknown++
			continue
		}
		res.Definite++
		switch op.Output.Status {
		case StatusGranted:
			res.Grants++
		case StatusReleased:
			res.Released++
		case StatusAccepted:
			res.Accepted++
		case StatusStale:
			res.Stale++
		case StatusRenewed:
			res.Renewals++
		}
	}
}

// uniqueTokens checks, across resources, that no two grants share a token
// (tokens come from one counter, S2): a check outside Porcupine, whose
// partitions each see one resource.
func uniqueTokens(ops []Op) []string {
	seen := map[uint64]Op{}
	var dups []string
	for _, op := range ops {
		if op.Input.Kind != OpAcquire || op.Output.Status != StatusGranted {
			continue
		}
		if prev, ok := seen[op.Output.Token]; ok && (prev.Input.Key != op.Input.Key || prev.Input.Lease != op.Input.Lease) {
			dups = append(dups, fmt.Sprintf("token %d granted to %s lease %d and %s lease %d",
				op.Output.Token, prev.Input.Key, prev.Input.Lease, op.Input.Key, op.Input.Lease))
		}
		seen[op.Output.Token] = op
	}
	if len(dups) == 0 {
		return nil
	}
	n, more := len(dups), ""
	if n > 3 {
		more = fmt.Sprintf(" (and %d more)", len(dups)-3)
		dups = dups[:3]
	}
	return []string{fmt.Sprintf("%d tokens granted twice: %s%s", n, strings.Join(dups, ", "), more)}
}

func annotations(faults []Fault) []porcupine.Annotation {
	var out []porcupine.Annotation
	for _, f := range faults {
		out = append(out, porcupine.Annotation{Tag: "nemesis: " + f.Kind, Start: f.Start, End: f.End,
			Description: f.Kind + " " + f.Target, Details: f.Detail, BackgroundColor: "#f5c6cb"})
	}
	return out
}

// Mutate corrupts one recorded answer so that the history is certainly not
// linearizable: a granted acquire that began after another grant of the same
// resource had returned is given that earlier grant's token (a token not
// above an earlier grant's). Falls back to an accepted fenced write that
// followed a higher accepted write of its key being recorded as accepted
// with a lower token. Returns what it changed.
func Mutate(ops []Op) (string, bool) {
	lastGrant := map[string]int{}
	order := make([]int, len(ops))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ops[order[a]].Call < ops[order[b]].Call })
	for _, i := range order {
		op := ops[i]
		if op.Input.Kind != OpAcquire || op.Output.Status != StatusGranted {
			continue
		}
		if j, ok := lastGrant[op.Input.Key]; ok && ops[j].Return < op.Call {
			old := ops[i].Output.Token
			ops[i].Output.Token = ops[j].Output.Token
			return fmt.Sprintf("op %d: acquire of %s at %d ns answered token %d, recorded as %d (the token of the grant that returned at %d ns)",
				i, op.Input.Key, op.Call, old, ops[j].Output.Token, ops[j].Return), true
		}
		if j, ok := lastGrant[op.Input.Key]; !ok || op.Return < ops[j].Return {
			lastGrant[op.Input.Key] = i
		}
	}
	return "", false
}
