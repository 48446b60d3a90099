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
// Errors: KindInvalidArgument naming the field (resource, ttl_ms,
// wait_timeout_ms, lock_delay_ms); KindNotFound for an unknown lease;
// KindPermissionDenied; KindNoQuorum / KindUnavailable once the wait plus
// Options.CallTimeout has passed; KindRequestExpired.
func (c *Client) Acquire(ctx context.Context, resource string, opts AcquireOptions) (*Grant, error) {
	return c.acquire(ctx, resource, opts, opts.LeaseID == 0)
}

// acquire: renewWhileWaiting false when the caller keeps the lease alive
// itself (a session).
func (c *Client) acquire(ctx context.Context, resource string, opts AcquireOptions, renewWhileWaiting bool) (*Grant, error) {
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
			g := ev.Granted
			return &Grant{Resource: g.GetResource(), LeaseID: g.GetLeaseId(), FencingToken: g.GetFencingToken(),
				TTL: fromMS(g.GetTtlMs()), LogIndex: g.GetLogIndex()}, nil, nil
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
