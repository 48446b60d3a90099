package robustness

import (
	"fmt"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// maxReaders bounds the readers the model tracks (the workload has fewer
// workers than this).
const maxReaders = 8

// rwState is a read-write lock: one writer, or up to maxReaders readers
// (sorted by lease, packed at the front), and the highest token any grant
// of the resource is known to have had.
type rwState struct {
	Writer  permit
	Readers [maxReaders]permit
	N       int
	Last    uint64
}

func (s rwState) withReaders(rs []permit) rwState {
	sort.Slice(rs, func(a, b int) bool { return rs[a].Lease < rs[b].Lease })
	s.Readers = [maxReaders]permit{}
	copy(s.Readers[:], rs)
	s.N = len(rs)
	return s
}

func (s rwState) readers() []permit { return append([]permit(nil), s.Readers[:s.N]...) }

// expirations is s with every subset of its grants ended by expiry.
func (s rwState) expirations() []rwState {
	out := []rwState{s}
	if s.Writer.Held {
		e := s
		e.Writer = permit{}
		out = append(out, e)
	}
	rs := s.readers()
	for mask := 1; mask < 1<<len(rs); mask++ {
		var keep []permit
		for i, r := range rs {
			if mask&(1<<i) == 0 {
				keep = append(keep, r)
			}
		}
		out = append(out, s.withReaders(keep))
	}
	return out
}

// rwStep is the read-write lock's specification (docs/semantics.md "Lock
// kinds"): a writer alone, readers together, never both; every grant's
// token above every earlier grant's of the resource; a release succeeds only
// for a live grant of that lease and token. Waiters are not modelled, so a
// refused reader is legal whenever anything holds (a queued writer keeps
// later readers out), and a refusal on a free resource is not.
func rwStep(s rwState, in Input, out Output) []rwState {
	var next []rwState
	shared := in.Mode == "shared"
	for _, c := range s.expirations() {
		held := c.Writer.Held || c.N > 0
		switch in.Kind {
		case OpAcquire:
			grant := func(token uint64) (rwState, bool) {
				n := c
				if shared {
					if c.Writer.Held || c.N >= maxReaders {
						return n, false
					}
					n = c.withReaders(append(c.readers(), permit{Held: true, Lease: in.Lease, Token: token}))
				} else {
					if held {
						return n, false
					}
					n.Writer = permit{Held: true, Lease: in.Lease, Token: token}
				}
				if token > n.Last {
					n.Last = token
				}
				return n, true
			}
			switch out.Status {
			case StatusGranted:
				if out.Token > c.Last {
					if n, ok := grant(out.Token); ok {
						next = append(next, n)
					}
				}
			case StatusHeld, StatusTimeout:
				if held {
					next = append(next, c)
				}
			case StatusUnknown:
				next = append(next, c)
				if n, ok := grant(0); ok {
					next = append(next, n)
				}
			}
		case OpRelease:
			mine := func(p permit) bool {
				return p.Held && p.Lease == in.Lease && (p.Token == in.Token || p.Token == 0)
			}
			freed, found := c, false
			if mine(c.Writer) {
				freed.Writer, found = permit{}, true
			} else {
				var keep []permit
				for _, r := range c.readers() {
					if !found && mine(r) {
						found = true
						continue
					}
					keep = append(keep, r)
				}
				freed = c.withReaders(keep)
			}
			if found && in.Token > freed.Last {
				freed.Last = in.Token
			}
			switch out.Status {
			case StatusReleased:
				if found {
					next = append(next, freed)
				}
			case StatusNotReleased:
				if !found {
					next = append(next, c)
				}
			case StatusUnknown:
				next = append(next, c)
				if found {
					next = append(next, freed)
				}
			}
		}
	}
	return next
}

// RWLockModel is the read-write lock, partitioned per resource.
func RWLockModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionByKey,
		Init:      func() []interface{} { return []interface{}{rwState{}} },
		Step: func(state, input, output interface{}) []interface{} {
			var out []interface{}
			for _, s := range rwStep(state.(rwState), input.(Input), output.(Output)) {
				out = append(out, s)
			}
			return out
		},
		DescribeOperation: describeOp,
		DescribeState: func(state interface{}) string {
			s := state.(rwState)
			if s.Writer.Held {
				return fmt.Sprintf("writer lease %d token %d; last %d", s.Writer.Lease, s.Writer.Token, s.Last)
			}
			var rs []string
			for _, r := range s.readers() {
				rs = append(rs, fmt.Sprintf("lease %d token %d", r.Lease, r.Token))
			}
			if len(rs) == 0 {
				return fmt.Sprintf("free; last %d", s.Last)
			}
			return fmt.Sprintf("readers %s; last %d", strings.Join(rs, ", "), s.Last)
		},
	}
	return nm.ToModel()
}
