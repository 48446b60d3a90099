package robustness

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Kinds of recorded operations (Input.Kind).
const (
	OpAcquire = "acquire" // a mutex acquire on a lease; Wait 0 is a try-lock
	OpRelease = "release" // release(lease, resource, token)
	OpWrite   = "write"   // a fenced write to the store (resource, token, value)
	OpRead    = "read"    // a read of the store's key
	OpRenew   = "renew"   // renew(lease), model "lease": added to the mutex partitions
)

// Outcomes (Output.Status). StatusUnknown is an operation whose call ended
// without an answer (timeout, unavailable, connection cut): it is recorded
// with Return = +inf, so Porcupine may place it anywhere after its call or
// nowhere, and the models accept every effect it might have had.
const (
	StatusGranted     = "granted"      // Token
	StatusHeld        = "held"         // Holder: the lease the server named
	StatusTimeout     = "wait-timeout" // a waiting acquire's wait ran out
	StatusRefusedElse = "not-granted"  // another reason (Reason); the model admits none
	StatusReleased    = "released"
	StatusNotReleased = "not-released" // released=false, stale token, or lease gone
	StatusAccepted    = "accepted"
	StatusStale       = "stale" // Highest: the store's highest token
	StatusValue       = "value" // Value, Found
	StatusRenewed     = "renewed"
	StatusLeaseGone   = "lease-gone" // a renew answered NotFound
	StatusUnknown     = "unknown"
)

// Input is what a client asked.
type Input struct {
	Model string `json:"model"` // "mutex", "semaphore", "rwlock" or "store"
	Kind  string `json:"kind"`
	Key   string `json:"key"` // the resource (also the store's key)
	Lease uint64 `json:"lease,omitempty"`
	Token uint64 `json:"token,omitempty"`
	// A waiting acquire's wait in ms (0 = try-lock).
	WaitMs int64 `json:"wait_ms,omitempty"`
	// A read-write lock's mode: "shared" or "exclusive".
	Mode  string `json:"mode,omitempty"`
	Value string `json:"value,omitempty"`
}

// Output is what it was answered.
type Output struct {
	Status  string `json:"status"`
	Token   uint64 `json:"token,omitempty"`
	Slot    uint32 `json:"slot,omitempty"` // a semaphore grant's slot
	Holder  uint64 `json:"holder,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Highest uint64 `json:"highest,omitempty"`
	Value   string `json:"value,omitempty"`
	Found   bool   `json:"found,omitempty"`
	Err     string `json:"err,omitempty"` // the error of an unknown outcome
}

// mutexState is one resource's lock as the model knows it. Token 0 while
// Held means a grant whose token the history never saw (an acquire with an
// unknown outcome that the checker chose to let take effect). Last is the
// highest token any grant of the resource is known to have had: every new
// grant's token must exceed it (S2).
type mutexState struct {
	Held  bool
	Lease uint64
	Token uint64
	Last  uint64
	// Dead: the leases whose grant the model has let end by expiry (sorted,
	// comma-separated, so the state stays comparable). A lease that expired
	// can never be renewed again, so an acknowledged renew of a dead lease
	// refutes that branch.
	Dead string
}

func (s mutexState) dead(l uint64) bool {
	for _, x := range strings.Split(s.Dead, ",") {
		if x == strconv.FormatUint(l, 10) {
			return true
		}
	}
	return false
}

// expire ends the current grant by its lease's expiry.
func (s mutexState) expire() mutexState {
	ids := []uint64{s.Lease}
	if s.Dead != "" {
		for _, x := range strings.Split(s.Dead, ",") {
			v, _ := strconv.ParseUint(x, 10, 64)
			ids = append(ids, v)
		}
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	var parts []string
	for _, v := range ids {
		parts = append(parts, strconv.FormatUint(v, 10))
	}
	return mutexState{Last: s.Last, Dead: strings.Join(parts, ",")}
}

// mutexStep is the lease mutex's nondeterministic specification. A grant
// ends by release or, at any moment, by its lease's expiry: the model cannot
// know when a lease expired without comparing clocks, so every step may
// first let the current grant end (the "expired" branch). What remains
// checkable without clocks, and is checked:
//
//   - a grant's token exceeds every earlier grant's of the resource (S2);
//   - a grant is made only on a free resource, so a grant beside a holder
//     that later proves it still held (its release succeeds, or a try-lock is
//     refused naming it) is a violation (S1);
//   - a release succeeds only for the current grant's (lease, token): one
//     that frees someone else's grant, or an older grant of its own lease,
//     is a violation (S6);
//   - a try-lock refused as held names the holder's lease; a waiting acquire
//     times out only while the resource is held.
func mutexStep(s mutexState, in Input, out Output) []mutexState {
	if in.Kind == OpRenew {
		// Renewals change nothing; an acknowledged one refutes every
		// branch in which its lease already expired.
		if out.Status == StatusRenewed && s.dead(in.Lease) {
			return nil
		}
		return []mutexState{s}
	}
	cands := []mutexState{s}
	if s.Held {
		cands = append(cands, s.expire())
	}
	var next []mutexState
	for _, c := range cands {
		switch in.Kind {
		case OpAcquire:
			if c.dead(in.Lease) {
				continue // an expired lease is granted nothing
			}
			switch out.Status {
			case StatusGranted:
				if !c.Held && out.Token > c.Last {
					next = append(next, mutexState{Held: true, Lease: in.Lease, Token: out.Token, Last: out.Token, Dead: c.Dead})
				}
			case StatusHeld:
				if c.Held && c.Lease == out.Holder {
					next = append(next, c)
				}
			case StatusTimeout:
				if c.Held {
					next = append(next, c)
				}
			case StatusUnknown:
				next = append(next, c)
				if !c.Held {
					next = append(next, mutexState{Held: true, Lease: in.Lease, Last: c.Last, Dead: c.Dead})
				}
			}
		case OpRelease:
			mine := c.Held && c.Lease == in.Lease && (c.Token == in.Token || c.Token == 0)
			last := c.Last
			if in.Token > last {
				last = in.Token
			}
			switch out.Status {
			case StatusReleased:
				if mine {
					next = append(next, mutexState{Last: last, Dead: c.Dead})
				}
			case StatusNotReleased:
				if !mine {
					next = append(next, c)
				}
			case StatusUnknown:
				next = append(next, c)
				if mine {
					next = append(next, mutexState{Last: last, Dead: c.Dead})
				}
			}
		}
	}
	return next
}

// storeState is one key of the fenced store: the highest accepted token and
// the value of the last accepted write.
type storeState struct {
	Highest uint64
	Value   string
	Found   bool
}

// storeStep is the fenced store's specification (docs/fencing.md "The rule,
// precisely"): a write is accepted iff its token is at least the highest
// accepted; a refusal names that highest; a read returns the last accepted
// value. So the store never accepts a token below one it accepted (S2 at
// the resource), whoever presents it, however late.
func storeStep(s storeState, in Input, out Output) []storeState {
	switch in.Kind {
	case OpWrite:
		applied := storeState{Highest: in.Token, Value: in.Value, Found: true}
		switch out.Status {
		case StatusAccepted:
			if in.Token >= s.Highest {
				return []storeState{applied}
			}
		case StatusStale:
			if in.Token < s.Highest && out.Highest == s.Highest {
				return []storeState{s}
			}
		case StatusUnknown:
			if in.Token >= s.Highest {
				return []storeState{s, applied}
			}
			return []storeState{s}
		}
	case OpRead:
		switch out.Status {
		case StatusValue:
			if out.Found == s.Found && out.Value == s.Value {
				return []storeState{s}
			}
		case StatusUnknown:
			return []storeState{s}
		}
	}
	return nil
}

// partitionWithRenewals partitions mutex operations per resource and adds
// to each partition the renewals of the leases it names: those from the
// first call of that lease in the partition to the partition's last
// answer, and each lease's first acknowledged renewal after that (the
// renewals that can refute an expiry there).
func partitionWithRenewals(history []porcupine.Operation) [][]porcupine.Operation {
	var renews, rest []porcupine.Operation
	for _, op := range history {
		if op.Input.(Input).Kind == OpRenew {
			// Only acknowledged renewals constrain anything; the others
			// (refused, or pending forever) step every state to itself,
			// so leaving them out changes no verdict and saves the search.
			if op.Output.(Output).Status == StatusRenewed {
				renews = append(renews, op)
			}
		} else {
			rest = append(rest, op)
		}
	}
	parts := partitionByKey(rest)
	for i, p := range parts {
		first := map[uint64]int64{}
		var end int64
		for _, op := range p {
			l := op.Input.(Input).Lease
			if t, ok := first[l]; !ok || op.Call < t {
				first[l] = op.Call
			}
			if op.Return != Forever && op.Return > end {
				end = op.Return
			}
		}
		after := map[uint64]porcupine.Operation{}
		for _, r := range renews {
			l := r.Input.(Input).Lease
			t, ok := first[l]
			switch {
			case !ok || r.Return < t:
			case r.Call <= end:
				parts[i] = append(parts[i], r)
			default:
				// One acknowledged renewal after the partition's end is
				// enough to refute an expiry in it (death is final).
				if a, seen := after[l]; !seen || r.Call < a.Call {
					after[l] = r
				}
			}
		}
		for _, r := range after {
			parts[i] = append(parts[i], r)
		}
	}
	return parts
}

func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	var keys []string
	for _, op := range history {
		k := op.Input.(Input).Key
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], op)
	}
	sort.Strings(keys)
	var out [][]porcupine.Operation
	for _, k := range keys {
		out = append(out, byKey[k])
	}
	return out
}

func describeOp(in, out interface{}) string {
	i, o := in.(Input), out.(Output)
	var call string
	switch i.Kind {
	case OpAcquire:
		mode := ""
		if i.Mode != "" {
			mode = ", " + i.Mode
		}
		if i.WaitMs == 0 {
			call = fmt.Sprintf("try-acquire(%s, lease %d%s)", i.Key, i.Lease, mode)
		} else {
			call = fmt.Sprintf("acquire(%s, lease %d, wait %d ms%s)", i.Key, i.Lease, i.WaitMs, mode)
		}
	case OpRelease:
		call = fmt.Sprintf("release(%s, lease %d, token %d)", i.Key, i.Lease, i.Token)
	case OpWrite:
		call = fmt.Sprintf("write(%s, token %d, %q)", i.Key, i.Token, i.Value)
	case OpRead:
		call = fmt.Sprintf("read(%s)", i.Key)
	case OpRenew:
		call = fmt.Sprintf("renew(lease %d)", i.Lease)
	}
	var ret string
	switch o.Status {
	case StatusGranted:
		ret = fmt.Sprintf("granted token %d", o.Token)
		if i.Model == "semaphore" {
			ret += fmt.Sprintf(" slot %d", o.Slot)
		}
	case StatusHeld:
		ret = fmt.Sprintf("held by lease %d", o.Holder)
	case StatusStale:
		ret = fmt.Sprintf("stale (highest %d)", o.Highest)
	case StatusValue:
		if o.Found {
			ret = fmt.Sprintf("%q", o.Value)
		} else {
			ret = "absent"
		}
	case StatusUnknown:
		ret = "unknown: " + o.Err
	case StatusRefusedElse:
		ret = "not granted: " + o.Reason
	default:
		ret = o.Status
	}
	return call + " -> " + ret
}

// MutexModel is the lease mutex with fencing tokens, partitioned per
// resource.
func MutexModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionWithRenewals,
		Init:      func() []interface{} { return []interface{}{mutexState{}} },
		Step: func(state, input, output interface{}) []interface{} {
			var out []interface{}
			for _, s := range mutexStep(state.(mutexState), input.(Input), output.(Output)) {
				out = append(out, s)
			}
			return out
		},
		DescribeOperation: describeOp,
		DescribeState: func(state interface{}) string {
			s := state.(mutexState)
			dead := ""
			if s.Dead != "" {
				dead = "; expired leases " + s.Dead
			}
			switch {
			case !s.Held:
				return fmt.Sprintf("free (last token %d)%s", s.Last, dead)
			case s.Token == 0:
				return fmt.Sprintf("held by lease %d, token unseen (last %d)%s", s.Lease, s.Last, dead)
			default:
				return fmt.Sprintf("held by lease %d, token %d%s", s.Lease, s.Token, dead)
			}
		},
	}
	return nm.ToModel()
}

// StoreModel is the fenced register, partitioned per key.
func StoreModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionByKey,
		Init:      func() []interface{} { return []interface{}{storeState{}} },
		Step: func(state, input, output interface{}) []interface{} {
			var out []interface{}
			for _, s := range storeStep(state.(storeState), input.(Input), output.(Output)) {
				out = append(out, s)
			}
			return out
		},
		DescribeOperation: describeOp,
		DescribeState: func(state interface{}) string {
			s := state.(storeState)
			if !s.Found {
				return "empty"
			}
			return fmt.Sprintf("highest %d, value %q", s.Highest, s.Value)
		},
	}
	return nm.ToModel()
}
