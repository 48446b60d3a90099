package warden

import (
	"context"
	"errors"
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

// Lock takes resource on the session's lease, waiting in the server's FIFO
// queue until it is granted or ctx ends (etcd's Mutex.Lock). The waiter is
// kept across leader changes (S8). When ctx ends first, the wait is taken
// back with the server's CancelWait before Lock returns (see
// [Client.Acquire]); the error matches ctx's error.
//
// Errors: a [*LostError] when the session is lost first (the wait goes with
// the lease); KindInvalidArgument (Field "resource"); KindNoQuorum /
// KindUnavailable; ctx's error.
func (s *Session) Lock(ctx context.Context, resource string, opts ...LockOption) (*Guard, error) {
	for {
		wait := MaxWait
		if d, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(d))
		}
		if wait <= 0 {
			return nil, asContextError(ctx)
		}
		g, err := s.acquire(ctx, resource, wait, opts)
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
	if err := s.Check(); err != nil {
		return nil, err
	}
	o := AcquireOptions{LeaseID: s.leaseID, Wait: wait}
	for _, opt := range opts {
		opt(&o)
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
	return &Guard{s: s, resource: g.Resource, token: g.FencingToken, logIndex: g.LogIndex}, nil
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
}

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

// ValidUntil: see [Session.ValidUntil].
func (g *Guard) ValidUntil() time.Duration { return g.s.ValidUntil() }

// Check: see [Session.Check].
func (g *Guard) Check() error { return g.s.Check() }

// Done: see [Session.Done].
func (g *Guard) Done() <-chan struct{} { return g.s.Done() }

// Release releases this exact grant (S6) and waits until the release
// committed.
//
// Errors: KindFailedPrecondition / KindNotFound when the grant had already
// ended (expired, forced, lease gone); KindNoQuorum / KindUnavailable.
func (g *Guard) Release(ctx context.Context) error {
	_, err := g.s.c.Release(ctx, g.s.leaseID, g.resource, g.token)
	return err
}
