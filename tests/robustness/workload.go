package robustness

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warden-locks/warden/clients/go/warden"
)

// workload is the shared state of a run's workers.
type workload struct {
	rec       *Recorder
	cluster   *Cluster
	ttl       time.Duration
	resources int
	epoch     time.Duration
	// kinds: a quarter of the steps take a permit of a semaphore of
	// SemaphoreLimit, a quarter a read-write lock (a reader two times in
	// three), the rest a mutex; without it, all take a mutex.
	kinds bool
	stop  atomic.Bool // workers finish their current step and return

	mu   sync.Mutex
	keys map[string]struct{} // every resource used (for the final reads)
}

// resource is one of the current epoch's mutexes ("r..."), semaphores
// ("s...") or read-write locks ("w..."). Names change every
// epoch so that each Porcupine partition is a short history: an unknown
// outcome stays pending forever in its own partition only.
func (wl *workload) resource(rng *rand.Rand, model string) string {
	e := time.Duration(wl.rec.Now()) / wl.epoch
	switch model {
	case "semaphore":
		return fmt.Sprintf("s%d-e%d", rng.Intn(wl.resources), e)
	case "rwlock":
		return fmt.Sprintf("w%d-e%d", rng.Intn(wl.resources), e)
	}
	return fmt.Sprintf("r%d-e%d", rng.Intn(wl.resources), e)
}

// storeKey is the fenced store's key for a grant: the mutex's name, or the
// semaphore's name and the permit's slot (the permit rule fences per
// (resource, slot), so each slot is a register of its own). Every key used
// is read once more at the end.
func (wl *workload) storeKey(r string, slot int) string {
	k := r
	if slot >= 0 {
		k = fmt.Sprintf("%s.slot%d", r, slot)
	}
	wl.mu.Lock()
	wl.keys[k] = struct{}{}
	wl.mu.Unlock()
	return k
}

// worker is one client process's worth of behaviour: its own client
// (connections), its own lease renewed every TTL/3, and a loop of
// acquire, fenced writes, read and release.
type worker struct {
	id  int
	wl  *workload
	cl  *warden.Client
	rng *rand.Rand
	// Lie: a planted client-side bug, reporting a try-lock refused as held
	// as granted (with a made-up fresh token). The checker must catch it.
	lie bool

	client int // current visualization row

	lease     uint64
	leaseLost *atomic.Bool
	stopRenew context.CancelFunc
	paused    atomic.Bool // renewals stop while the worker is paused

	pauseNext atomic.Bool // the nemesis asks for a pause past the TTL
	maxToken  uint64

	// Counters (read after the worker returned).
	granted, pauses, staleAfterPause int
}

func (w *worker) abandonLease() {
	if w.stopRenew != nil {
		w.stopRenew()
	}
	w.lease, w.stopRenew = 0, nil
}

// unknown ends the worker's current identity: the op stays pending forever
// on its row, the lease is left to expire (it may hold the lock), and the
// worker goes on as a new client.
func (w *worker) unknown() {
	w.abandonLease()
	w.client = w.wl.rec.NewClient()
}

func (w *worker) ensureLease(ctx context.Context) bool {
	if w.lease != 0 && !w.leaseLost.Load() {
		return true
	}
	w.abandonLease()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	l, err := w.cl.LeaseGrant(cctx, w.wl.ttl)
	cancel()
	if err != nil {
		return false
	}
	w.lease = l.LeaseID
	lost := &atomic.Bool{}
	w.leaseLost = lost
	rctx, stop := context.WithCancel(context.Background())
	w.stopRenew = stop
	go w.renew(rctx, l.LeaseID, lost)
	return true
}

// renew keeps the lease alive every TTL/3 unless the worker is paused;
// NotFound (the lease is gone) marks it lost.
func (w *worker) renew(ctx context.Context, lease uint64, lost *atomic.Bool) {
	t := time.NewTicker(w.wl.ttl / 3)
	defer t.Stop()
	client := w.wl.rec.NewClient()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if w.paused.Load() {
			continue
		}
		// Recorded on a row of its own: an acknowledged renew proves the
		// lease alive, so none of its grants can have ended by expiry
		// before it (the mutex model's use of it).
		h := w.wl.rec.Invoke(client, w.id, Input{Model: "lease", Kind: OpRenew, Lease: lease})
		cctx, cancel := context.WithTimeout(ctx, w.wl.ttl/3)
		_, err := w.cl.Renew(cctx, lease)
		cancel()
		switch {
		case err == nil:
			w.wl.rec.Return(h, Output{Status: StatusRenewed})
		case errors.Is(err, warden.ErrNotFound):
			w.wl.rec.Return(h, Output{Status: StatusLeaseGone, Err: err.Error()})
			lost.Store(true)
			return
		default:
			w.wl.rec.Return(h, Output{Status: StatusUnknown, Err: err.Error()})
			client = w.wl.rec.NewClient()
		}
	}
}

func (w *worker) run(ctx context.Context) {
	defer w.abandonLease()
	for !w.wl.stop.Load() && ctx.Err() == nil {
		if !w.ensureLease(ctx) {
			_ = pause(ctx, 100*time.Millisecond) // no quorum yet: poll again
			continue
		}
		w.step(ctx)
	}
}

func (w *worker) invoke(in Input) int { return w.wl.rec.Invoke(w.client, w.id, in) }

// step is one acquire and, when granted, fenced writes, a read and a
// release.
func (w *worker) step(ctx context.Context) {
	model, limit, mode, modeName := "mutex", uint32(0), warden.ModeUnspecified, ""
	if w.wl.kinds {
		switch w.rng.Intn(8) {
		case 0, 1:
			model, limit = "semaphore", SemaphoreLimit
		case 2, 3:
			model, mode, modeName = "rwlock", warden.ModeShared, "shared"
			if w.rng.Intn(3) == 0 {
				mode, modeName = warden.ModeExclusive, "exclusive"
			}
		}
	}
	r := w.wl.resource(w.rng, model)
	var wait time.Duration
	if w.rng.Intn(2) == 0 {
		wait = time.Duration(100+w.rng.Intn(1400)) * time.Millisecond
	}
	lease := w.lease
	h := w.invoke(Input{Model: model, Kind: OpAcquire, Key: r, Lease: lease, WaitMs: wait.Milliseconds(), Mode: modeName})
	cctx, cancel := context.WithTimeout(ctx, wait+10*time.Second)
	g, err := w.cl.Acquire(cctx, r, warden.AcquireOptions{LeaseID: lease, Wait: wait, Limit: limit, Mode: mode})
	cancel()
	var ng *warden.NotGrantedError
	switch {
	case err == nil:
		w.wl.rec.Return(h, Output{Status: StatusGranted, Token: g.FencingToken, Slot: g.Slot})
		if g.FencingToken > w.maxToken {
			w.maxToken = g.FencingToken
		}
		w.granted++
		slot := -1
		if model == "semaphore" {
			slot = int(g.Slot)
		}
		w.hold(ctx, model, r, slot, lease, g.FencingToken)
	case errors.As(err, &ng) && ng.Reason == warden.ReasonHeld:
		if w.lie && wait == 0 && model == "mutex" {
			w.maxToken++
			w.wl.rec.Return(h, Output{Status: StatusGranted, Token: w.maxToken})
			w.hold(ctx, model, r, -1, lease, w.maxToken)
			return
		}
		w.wl.rec.Return(h, Output{Status: StatusHeld, Holder: ng.HolderLeaseID})
	case errors.As(err, &ng) && ng.Reason == warden.ReasonWaitTimeout:
		w.wl.rec.Return(h, Output{Status: StatusTimeout})
	case errors.As(err, &ng) && ng.Reason != warden.ReasonCancelled:
		w.wl.rec.Return(h, Output{Status: StatusRefusedElse, Reason: string(ng.Reason)})
	default:
		w.wl.rec.Return(h, Output{Status: StatusUnknown, Err: err.Error()})
		w.unknown()
	}
}

// hold writes through the fence, maybe pauses past the TTL first (when the
// nemesis asked), reads, and releases with the grant's token.
func (w *worker) hold(ctx context.Context, model, r string, slot int, lease, token uint64) {
	paused := false
	if w.pauseNext.CompareAndSwap(true, false) {
		paused = true
		// A client pause past its TTL (a GC pause, a VM stall): no
		// renewals, then the write with the old token as if nothing
		// happened. The fence must refuse it if a newer holder wrote.
		d := w.wl.ttl + time.Duration(500+w.rng.Intn(2000))*time.Millisecond
		f := w.wl.rec.FaultStart("client-pause", fmt.Sprintf("worker %d", w.id),
			fmt.Sprintf("lease %d token %d on %s for %v", lease, token, r, d))
		w.paused.Store(true)
		_ = pause(ctx, d) // the pause itself is the fault, not a wait for an event
		w.paused.Store(false)
		w.wl.rec.FaultEnd(f, "")
		w.pauses++
	}
	if model == "rwlock" {
		// Read-write grants are checked at the lock service only.
		_ = pause(ctx, time.Duration(w.rng.Intn(50))*time.Millisecond) // think time while holding
	} else {
		key := w.wl.storeKey(r, slot)
		writes := 1 + w.rng.Intn(2)
		for i := 0; i < writes; i++ {
			if w.write(ctx, key, r, slot, token) == StatusStale && paused {
				w.staleAfterPause++
			}
		}
		if w.rng.Intn(3) == 0 {
			w.read(ctx, key)
		}
	}
	h := w.invoke(Input{Model: model, Kind: OpRelease, Key: r, Lease: lease, Token: token})
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	ok, err := w.cl.Release(cctx, lease, r, token)
	cancel()
	switch {
	case err == nil && ok:
		w.wl.rec.Return(h, Output{Status: StatusReleased})
	case err == nil:
		w.wl.rec.Return(h, Output{Status: StatusNotReleased})
	case errors.Is(err, warden.ErrFailedPrecondition):
		w.wl.rec.Return(h, Output{Status: StatusNotReleased, Err: err.Error()})
	case errors.Is(err, warden.ErrNotFound):
		w.wl.rec.Return(h, Output{Status: StatusNotReleased, Err: err.Error()})
		w.leaseLost.Store(true)
	default:
		w.wl.rec.Return(h, Output{Status: StatusUnknown, Err: err.Error()})
		w.unknown()
	}
}

func (w *worker) write(ctx context.Context, key, r string, slot int, token uint64) string {
	v := fmt.Sprintf("w%d-%d", w.id, w.wl.rec.Now())
	h := w.invoke(Input{Model: "store", Kind: OpWrite, Key: key, Token: token, Value: v})
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	res, err := w.wl.cluster.Store.Write(cctx, key, r, token, slot, v)
	cancel()
	switch {
	case err != nil:
		w.wl.rec.Return(h, Output{Status: StatusUnknown, Err: err.Error()})
		w.client = w.wl.rec.NewClient()
		return StatusUnknown
	case res.Accepted:
		w.wl.rec.Return(h, Output{Status: StatusAccepted})
		return StatusAccepted
	default:
		w.wl.rec.Return(h, Output{Status: StatusStale, Highest: res.Highest})
		return StatusStale
	}
}

func (w *worker) read(ctx context.Context, r string) {
	h := w.invoke(Input{Model: "store", Kind: OpRead, Key: r})
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	v, found, err := w.wl.cluster.Store.Read(cctx, r)
	cancel()
	if err != nil {
		w.wl.rec.Return(h, Output{Status: StatusUnknown, Err: err.Error()})
		w.client = w.wl.rec.NewClient()
		return
	}
	w.wl.rec.Return(h, Output{Status: StatusValue, Value: v, Found: found})
}
