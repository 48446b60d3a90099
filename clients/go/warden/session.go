package warden

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

const (
	// lostTimerSlack: the loss is declared this much before valid_until
	// (Go timers never fire early but may fire late: on a busy machine a
	// wake-up several milliseconds late is common), so Done is closed no
	// later than valid_until (S5). Check compares the clock itself and is
	// exact.
	lostTimerSlack = 25 * time.Millisecond
	// maxSleep: a timer never sleeps longer than this in one go. Go's
	// timers run on CLOCK_MONOTONIC, which stops while the machine is
	// suspended; the session clock (CLOCK_BOOTTIME) does not, so a long
	// sleep re-reads the session clock at least this often.
	maxSleep = time.Second
	// revokeAfterLossTimeout bounds the best-effort revoke of a lease lost
	// by time.
	revokeAfterLossTimeout = time.Second
)

// LostReason is why a session was lost.
type LostReason int

// The reasons.
const (
	// No renew was acknowledged in time: the session clock passed
	// ValidUntil (no server reachable, no quorum, or this process was
	// paused). The server may already have expired the lease and granted
	// its locks to others.
	LostExpired LostReason = iota + 1
	// The server no longer has the lease (it expired, or someone revoked
	// it, e.g. `warden lease revoke`).
	LostLeaseGone
	// The session clock could not be read: validity cannot be measured.
	LostClockFailed
	// Close was called.
	LostClosed
)

// LostError says why a session (and every lock on it) can no longer be
// trusted. A lost session stays lost: open a new one. Match any with
// errors.Is(err, ErrSessionLost).
type LostError struct {
	Reason  LostReason
	LeaseID uint64
	// LostExpired: the valid_until that passed, on the session clock.
	ValidUntil time.Duration
	// LostClockFailed: the clock's error.
	Err error
	// The session clock's reading when the loss was declared (0 if the
	// clock failed).
	At time.Duration
}

func (e *LostError) Error() string {
	switch e.Reason {
	case LostExpired:
		return fmt.Sprintf("session lost: lease %d was valid until %d ms on the session clock, and no renew was acknowledged in time", e.LeaseID, e.ValidUntil.Milliseconds())
	case LostLeaseGone:
		return fmt.Sprintf("session lost: the cluster no longer has lease %d", e.LeaseID)
	case LostClockFailed:
		return fmt.Sprintf("session lost: %v; the validity of lease %d cannot be measured", e.Err, e.LeaseID)
	default:
		return fmt.Sprintf("session of lease %d closed", e.LeaseID)
	}
}

// Is matches ErrSessionLost (any reason) and ErrSessionClosed.
func (e *LostError) Is(target error) bool {
	t, ok := target.(*LostError)
	return ok && (t.Reason == 0 || t.Reason == e.Reason)
}

// Unwrap gives the clock's error of LostClockFailed.
func (e *LostError) Unwrap() error { return e.Err }

// Sentinels for errors.Is on a [*LostError].
var (
	ErrSessionLost   = &LostError{}
	ErrSessionClosed = &LostError{Reason: LostClosed}
)

// SessionOption tunes [Client.Session].
type SessionOption func(*sessionConfig)

type sessionConfig struct{ clock Clock }

// WithClock measures validity on clock instead of CLOCK_BOOTTIME.
func WithClock(clock Clock) SessionOption { return func(c *sessionConfig) { c.clock = clock } }

// Session is a lease kept alive in the background (etcd's
// concurrency.Session, a ZooKeeper session): one heartbeat for every lock
// taken on it.
//
// Validity (docs/semantics.md S5). ValidUntil is, on the session clock
// (CLOCK_BOOTTIME by default), the send time of the keep-alive whose
// acknowledgement was last received (matched by its echoed sequence; for
// the lease grant, its first attempt) plus TTL × (1 − 2ρ) − 50 ms
// ([Validity]). The server never expires the lease before send + TTL ×
// (1 − ρ) (S4), so while Check passes no one else can have been granted
// this session's locks.
//
// Loss. Done is closed no later than ValidUntil if no keep-alive was
// acknowledged by then (also when no server can be reached), as soon as
// the server says the lease is gone, when the clock fails, or on Close; Err
// then says why. A timer can fire late after a process pause, so call Check
// right before each protected write: it compares the clock with ValidUntil
// synchronously.
//
// Leader changes are invisible here: keep-alives follow the leader like
// every call, and the first leader after a lease's last committed renew
// keeps it at least G = 1 s (L4), which covers the retry path.
type Session struct {
	c       *Client
	leaseID uint64
	ttl     time.Duration
	clock   Clock

	// Cancelled, with the *LostError as its cause, when the session is
	// lost: stops the keep-alive, the watchdog and the waits on the
	// session.
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	wg     sync.WaitGroup

	mu         sync.Mutex
	validUntil time.Duration
	lost       *LostError
}

// Session opens a session with this TTL (1 s ..= 1 h, whole milliseconds):
// a lease granted with one request id (retried across leader changes, S7)
// and renewed every TTL/3 until Close or the loss.
//
// Errors: KindInvalidArgument (Field "ttl_ms"); KindResourceExhausted;
// KindNoQuorum / KindUnavailable; a [*ClockError] when the session clock
// cannot be read.
func (c *Client) Session(ctx context.Context, ttl time.Duration, opts ...SessionOption) (*Session, error) {
	cfg := sessionConfig{clock: BootClock{}}
	for _, o := range opts {
		o(&cfg)
	}
	// The grant took effect at or after its first attempt's send, so
	// validity counts from there (S5).
	sentAt, err := cfg.clock.Now()
	if err != nil {
		return nil, &ClockError{Err: err}
	}
	lease, err := c.LeaseGrant(ctx, ttl)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancelCause(context.Background())
	s := &Session{
		c: c, leaseID: lease.LeaseID, ttl: lease.TTL, clock: cfg.clock,
		ctx: sctx, cancel: cancel, done: make(chan struct{}),
		validUntil: sentAt + Validity(lease.TTL),
	}
	s.wg.Add(2)
	go s.keepAlive(sentAt)
	go s.watchdog()
	return s, nil
}

// LeaseID is the session's lease.
func (s *Session) LeaseID() uint64 { return s.leaseID }

// TTL is the lease's TTL as the server granted it.
func (s *Session) TTL() time.Duration { return s.ttl }

// Client is the client the session uses.
func (s *Session) Client() *Client { return s.c }

// Clock is the clock ValidUntil is measured on.
func (s *Session) Clock() Clock { return s.clock }

// ValidUntil is the instant, on the session clock, until which the session
// (and every lock on it) is certainly still held, unless it is already
// lost (S5). It only moves forward.
func (s *Session) ValidUntil() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.validUntil
}

// TimeLeft is the time until ValidUntil; 0 once lost.
func (s *Session) TimeLeft() time.Duration {
	if s.Check() != nil {
		return 0
	}
	now, err := s.clock.Now()
	if err != nil {
		return 0
	}
	return max(s.ValidUntil()-now, 0)
}

// Check returns nil while the session is valid: not lost, and the session
// clock is before ValidUntil. Synchronous and cheap: call it right before
// each write a lock protects. A failure marks the session lost for good and
// returns the [*LostError].
func (s *Session) Check() error {
	s.mu.Lock()
	lost, until := s.lost, s.validUntil
	s.mu.Unlock()
	if lost != nil {
		return lost
	}
	now, err := s.clock.Now()
	if err != nil {
		return s.lose(&LostError{Reason: LostClockFailed, LeaseID: s.leaseID, Err: err})
	}
	if now >= until {
		return s.lose(&LostError{Reason: LostExpired, LeaseID: s.leaseID, ValidUntil: until})
	}
	return nil
}

// Done is closed when the session is lost (see [Session]); Err says why.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err is nil while the session is not known to be lost, then the
// [*LostError].
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lost == nil {
		return nil
	}
	return s.lost
}

// lose marks the session lost (the first reason wins) and returns the
// reason in force.
func (s *Session) lose(reason *LostError) *LostError {
	s.mu.Lock()
	if s.lost != nil {
		kept := s.lost
		s.mu.Unlock()
		return kept
	}
	if reason.At == 0 {
		reason.At, _ = s.clock.Now()
	}
	s.lost = reason
	s.mu.Unlock()
	close(s.done)
	s.cancel(reason)
	return reason
}

// Close ends the session: marks it lost (ErrSessionClosed), stops the
// keep-alive and revokes the lease, which releases every lock on it
// (cleanly: no lock-delay) and removes its waits in one committed entry. A
// lease the server no longer has is not an error.
//
// Errors: KindNoQuorum / KindUnavailable if the revoke did not commit in
// time (the lease then expires after its TTL).
func (s *Session) Close(ctx context.Context) error {
	s.lose(&LostError{Reason: LostClosed, LeaseID: s.leaseID})
	s.wg.Wait()
	err := s.c.Revoke(ctx, s.leaseID)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// sleepUntil sleeps until `at` on the session clock, re-reading it at
// least every maxSleep; false when the session ended first or the clock
// failed (the session is then lost).
func (s *Session) sleepUntil(at time.Duration) bool {
	for {
		now, err := s.clock.Now()
		if err != nil {
			s.lose(&LostError{Reason: LostClockFailed, LeaseID: s.leaseID, Err: err})
			return false
		}
		if now >= at {
			return true
		}
		t := time.NewTimer(min(at-now, maxSleep))
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			return false
		}
	}
}

// watchdog declares the loss at valid_until (minus the timer slack) unless
// a keep-alive moved it first.
func (s *Session) watchdog() {
	defer s.wg.Done()
	for {
		until := s.ValidUntil()
		if !s.sleepUntil(until - lostTimerSlack) {
			return
		}
		if s.ValidUntil() == until {
			s.lose(&LostError{Reason: LostExpired, LeaseID: s.leaseID, ValidUntil: until})
			s.revokeAfterLoss()
			return
		}
	}
}

// revokeAfterLoss: lost by time, the lease may still be live on the server
// and nobody here trusts it: revoking frees its locks sooner (best effort).
func (s *Session) revokeAfterLoss() {
	ctx, cancel := context.WithTimeout(context.Background(), revokeAfterLossTimeout)
	defer cancel()
	_ = s.c.Revoke(ctx, s.leaseID)
}

// keepAlive renews every TTL/3 (counted from the last acknowledged send),
// retrying a failed renew at once (the renew itself backs off), until the
// session is lost. Each acknowledgement moves valid_until to its request's
// send + Validity(TTL), never backwards.
func (s *Session) keepAlive(lastSent time.Duration) {
	defer s.wg.Done()
	k := &keepAliver{c: s.c, leaseID: s.leaseID, clock: s.clock}
	defer k.close()
	period := s.ttl / 3
	for {
		if !s.sleepUntil(lastSent + period) {
			return
		}
		sentAt, ttl, err := k.renew(s.ctx)
		switch {
		case err == nil:
			lastSent = sentAt
			s.mu.Lock()
			if until := sentAt + Validity(ttl); s.lost == nil && until > s.validUntil {
				s.validUntil = until
			}
			s.mu.Unlock()
		case errors.Is(err, errLeaseGone), errors.Is(err, ErrNotFound):
			s.lose(&LostError{Reason: LostLeaseGone, LeaseID: s.leaseID})
			return
		case s.ctx.Err() != nil:
			return
		default:
			var ce *ClockError
			if errors.As(err, &ce) {
				s.lose(&LostError{Reason: LostClockFailed, LeaseID: s.leaseID, Err: ce.Err})
				return
			}
			// A final refusal (e.g. permission denied) or the renew's
			// own give-up: try again now; the watchdog declares the
			// loss at valid_until if nothing is acknowledged by then.
			now, cerr := s.clock.Now()
			if cerr != nil {
				s.lose(&LostError{Reason: LostClockFailed, LeaseID: s.leaseID, Err: cerr})
				return
			}
			lastSent = now - period + s.c.opts.BackoffCap
		}
	}
}
