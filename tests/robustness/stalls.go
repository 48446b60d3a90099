package robustness

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Stall is a window in which no operation got an answer (L3: calls complete
// while a majority is up), with the faults that overlapped it.
type Stall struct {
	From, To int64 // ns since the run's start
	Faults   []string
}

// Len is the stall's length.
func (s Stall) Len() time.Duration { return time.Duration(s.To - s.From) }

func (s Stall) String() string {
	f := "no fault"
	if len(s.Faults) > 0 {
		f = strings.Join(s.Faults, ", ")
	}
	return fmt.Sprintf("%v at %v (%s)", s.Len().Round(time.Millisecond), time.Duration(s.From).Round(time.Millisecond), f)
}

// Stalls are the n longest windows between consecutive answers of
// lock-service operations (mutex and semaphore; the store is another
// service), from the first answer to the last.
func Stalls(ops []Op, faults []Fault, n int) []Stall {
	var rets []int64
	for _, op := range ops {
		if op.Output.Status != StatusUnknown && op.Input.Model != "store" {
			rets = append(rets, op.Return)
		}
	}
	sort.Slice(rets, func(a, b int) bool { return rets[a] < rets[b] })
	var out []Stall
	for i := 1; i < len(rets); i++ {
		out = append(out, Stall{From: rets[i-1], To: rets[i]})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Len() > out[b].Len() })
	if len(out) > n {
		out = out[:n]
	}
	for i := range out {
		for _, f := range faults {
			if f.Start <= out[i].To && f.End >= out[i].From {
				out[i].Faults = append(out[i].Faults, fmt.Sprintf("%s %s [%s]", f.Kind, f.Target, f.Detail))
			}
		}
	}
	return out
}
