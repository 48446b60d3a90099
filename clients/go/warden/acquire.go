package warden

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/warden-locks/warden/clients/go/wardenpb"
)

// MaxWait is the longest wait one acquire asks the server for (its bound);
// [Session.Lock] repeats it until granted.
const MaxWait = time.Hour

// AcquireOptions say what an [Client.Acquire] hangs the grant on and how
// long it waits.
type AcquireOptions struct {
	// A new lease with this TTL (1 s ..= 1 h) ...
	TTL time.Duration
	// ... or an existing lease (a session's). Exactly one is set.
	LeaseID uint64
	// How long to wait in the server's FIFO queue; 0 = try-lock. At most
	// 1 h.
	Wait time.Duration
	// Lock-delay after an involuntary loss of this grant; 0 = none. At
	// most 60 s.
	LockDelay time.Duration
	// Called with each queue position report (from the goroutine running
	// the acquire; keep it short).
	OnQueued func(Queued)
	// The lock's kind and the grant's mode (docs/semantics.md "Lock
	// kinds"): ModeShared / ModeExclusive for a read-write lock; with Limit
	// > 0 and Mode unset, one permit of a semaphore of Limit; both unset, a
	// mutex. A resource keeps one kind while anything is on it: another is
	// refused with KindFailedPrecondition, its message naming "kind" or
	// "limit" and the current kind.
	Mode  LockMode
	Limit uint32
	// A multi-lock (docs/semantics.md "Multi-locks"): these resources, all
	// granted in one entry with a fencing token each, or none. The
	// resource argument is then "" or the first of them; Mode and Limit
	// stay unset.
	Resources []string
	// The grant ends no later than this after it was granted, however
	// often its lease is renewed (docs/semantics.md "Max-hold"); 0 = none.
	// 1 s ..= 24 h and longer than Wait; not on a multi-lock.
	MaxHold time.Duration

	// Set by WithWait: the session's lock calls make one acquire bounded
	// by Wait instead of waiting until ctx ends.
	waitSet bool
}

// LockMode is how a grant holds its resource.
type LockMode = wardenpb.LockMode

// The modes (wardenpb.LockMode).
const (
	// A mutex, or a semaphore permit when Limit > 0.
	ModeUnspecified = wardenpb.LockMode_LOCK_MODE_UNSPECIFIED
	// A read-write lock's reader: beside other readers, never beside a
	// writer.
	ModeShared = wardenpb.LockMode_LOCK_MODE_SHARED
	// A read-write lock's writer: alone.
	ModeExclusive = wardenpb.LockMode_LOCK_MODE_EXCLUSIVE
)

// ResourceToken is one resource of a multi-lock's grant with its fencing
// token.
type ResourceToken struct {
	Resource     string
	FencingToken uint64
}

// Queued is a queue position report of a waiting acquire.
type Queued struct {
	// 1 = next in line.
	Position uint64
	LeaseID  uint64
}

// Grant is a granted acquire.
type Grant struct {
	Resource     string
	LeaseID      uint64
	FencingToken uint64
	// The lease's TTL, as granted.
	TTL time.Duration
	// Log index of the entry that made the grant.
	LogIndex uint64
	// A semaphore permit's slot in 0..Limit (HasSlot true); the resource's
	// fence checks a permit's token per (resource, slot).
	Slot    uint32
	HasSlot bool
	// The mode asked for (ModeUnspecified for a mutex or a permit).
	Mode LockMode
	// A multi-lock's grant: every resource with its own token, in the
	// order asked (the first is also Resource and FencingToken). Empty
	// for a single resource.
	Grants []ResourceToken
	// The grant's max-hold (0 = none).
	MaxHold time.Duration
}

// Acquire takes resource on a new lease (opts.TTL) or an existing one
// (opts.LeaseID), waiting up to opts.Wait in the server's FIFO queue. A
// refusal because of the resource's state is a [*NotGrantedError] (held,
// lock-delay, wait ran out). Most callers want [Session.Lock], which keeps
// the lease alive and says how long the grant can be trusted.
//
// The request carries one request id for all its attempts: a dropped reply
// or stream (a leader change drops every stream) is re-sent to the leader
// with the same id, which re-attaches it to its waiter or returns the first
// outcome (S7). While a new lease waits, it is renewed every TTL/3.
//
// When ctx ends before the final answer, the client sends the server's
// CancelWait for this acquire (committed, exactly-once; if the grant won
// the race, the cancel releases it) and returns once it is answered: the
// error then matches ctx's error, and, if the cancel itself failed (no
// node answered within Options.CallTimeout), also that failure: the waiter
// then stays queued until its wait ends or its lease does.
//
// Errors: KindInvalidArgument naming the field (resource, resources,
// ttl_ms, wait_timeout_ms, lock_delay_ms, max_hold_ms);
// KindFailedPrecondition, its message naming "kind", "limit" or "resources", when the
// kind asked is not the resource's, or the lease already holds or waits on
// one of a multi-lock's resources; KindNotFound for an unknown lease;
// KindPermissionDenied; KindNoQuorum / KindUnavailable once the wait plus
// Options.CallTimeout has passed; KindRequestExpired.
func (c *Client) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Grant, error) {
	return c.acquire(ctx, resource, opts, opts.LeaseID == 0)
}

// acquire: renewWhileWaiting false when the caller keeps the lease alive
// itself (a session).
func (c *Client) acquire(ctx context.Context, resource string, opts AcquireOptions, renewWhileWaiting bool) (*Grant, error) {
	if opts.MaxHold < 0 {
		return nil, &Error{Kind: KindInvalidArgument, Field: "max_hold_ms", Message: "max_hold_ms: the max-hold must not be negative"}
	}
	if opts.Wait < 0 {
		return nil, &Error{Kind: KindInvalidArgument, Field: "wait_timeout_ms", Message: "wait_timeout_ms: the wait must not be negative"}
	}
	req, err := c.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer req.finish()
	msg := &wardenpb.AcquireRequest{
		Header:        req.header(c.clientID),
		Resource:      resource,
		LeaseId:       opts.LeaseID,
		WaitTimeoutMs: ms(opts.Wait),
		LockDelayMs:   ms(opts.LockDelay),
		Mode:          opts.Mode,
		Limit:         opts.Limit,
		Resources:     opts.Resources,
		MaxHoldMs:     ms(opts.MaxHold),
	}
	if resource == "" && len(opts.Resources) > 0 {
		// The cancel of a multi-lock's wait names its first resource.
		resource = opts.Resources[0]
		msg.Resource = resource
	}
	if opts.LeaseID == 0 {
		msg.TtlMs = ms(opts.TTL)
	}
	waitDeadline := time.Now().Add(opts.Wait)
	var waiting atomic.Uint64
	var keepAliveStarted atomic.Bool
	kactx, stopKeepAlive := context.WithCancel(ctx)
	defer stopKeepAlive()
	onQueued := func(q Queued) {
		waiting.Store(q.LeaseID)
		if renewWhileWaiting && opts.TTL > 0 && keepAliveStarted.CompareAndSwap(false, true) {
			go c.keepWaitingLeaseAlive(kactx, q.LeaseID, opts.TTL)
		}
		if opts.OnQueued != nil {
			opts.OnQueued(q)
		}
	}
	var grant *Grant
	var refused *NotGrantedError
	err = c.do(ctx, opts.Wait+c.opts.CallTimeout, func(ctx context.Context, _ string, conn *grpc.ClientConn) error {
		g, ng, err := c.acquireAttempt(ctx, conn, msg, waitDeadline, onQueued)
		grant, refused = g, ng
		return err
	})
	if err == nil {
		if refused != nil {
			return nil, refused
		}
		return grant, nil
	}
	if ctx.Err() == nil {
		return nil, err
	}
	var lost *LostError
	if errors.As(context.Cause(ctx), &lost) {
		// The session is lost: the wait goes with its lease.
		return nil, lost
	}
	// The caller abandoned the acquire: take the wait back (S8), with the
	// acquire's id still in flight so the server keeps its outcome.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.CallTimeout)
	defer cancel()
	if _, cerr := c.cancelWait(cctx, req.requestID, resource); cerr != nil {
		return nil, errors.Join(err, fmt.Errorf("cancel of the wait on %q (%s): %w", resource, cancelWaitMethod, cerr))
	}
	return nil, err
}

// acquireAttempt is one attempt: opens the stream and reads queue reports
// until the final message. The first message must come within the attempt
// timeout; later ones may take the rest of the wait (plus one attempt
// timeout: the server reports a timeout once its removal committed).
func (c *Client) acquireAttempt(ctx context.Context, conn *grpc.ClientConn, msg *wardenpb.AcquireRequest,
	waitDeadline time.Time, onQueued func(Queued)) (*Grant, *NotGrantedError, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := wardenpb.NewLockClient(conn).Acquire(sctx, msg)
	if err != nil {
		return nil, nil, newRPCError(err)
	}
	budget := c.opts.AttemptTimeout
	for {
		var timedOut atomic.Bool
		timer := time.AfterFunc(budget, func() { timedOut.Store(true); cancel() })
		m, err := stream.Recv()
		timer.Stop()
		if err != nil {
			if timedOut.Load() {
				return nil, nil, &rpcError{st: status.Newf(codes.DeadlineExceeded, "no answer within %d ms", budget.Milliseconds())}
			}
			if errors.Is(err, io.EOF) {
				// Cut without a final message: re-send the same id.
				return nil, nil, &rpcError{st: status.New(codes.Aborted, "acquire stream ended without a final message")}
			}
			header, _ := stream.Header()
			return nil, nil, newRPCError(err, header, stream.Trailer())
		}
		switch ev := m.GetEvent().(type) {
		case *wardenpb.AcquireResponse_Queued:
			onQueued(Queued{Position: ev.Queued.GetPosition(), LeaseID: ev.Queued.GetLeaseId()})
		case *wardenpb.AcquireResponse_Granted:
			return grantFrom(ev.Granted), nil, nil
		case *wardenpb.AcquireResponse_NotGranted:
			n := ev.NotGranted
			return nil, &NotGrantedError{Resource: n.GetResource(), Reason: NotGrantedReason(n.GetReason()),
				HolderLeaseID: n.GetHolderLeaseId()}, nil
		default:
			return nil, nil, &Error{Kind: KindTransport, Message: "acquire reply without an event"}
		}
		budget = max(time.Until(waitDeadline), 0) + c.opts.AttemptTimeout
	}
}

// keepWaitingLeaseAlive renews a new lease every TTL/3 while its acquire
// waits (a waiter whose lease dies is removed, S8).
func (c *Client) keepWaitingLeaseAlive(ctx context.Context, leaseID uint64, ttl time.Duration) {
	period := ttl / 3
	for {
		t := time.NewTimer(period)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		r, err := c.Renew(ctx, leaseID)
		switch {
		case err == nil:
			period = max(r.TTL/3, 100*time.Millisecond)
		case errors.Is(err, ErrNotFound):
			return
		default:
			period = c.opts.BackoffCap
		}
	}
}

func grantFrom(g *wardenpb.Granted) *Grant {
	out := &Grant{Resource: g.GetResource(), LeaseID: g.GetLeaseId(), FencingToken: g.GetFencingToken(),
		TTL: fromMS(g.GetTtlMs()), LogIndex: g.GetLogIndex(), Mode: g.GetMode(), MaxHold: fromMS(g.GetMaxHoldMs())}
	if g.Slot != nil {
		out.Slot, out.HasSlot = g.GetSlot(), true
	}
	for _, rt := range g.GetGrants() {
		out.Grants = append(out.Grants, ResourceToken{Resource: rt.GetResource(), FencingToken: rt.GetFencingToken()})
	}
	return out
}
