package warden

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// LockOption tunes a lock on a session.
type LockOption func(*AcquireOptions)

// OnQueued calls f with each queue position report of a waiting lock.
func OnQueued(f func(Queued)) LockOption { return func(o *AcquireOptions) { o.OnQueued = f } }

// WithLockDelay sets the lock-delay after an involuntary loss of the grant
// (expiry, forced release): the resource is granted to nobody for d (at
// most 60 s).
func WithLockDelay(d time.Duration) LockOption { return func(o *AcquireOptions) { o.LockDelay = d } }

// WithMaxHold ends the grant no later than d after it was granted, however
// often the session renews its lease (docs/semantics.md "Max-hold"; 1 s
// ..= 24 h, longer than the wait; not on a multi-lock). The guard's
// ValidUntil is then the earlier of the session's and the acquire's send +
// [Validity](d), and its Check fails past it.
func WithMaxHold(d time.Duration) LockOption { return func(o *AcquireOptions) { o.MaxHold = d } }

// WithWait bounds the wait in the server's queue to d (0 = try-lock, at
// most 1 h): the lock call then makes one acquire and returns a
// [*NotGrantedError] matching ErrWaitTimeout (or ErrHeld for a try) when
// it is not granted. Without it Lock, ReadLock, WriteLock, LockAll and
// Semaphore.Acquire wait until granted or ctx ends.
func WithWait(d time.Duration) LockOption {
	return func(o *AcquireOptions) { o.Wait, o.waitSet = d, true }
}

// Lock takes resource on the session's lease, waiting in the server's FIFO
// queue until it is granted or ctx ends (etcd's Mutex.Lock). The waiter is
// kept across leader changes (S8). When ctx ends first, the wait is taken
// back with the server's CancelWait before Lock returns (see
// [Client.Acquire]); the error matches ctx's error. [WithWait] makes it one
// bounded acquire instead; with [WithMaxHold] each acquire waits less than
// the max-hold (the server refuses a longer wait).
//
// Errors: a [*LostError] when the session is lost first (the wait goes with
// the lease); KindInvalidArgument (Field "resource"); KindNoQuorum /
// KindUnavailable; ctx's error.
func (s *Session) Lock(ctx context.Context, resource string, opts ...LockOption) (*Guard, error) {
	return s.lockUntilGranted(ctx, resource, AcquireOptions{}, opts)
}

// ReadLock takes a shared (reader's) grant of the read-write lock resource:
// beside other readers, never beside a writer; FIFO, so a reader queued
// behind a waiting writer waits for it (docs/semantics.md "Lock kinds").
// It waits as [Session.Lock] does, unless [WithWait] bounds it.
//
// Errors: KindFailedPrecondition (message naming "kind") when resource is held or
// awaited as another kind; otherwise as [Session.Lock].
func (s *Session) ReadLock(ctx context.Context, resource string, opts ...LockOption) (*Guard, error) {
	return s.lockUntilGranted(ctx, resource, AcquireOptions{Mode: ModeShared}, opts)
}

// WriteLock takes the exclusive (writer's) grant of the read-write lock
// resource: alone. As [Session.ReadLock].
func (s *Session) WriteLock(ctx context.Context, resource string, opts ...LockOption) (*Guard, error) {
	return s.lockUntilGranted(ctx, resource, AcquireOptions{Mode: ModeExclusive}, opts)
}

// LockAll takes every one of resources as one multi-lock: all granted in
// one entry with a fencing token each (the guard's Tokens, in this order),
// or none (docs/semantics.md "Multi-locks"). Resources are mutexes; taking
// sets in different orders never deadlocks. Releasing the guard frees all.
// It waits as [Session.Lock] does, unless [WithWait] bounds it;
// [WithMaxHold] is refused.
//
// Errors: KindInvalidArgument (Field "resources": empty, repeated, too
// many, or with a max-hold Field "max_hold_ms"); KindFailedPrecondition
// (message naming "resources" when the session already holds or waits on
// one of them, "kind" when one is another kind); a [*NotGrantedError] whose
// Resource is the first that stopped it, matching ErrHeld, ErrLockDelay,
// ErrWaitTimeout or ErrReserved; otherwise as [Session.Lock].
func (s *Session) LockAll(ctx context.Context, resources []string, opts ...LockOption) (*Guard, error) {
	if len(resources) == 0 {
		return nil, &Error{Kind: KindInvalidArgument, Field: "resources", Message: "resources: a multi-lock names at least one resource"}
	}
	return s.lockUntilGranted(ctx, "", AcquireOptions{Resources: append([]string(nil), resources...)}, opts)
}

// Semaphore is a semaphore of Limit permits on one resource, taken on a
// session ([Session.Semaphore]).
type Semaphore struct {
	s        *Session
	resource string
	limit    uint32
}

// Semaphore is the semaphore resource with limit permits (1 ..= the
// server's bound): at most limit holders at a time, each with a slot in
// 0..limit and its own fencing token; a freed permit goes to the oldest
// waiter (docs/semantics.md "Lock kinds"). Every holder and waiter must ask
// for the same limit.
func (s *Session) Semaphore(resource string, limit uint32) *Semaphore {
	return &Semaphore{s: s, resource: resource, limit: limit}
}

// Resource is the semaphore's resource.
func (m *Semaphore) Resource() string { return m.resource }

// Limit is its number of permits.
func (m *Semaphore) Limit() uint32 { return m.limit }

// Acquire takes one permit (the guard's Slot says which). It waits as
// [Session.Lock] does, unless [WithWait] bounds it.
//
// Errors: KindInvalidArgument (Field "limit") for a limit out of bounds;
// KindFailedPrecondition (message naming "kind" or "limit") when the resource is
// another kind or a semaphore of another limit; otherwise as
// [Session.Lock].
func (m *Semaphore) Acquire(ctx context.Context, opts ...LockOption) (*Guard, error) {
	if m.limit == 0 {
		return nil, &Error{Kind: KindInvalidArgument, Field: "limit", Message: "limit: a semaphore has at least 1 permit"}
	}
	return m.s.lockUntilGranted(ctx, m.resource, AcquireOptions{Limit: m.limit}, opts)
}

// TryAcquire takes one permit if one is free now (no wait).
func (m *Semaphore) TryAcquire(ctx context.Context, opts ...LockOption) (*Guard, error) {
	return m.Acquire(ctx, append(opts, WithWait(0))...)
}

// lockUntilGranted repeats bounded acquires (each at most MaxWait, and
// within ctx's deadline) until granted, unless WithWait asked for one.
func (s *Session) lockUntilGranted(ctx context.Context, resource string, base AcquireOptions, opts []LockOption) (*Guard, error) {
	probe := base
	for _, opt := range opts {
		opt(&probe)
	}
	if probe.waitSet {
		return s.acquireWith(ctx, resource, base, probe.Wait, opts)
	}
	for {
		wait := MaxWait
		if probe.MaxHold > time.Millisecond {
			// The server refuses a wait as long as the max-hold.
			wait = min(wait, probe.MaxHold-time.Millisecond)
		}
		if d, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(d))
		}
		if wait <= 0 {
			return nil, asContextError(ctx)
		}
		g, err := s.acquireWith(ctx, resource, base, wait, opts)
		if err == nil {
			return g, nil
		}
		if ctx.Err() != nil {
			return nil, asContextError(ctx)
		}
		if !isWaitTimeout(err) {
			return nil, err
		}
	}
}

func isWaitTimeout(err error) bool {
	return errors.Is(err, ErrWaitTimeout)
}

// TryLock takes resource if it is free now (no wait).
//
// Errors: a [*NotGrantedError] matching ErrHeld (HolderLeaseID names the
// holder) or ErrLockDelay; otherwise as [Session.Lock].
func (s *Session) TryLock(ctx context.Context, resource string, opts ...LockOption) (*Guard, error) {
	return s.acquire(ctx, resource, 0, opts)
}

// LockWithTimeout takes resource, waiting in the queue at most wait (at
// most 1 h).
//
// Errors: a [*NotGrantedError] matching ErrWaitTimeout when the wait ran out
// (the waiter's removal has then committed, S8); otherwise as
// [Session.Lock].
func (s *Session) LockWithTimeout(ctx context.Context, resource string, wait time.Duration, opts ...LockOption) (*Guard, error) {
	return s.acquire(ctx, resource, wait, opts)
}

func (s *Session) acquire(ctx context.Context, resource string, wait time.Duration, opts []LockOption) (*Guard, error) {
	return s.acquireWith(ctx, resource, AcquireOptions{}, wait, opts)
}

// acquireWith makes one acquire of base (kind, resources) with opts
// applied, on the session's lease, waiting at most wait.
func (s *Session) acquireWith(ctx context.Context, resource string, base AcquireOptions, wait time.Duration, opts []LockOption) (*Guard, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	o := base
	for _, opt := range opts {
		opt(&o)
	}
	o.LeaseID, o.Wait = s.leaseID, wait
	// A max-hold's validity counts from the first send of the acquire.
	sentAt, err := s.clock.Now()
	if err != nil {
		return nil, s.lose(&LostError{Reason: LostClockFailed, LeaseID: s.leaseID, Err: err})
	}
	// The loss of the session ends the wait, with the loss as its cause.
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.ctx, func() { cancel(s.Err()) })
	defer stop()
	// The session's keep-alive renews the lease while it waits.
	g, err := s.c.acquire(actx, resource, o, false)
	if err != nil {
		return nil, err
	}
	// Granted while the session may have been lost in between: the caller
	// must not be handed a guard it cannot trust.
	if err := s.Check(); err != nil {
		return nil, err
	}
	gd := &Guard{s: s, resource: g.Resource, token: g.FencingToken, logIndex: g.LogIndex,
		slot: g.Slot, hasSlot: g.HasSlot, mode: g.Mode, grants: g.Grants, maxHold: g.MaxHold}
	if g.MaxHold > 0 {
		gd.maxHoldUntil = sentAt + Validity(g.MaxHold)
	}
	return gd, nil
}

// Guard is a lock held by a [Session]'s lease, with its grant's fencing
// token. It is valid while its session is: Check before each protected
// write, and pass FencingToken with the write so the resource rejects it if
// the lock was lost anyway (S2). An operator's forced release is not seen
// here; the fence rejects the holder's next write.
//
// Go has no destructors: Release a guard you are done with (or Close its
// session, which releases every lock on it).
type Guard struct {
	s        *Session
	resource string
	token    uint64
	logIndex uint64
	slot     uint32
	hasSlot  bool
	mode     LockMode
	grants   []ResourceToken
	maxHold  time.Duration
	// With a max-hold: the acquire's send + Validity(maxHold), on the
	// session clock; 0 = none.
	maxHoldUntil time.Duration
}

// MaxHoldError is a guard's Check past its max-hold's validity: the grant
// may already have ended on the server (docs/semantics.md "Max-hold"). The
// session itself stays valid.
type MaxHoldError struct {
	Resource string
	MaxHold  time.Duration
	// The acquire's send + Validity(MaxHold), on the session clock.
	ValidUntil time.Duration
}

func (e *MaxHoldError) Error() string {
	return fmt.Sprintf("grant of %q past its max-hold of %d ms (valid until %d ms on the session clock)",
		e.Resource, e.MaxHold.Milliseconds(), e.ValidUntil.Milliseconds())
}

// Slot is a semaphore permit's slot in 0..limit; ok is false for any
// other grant.
func (g *Guard) Slot() (slot uint32, ok bool) { return g.slot, g.hasSlot }

// Mode is the mode asked for: ModeShared / ModeExclusive for a read-write
// lock, ModeUnspecified for a mutex or a permit.
func (g *Guard) Mode() LockMode { return g.mode }

// Tokens is a multi-lock's every resource with its fencing token, in the
// order asked; for a single resource, that resource and FencingToken.
func (g *Guard) Tokens() []ResourceToken {
	if len(g.grants) == 0 {
		return []ResourceToken{{Resource: g.resource, FencingToken: g.token}}
	}
	return append([]ResourceToken(nil), g.grants...)
}

// MaxHold is the grant's max-hold (0 = none).
func (g *Guard) MaxHold() time.Duration { return g.maxHold }

// Resource is the resource held.
func (g *Guard) Resource() string { return g.resource }

// FencingToken is the grant's token: larger than every token issued before
// it for this resource (S2).
func (g *Guard) FencingToken() uint64 { return g.token }

// LeaseID is the lease holding the lock (the session's).
func (g *Guard) LeaseID() uint64 { return g.s.leaseID }

// LogIndex is the log index of the entry that made the grant.
func (g *Guard) LogIndex() uint64 { return g.logIndex }

// Session is the session the lock hangs on.
func (g *Guard) Session() *Session { return g.s }

// ValidUntil is the instant, on the session clock, until which the grant
// can be trusted: the session's ([Session.ValidUntil]), and with a
// max-hold at most the acquire's send + [Validity](max-hold).
func (g *Guard) ValidUntil() time.Duration {
	v := g.s.ValidUntil()
	if g.maxHoldUntil > 0 {
		v = min(v, g.maxHoldUntil)
	}
	return v
}

// Check returns nil while the grant can be trusted: the session's
// [Session.Check], then, with a max-hold, a [*MaxHoldError] once the
// session clock passes the acquire's send + Validity(max-hold) (the
// session stays valid).
func (g *Guard) Check() error {
	if err := g.s.Check(); err != nil {
		return err
	}
	if g.maxHoldUntil == 0 {
		return nil
	}
	now, err := g.s.clock.Now()
	if err != nil {
		return g.s.lose(&LostError{Reason: LostClockFailed, LeaseID: g.s.leaseID, Err: err})
	}
	if now >= g.maxHoldUntil {
		return &MaxHoldError{Resource: g.resource, MaxHold: g.maxHold, ValidUntil: g.maxHoldUntil}
	}
	return nil
}

// Done: see [Session.Done]. A max-hold's end is not signalled here: Check
// or ValidUntil tell it.
func (g *Guard) Done() <-chan struct{} { return g.s.Done() }

// Release releases this exact grant (S6) and waits until the release
// committed; a multi-lock's release names its first resource and frees
// all of them.
//
// Errors: KindFailedPrecondition / KindNotFound when the grant had already
// ended (expired, forced, lease gone); KindNoQuorum / KindUnavailable.
func (g *Guard) Release(ctx context.Context) error {
	_, err := g.s.c.Release(ctx, g.s.leaseID, g.resource, g.token)
	return err
}
