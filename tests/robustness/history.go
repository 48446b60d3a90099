package robustness

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Forever is the return time of an operation whose outcome is unknown:
// Porcupine's convention for a call that never returned.
const Forever = math.MaxInt64

// Op is one recorded operation (times in ns since the run's start, on the
// monotonic clock).
type Op struct {
	Client int    `json:"client"`
	Worker int    `json:"worker"`
	Input  Input  `json:"input"`
	Output Output `json:"output"`
	Call   int64  `json:"call_ns"`
	Return int64  `json:"return_ns"` // Forever when unknown
}

// Fault is one nemesis action, from its start to its end (End = Start
// for an instant action).
type Fault struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
	Detail string `json:"detail,omitempty"`
	Start  int64  `json:"start_ns"`
	End    int64  `json:"end_ns"`
}

// Recorder collects a run's operations and faults; safe for concurrent use.
type Recorder struct {
	start time.Time

	mu      sync.Mutex
	ops     []Op
	faults  []Fault
	clients int
}

// NewRecorder starts the run's clock.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Now is the time since the run started, in ns.
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// NewClient is a fresh client id (a row in the visualization). A worker
// takes a new one after an operation with an unknown outcome, whose
// pending-forever call keeps its old row.
func (r *Recorder) NewClient() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clients++
	return r.clients - 1
}

// Invoke records a call and returns its handle.
func (r *Recorder) Invoke(client, worker int, in Input) int {
	now := r.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, Op{Client: client, Worker: worker, Input: in, Call: now, Return: -1})
	return len(r.ops) - 1
}

// Return records the answer of call h; an unknown outcome returns Forever.
func (r *Recorder) Return(h int, out Output) {
	now := r.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if out.Status == StatusUnknown {
		now = Forever
	}
	r.ops[h].Output = out
	r.ops[h].Return = now
}

// FaultStart records the start of a fault and returns its handle.
func (r *Recorder) FaultStart(kind, target, detail string) int {
	now := r.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, Fault{Kind: kind, Target: target, Detail: detail, Start: now, End: now})
	return len(r.faults) - 1
}

// FaultEnd records the end of fault h.
func (r *Recorder) FaultEnd(h int, detail string) {
	now := r.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[h].End = now
	if detail != "" {
		r.faults[h].Detail += "; " + detail
	}
}

// Snapshot is the operations (calls still open are unknown) and faults so
// far.
func (r *Recorder) Snapshot() ([]Op, []Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := append([]Op(nil), r.ops...)
	for i := range ops {
		if ops[i].Return < 0 {
			ops[i].Output = Output{Status: StatusUnknown, Err: "no answer when the run ended"}
			ops[i].Return = Forever
		}
	}
	return ops, append([]Fault(nil), r.faults...)
}

// historyLine is one line of a history file: an op or a fault.
type historyLine struct {
	Op    *Op    `json:"op,omitempty"`
	Fault *Fault `json:"fault,omitempty"`
}

// WriteHistory writes ops and faults as JSON lines, in call order.
func WriteHistory(path string, ops []Op, faults []Fault) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	type item struct {
		t    int64
		line historyLine
	}
	var items []item
	for i := range ops {
		items = append(items, item{ops[i].Call, historyLine{Op: &ops[i]}})
	}
	for i := range faults {
		items = append(items, item{faults[i].Start, historyLine{Fault: &faults[i]}})
	}
	sort.SliceStable(items, func(a, b int) bool { return items[a].t < items[b].t })
	for _, it := range items {
		if err := enc.Encode(it.line); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadHistory reads a file WriteHistory wrote.
func ReadHistory(path string) ([]Op, []Fault, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var ops []Op
	var faults []Fault
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l historyLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, nil, err
		}
		if l.Op != nil {
			ops = append(ops, *l.Op)
		}
		if l.Fault != nil {
			faults = append(faults, *l.Fault)
		}
	}
	return ops, faults, sc.Err()
}

// porcupineOps is the ops of one model as Porcupine's operations.
func porcupineOps(ops []Op, model string) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range ops {
		// Renewals go with the mutex model (partitionWithRenewals).
		if op.Input.Model != model && !(model == "mutex" && op.Input.Model == "lease") {
			continue
		}
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: op.Input, Call: op.Call,
			Output: op.Output, Return: op.Return})
	}
	return out
}
