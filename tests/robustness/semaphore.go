package robustness

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
)

// SemaphoreLimit is the workload's semaphores' number of permits.
const SemaphoreLimit = 2

// permit is one slot of a semaphore: free, or held by a lease's grant
// (Token 0: a grant whose token the history never saw).
type permit struct {
	Held  bool
	Lease uint64
	Token uint64
}

// semState is a semaphore of SemaphoreLimit permits and the highest token
// any of its grants is known to have had.
type semState struct {
	Slots [SemaphoreLimit]permit
	Last  uint64
}

// expirations is s with every subset of its grants ended by expiry (a
// lease may expire at any time: the model has no clock).
func (s semState) expirations() []semState {
	out := []semState{s}
	for i := range s.Slots {
		if !s.Slots[i].Held {
			continue
		}
		n := len(out)
		for j := 0; j < n; j++ {
			e := out[j]
			e.Slots[i] = permit{}
			out = append(out, e)
		}
	}
	return out
}

// lowestFree is the lowest free slot (-1 when all are held).
func (s semState) lowestFree() int {
	for i, p := range s.Slots {
		if !p.Held {
			return i
		}
	}
	return -1
}

// semStep is the counting semaphore's specification (docs/semantics.md
// "Lock kinds"): at most SemaphoreLimit grants at once, each in the lowest
// slot no grant holds; every grant's token above every earlier grant's of
// the resource; a try-lock refused only when every permit is held; a
// release succeeds only for a live grant of that lease and token.
func semStep(s semState, in Input, out Output) []semState {
	var next []semState
	for _, c := range s.expirations() {
		free := c.lowestFree()
		switch in.Kind {
		case OpAcquire:
			switch out.Status {
			case StatusGranted:
				if free >= 0 && int(out.Slot) == free && out.Token > c.Last {
					n := c
					n.Slots[free] = permit{Held: true, Lease: in.Lease, Token: out.Token}
					n.Last = out.Token
					next = append(next, n)
				}
			case StatusHeld, StatusTimeout:
				if free < 0 {
					next = append(next, c)
				}
			case StatusUnknown:
				next = append(next, c)
				if free >= 0 {
					n := c
					n.Slots[free] = permit{Held: true, Lease: in.Lease}
					next = append(next, n)
				}
			}
		case OpRelease:
			mine := -1
			for i, p := range c.Slots {
				if p.Held && p.Lease == in.Lease && (p.Token == in.Token || p.Token == 0) {
					mine = i
				}
			}
			freed := c
			if mine >= 0 {
				freed.Slots[mine] = permit{}
				if in.Token > freed.Last {
					freed.Last = in.Token
				}
			}
			switch out.Status {
			case StatusReleased:
				if mine >= 0 {
					next = append(next, freed)
				}
			case StatusNotReleased:
				if mine < 0 {
					next = append(next, c)
				}
			case StatusUnknown:
				next = append(next, c)
				if mine >= 0 {
					next = append(next, freed)
				}
			}
		}
	}
	return next
}

// SemaphoreModel is the semaphore of SemaphoreLimit permits, partitioned per
// resource.
func SemaphoreModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partitionByKey,
		Init:      func() []interface{} { return []interface{}{semState{}} },
		Step: func(state, input, output interface{}) []interface{} {
			var out []interface{}
			for _, s := range semStep(state.(semState), input.(Input), output.(Output)) {
				out = append(out, s)
			}
			return out
		},
		DescribeOperation: describeOp,
		DescribeState: func(state interface{}) string {
			s := state.(semState)
			var parts []string
			for i, p := range s.Slots {
				switch {
				case !p.Held:
					parts = append(parts, fmt.Sprintf("slot %d free", i))
				case p.Token == 0:
					parts = append(parts, fmt.Sprintf("slot %d lease %d (token unseen)", i, p.Lease))
				default:
					parts = append(parts, fmt.Sprintf("slot %d lease %d token %d", i, p.Lease, p.Token))
				}
			}
			return fmt.Sprintf("%s; last token %d", strings.Join(parts, ", "), s.Last)
		},
	}
	return nm.ToModel()
}
