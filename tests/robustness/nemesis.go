package robustness

import (
	"context"
	"fmt"
	"math/rand"
	"syscall"
	"time"

	"github.com/warden-locks/warden/clients/go/warden"
)

// Fault kinds, as the history names them.
const (
	FaultKill        = "kill-9"         // kill -9, restart after a while
	FaultPause       = "sigstop"        // SIGSTOP, SIGCONT after a while
	FaultPartition   = "partition"      // isolate a node from its peers (both ways)
	FaultOneWay      = "partition-in"   // cut only the links into a node
	FaultSlow        = "slow-links"     // delay every peer link of a node
	FaultClientPause = "client-pause"   // a worker pauses past its TTL while holding
	FaultStoreKill   = "store-kill-9"   // kill -9 the fenced store, restart it
	FaultNone        = "no-leader-seen" // the nemesis could not name a leader (target random)
)

// nemesis injects faults on a seeded schedule, one at a time, with quiet
// gaps between them. The leader is the target more often than a follower
// (two times in three when one is known).
type nemesis struct {
	rng     *rand.Rand
	c       *Cluster
	rec     *Recorder
	ttl     time.Duration
	workers []*worker
	counts  map[string]int
}

func (n *nemesis) leader(ctx context.Context, cl *warden.Client) (*Node, bool) {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	st, err := cl.ClusterStatus(cctx)
	if err != nil || st.GetLeaderId() == 0 {
		return nil, false
	}
	nd := n.c.NodeByID(st.GetLeaderId())
	return nd, nd != nil
}

func (n *nemesis) target(ctx context.Context, cl *warden.Client) (*Node, string) {
	if n.rng.Intn(3) < 2 {
		if nd, ok := n.leader(ctx, cl); ok {
			return nd, "leader"
		}
	}
	nd := n.c.Nodes[n.rng.Intn(len(n.c.Nodes))]
	return nd, "random"
}

func (n *nemesis) dur(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(n.rng.Int63n(int64(hi-lo)+1))
}

// run injects faults until ctx ends, then heals everything.
func (n *nemesis) run(ctx context.Context) {
	cl, err := n.c.Client(warden.Options{CallTimeout: time.Second, AttemptTimeout: 300 * time.Millisecond})
	if err != nil {
		return
	}
	defer cl.Close()
	kinds := []struct {
		kind   string
		weight int
	}{
		{FaultKill, 4}, {FaultPause, 4}, {FaultPartition, 3}, {FaultOneWay, 1},
		{FaultSlow, 1}, {FaultClientPause, 2}, {FaultStoreKill, 1},
	}
	total := 0
	for _, k := range kinds {
		total += k.weight
	}
	for ctx.Err() == nil {
		if pause(ctx, n.dur(500*time.Millisecond, 2500*time.Millisecond)) != nil {
			break
		}
		x := n.rng.Intn(total)
		kind := kinds[0].kind
		for _, k := range kinds {
			if x < k.weight {
				kind = k.kind
				break
			}
			x -= k.weight
		}
		n.inject(ctx, cl, kind)
	}
	n.heal()
}

// hold waits out a fault's duration; the nemesis's own context ending cuts
// it short (the run is over), and the fault is then healed by the caller.
func hold(ctx context.Context, d time.Duration) { _ = pause(ctx, d) }

func (n *nemesis) inject(ctx context.Context, cl *warden.Client, kind string) {
	n.counts[kind]++
	switch kind {
	case FaultKill:
		nd, why := n.target(ctx, cl)
		d := n.dur(300*time.Millisecond, 3*time.Second)
		f := n.rec.FaultStart(kind, fmt.Sprintf("node %d", nd.ID), fmt.Sprintf("%s, down %v", why, d))
		_ = n.c.Kill(nd)
		hold(ctx, d)
		err := n.c.Restart(nd)
		n.rec.FaultEnd(f, errText("restarted", err))
	case FaultPause:
		nd, why := n.target(ctx, cl)
		// Longer than an election timeout (500 ms), and half of the time
		// longer than a TTL.
		d := n.dur(800*time.Millisecond, 2*time.Second)
		if n.rng.Intn(2) == 0 {
			d = n.dur(n.ttl+500*time.Millisecond, n.ttl+2500*time.Millisecond)
		}
		f := n.rec.FaultStart(kind, fmt.Sprintf("node %d", nd.ID), fmt.Sprintf("%s, for %v", why, d))
		_ = n.c.Signal(nd, syscall.SIGSTOP)
		hold(ctx, d)
		_ = n.c.Signal(nd, syscall.SIGCONT)
		n.rec.FaultEnd(f, "SIGCONT")
	case FaultPartition, FaultOneWay:
		nd, why := n.target(ctx, cl)
		d := n.dur(time.Second, 5*time.Second)
		f := n.rec.FaultStart(kind, fmt.Sprintf("node %d", nd.ID), fmt.Sprintf("%s, for %v", why, d))
		if kind == FaultPartition {
			n.c.Isolate(nd)
		} else {
			n.c.CutOneWay(nd)
		}
		hold(ctx, d)
		n.c.Heal()
		n.rec.FaultEnd(f, "healed")
	case FaultSlow:
		nd, why := n.target(ctx, cl)
		d := n.dur(2*time.Second, 5*time.Second)
		lat := n.dur(20*time.Millisecond, 150*time.Millisecond)
		f := n.rec.FaultStart(kind, fmt.Sprintf("node %d", nd.ID), fmt.Sprintf("%s, +%v per chunk for %v", why, lat, d))
		n.c.Slow(nd, lat)
		hold(ctx, d)
		n.c.Heal()
		n.rec.FaultEnd(f, "healed")
	case FaultClientPause:
		// The worker records the pause itself (when its next grant comes).
		w := n.workers[n.rng.Intn(len(n.workers))]
		w.pauseNext.Store(true)
	case FaultStoreKill:
		d := n.dur(100*time.Millisecond, time.Second)
		f := n.rec.FaultStart(kind, "fenced-store", fmt.Sprintf("down %v", d))
		n.c.Store.Kill()
		hold(ctx, d)
		err := n.c.Store.Restart()
		n.rec.FaultEnd(f, errText("restarted", err))
	}
}

func errText(ok string, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return ok
}

// heal ends every fault: links healed, stopped nodes continued, dead nodes
// and the store restarted.
func (n *nemesis) heal() {
	n.c.Heal()
	for _, nd := range n.c.Nodes {
		nd.mu.Lock()
		paused := nd.paused
		nd.mu.Unlock()
		if paused {
			_ = n.c.Signal(nd, syscall.SIGCONT)
		}
		if nd.Pid() == 0 {
			_ = n.c.Restart(nd)
		}
	}
}
