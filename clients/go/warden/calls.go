package warden

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"

	"github.com/warden-locks/warden/clients/go/wardenpb"
)

// Holder is a resource's holder, as the leader reports it.
type Holder struct {
	LeaseID      uint64
	FencingToken uint64
	// As seen by the serving leader's deadline table.
	TTLRemaining time.Duration
	TTL          time.Duration
	// The value the holding lease published on the resource ("" if none).
	Value string
	// ModeShared for a reader, ModeExclusive for a writer, ModeUnspecified
	// for a mutex's holder or a permit.
	Mode LockMode
	// A permit's slot (HasSlot true).
	Slot    uint32
	HasSlot bool
}

// ResourceStatus is a linearizable read of one resource.
type ResourceStatus struct {
	Resource string
	// The exclusive holder (a mutex's, or a read-write lock's writer); nil
	// when the resource is free or held by readers or permits (see
	// Holders).
	Holder *Holder
	// Every holder: the exclusive one, or every reader or permit, by
	// lease id.
	Holders []Holder
	// "mutex", "read_write" or "semaphore" while anything is on the
	// resource; "" when it is free.
	Kind string
	// A semaphore's number of permits; 0 for the other kinds.
	Limit uint32
	// Waiters queued on the resource.
	Waiters uint64
	// The log index the read was served at.
	ReadIndex uint64
}

// LeaseInfo is a lease's TTL, remaining time, locks and waits.
type LeaseInfo struct {
	LeaseID      uint64
	TTL          time.Duration
	TTLRemaining time.Duration
	// Resources the lease holds and waits on, in name order.
	Locks []string
	Waits []string
	// A leader change's grace (G) was given since the last renew.
	Graced    bool
	ReadIndex uint64
}

// Lease is a granted lease.
type Lease struct {
	LeaseID uint64
	TTL     time.Duration
}

// ListedLock is one resource of [Client.List].
type ListedLock struct {
	Resource string
	// nil when nobody holds it (waiters during a lock-delay).
	Holder *ListedHolder
	// The waiting leases, in queue order (next to be granted first).
	Waiters []uint64
}

// ListedHolder is a listed resource's holder.
type ListedHolder struct {
	LeaseID      uint64
	FencingToken uint64
	TTLRemaining time.Duration
}

func ms(d time.Duration) uint64 {
	if d <= 0 {
		return 0
	}
	// Round up: a 1.5 ms wait is not a try-lock.
	return uint64((d + time.Millisecond - 1) / time.Millisecond)
}

func fromMS(v uint64) time.Duration { return time.Duration(v) * time.Millisecond }

// ClusterStatus is membership, roles, indexes, timing and bounds, as seen
// by the leader (the generated message: every field the server sends).
//
// Errors: KindNoQuorum while no leader is elected; KindUnavailable when no
// node is reachable.
func (c *Client) ClusterStatus(ctx context.Context) (*wardenpb.ClusterStatusResponse, error) {
	return c.clusterStatus(ctx, c.opts.CallTimeout)
}

func (c *Client) clusterStatus(ctx context.Context, budget time.Duration) (*wardenpb.ClusterStatusResponse, error) {
	var reply *wardenpb.ClusterStatusResponse
	err := c.do(ctx, budget, func(ctx context.Context, _ string, conn *grpc.ClientConn) error {
		r, err := unary(ctx, c.opts.AttemptTimeout, func(ctx context.Context, o ...grpc.CallOption) (*wardenpb.ClusterStatusResponse, error) {
			return wardenpb.NewLockClient(conn).ClusterStatus(ctx, &wardenpb.ClusterStatusRequest{}, o...)
		})
		reply = r
		return err
	})
	return reply, err
}

// Status reads resource's holder and queue (linearizable: served by the
// leader after a read-index round).
//
// Errors: KindInvalidArgument (Field "resource") for a bad name;
// KindNoQuorum / KindUnavailable.
func (c *Client) Status(ctx context.Context, resource string) (*ResourceStatus, error) {
	var out *ResourceStatus
	err := c.do(ctx, c.opts.CallTimeout, func(ctx context.Context, _ string, conn *grpc.ClientConn) error {
		r, err := unary(ctx, c.opts.AttemptTimeout, func(ctx context.Context, o ...grpc.CallOption) (*wardenpb.StatusResponse, error) {
			return wardenpb.NewLockClient(conn).Status(ctx, &wardenpb.StatusRequest{Resource: resource}, o...)
		})
		if err != nil {
			return err
		}
		out = &ResourceStatus{Resource: r.GetResource(), Waiters: r.GetWaiters(), ReadIndex: r.GetReadIndex(),
			Kind: r.GetKind(), Limit: r.GetLimit()}
		if h := r.GetHolder(); h != nil {
			hh := holderFrom(h)
			out.Holder = &hh
		}
		for _, h := range r.GetHolders() {
			out.Holders = append(out.Holders, holderFrom(h))
		}
		return nil
	})
	return out, err
}

// TokenState is what [Client.Validate] says of a fencing token.
type TokenState = wardenpb.TokenState

// Validate asks whether fencingToken is the current grant of resource (a
// linearizable read, Chubby's CheckSequencer). Advisory: the holder may
// lose the lock a moment later; only the resource-side check (keep the
// highest token accepted, reject a lower one, in the write's own
// transaction) closes that window.
func (c *Client) Validate(ctx context.Context, resource string, fencingToken uint64) (TokenState, error) {
	var state TokenState
	err := c.do(ctx, c.opts.CallTimeout, func(ctx context.Context, _ string, conn *grpc.ClientConn) error {
		r, err := unary(ctx, c.opts.AttemptTimeout, func(ctx context.Context, o ...grpc.CallOption) (*wardenpb.ValidateResponse, error) {
			return wardenpb.NewLockClient(conn).Validate(ctx, &wardenpb.ValidateRequest{Resource: resource, FencingToken: fencingToken}, o...)
		})
		state = r.GetState()
		return err
	})
	return state, err
}

// LeaseGrant creates a lease with no lock, which lives while renewed (1 s
// ..= 1 h). Most callers want [Client.Session], which also keeps it alive.
// Retried across leader changes with one request id (S7).
//
// Errors: KindInvalidArgument (Field "ttl_ms"); KindResourceExhausted;
// KindNoQuorum / KindUnavailable.
func (c *Client) LeaseGrant(ctx context.Context, ttl time.Duration) (Lease, error) {
	req, err := c.begin(ctx)
	if err != nil {
		return Lease{}, err
	}
	defer req.finish()
	msg := &wardenpb.LeaseGrantRequest{Header: req.header(c.clientID), TtlMs: ms(ttl)}
	var out Lease
	err = c.do(ctx, c.opts.CallTimeout, func(ctx context.Context, _ string, conn *grpc.ClientConn) error {
		r, err := unary(ctx, c.opts.AttemptTimeout, func(ctx context.Context, o ...grpc.CallOption) (*wardenpb.LeaseGrantResponse, error) {
			return wardenpb.NewLeaseClient(conn).LeaseGrant(ctx, msg, o...)
		})
		out = Lease{LeaseID: r.GetLeaseId(), TTL: fromMS(r.GetTtlMs())}
		return err
	})
	return out, err
}

// LeaseTimeToLive reads a lease's TTL, time left (as the leader's deadline
// table sees it), locks and waits. KindNotFound when it is not live.
func (c *Client) LeaseTimeToLive(ctx context.Context, leaseID uint64) (*LeaseInfo, error) {
	var out *LeaseInfo
	err := c.do(ctx, c.opts.CallTimeout, func(ctx context.Context, _ string, conn *grpc.ClientConn) error {
		r, err := unary(ctx, c.opts.AttemptTimeout, func(ctx context.Context, o ...grpc.CallOption) (*wardenpb.LeaseTimeToLiveResponse, error) {
			return wardenpb.NewLeaseClient(conn).LeaseTimeToLive(ctx, &wardenpb.LeaseTimeToLiveRequest{LeaseId: leaseID}, o...)
		})
		if err != nil {
			return err
		}
		out = &LeaseInfo{
			LeaseID: r.GetLeaseId(), TTL: fromMS(r.GetTtlMs()), TTLRemaining: fromMS(r.GetTtlRemainingMs()),
			Locks: r.GetLocks(), Waits: r.GetWaits(), Graced: r.GetGraced(), ReadIndex: r.GetReadIndex(),
		}
		return nil
	})
	return out, err
}

// RenewResult is an acknowledged renew.
type RenewResult struct {
	LeaseID uint64
	TTL     time.Duration
	// The attempt's sequence number, echoed by the server.
	Sequence uint64
}

// Renew renews a lease once (its countdown restarts with its full TTL once
// the renew committed, S4). Each attempt is a new renew with a new sequence
// number, which the reply must echo. A [Session] renews its lease itself.
//
// Errors: KindNotFound when the lease is gone (it cannot be renewed back to
// life; another principal's lease answers the same); KindTransport when the
// reply does not echo the sequence.
func (c *Client) Renew(ctx context.Context, leaseID uint64) (RenewResult, error) {
	var out RenewResult
	err := c.do(ctx, c.opts.CallTimeout, func(ctx context.Context, _ string, conn *grpc.ClientConn) error {
		seq := c.sequence.Add(1)
		r, err := unary(ctx, c.opts.AttemptTimeout, func(ctx context.Context, o ...grpc.CallOption) (*wardenpb.RenewResponse, error) {
			return wardenpb.NewLockClient(conn).Renew(ctx, &wardenpb.RenewRequest{LeaseId: leaseID, ClientId: c.clientID, Sequence: seq}, o...)
		})
		if err != nil {
			return err
		}
		if r.GetSequence() != seq {
			return &Error{Kind: KindTransport, Message: fmt.Sprintf("renew reply carries sequence %d but the attempt sent %d", r.GetSequence(), seq)}
		}
		out = RenewResult{LeaseID: r.GetLeaseId(), TTL: fromMS(r.GetTtlMs()), Sequence: seq}
		return nil
	})
	return out, err
}

// Revoke revokes a lease: every lock it holds is released (cleanly: no
// lock-delay) and its waits are removed, in one committed entry. Retried
// with one request id (S7).
//
// Errors: KindNotFound when the lease is not live, or is another
// principal's (no lease id tells whether it is live).
func (c *Client) Revoke(ctx context.Context, leaseID uint64) error {
	req, err := c.begin(ctx)
	if err != nil {
		return err
	}
	defer req.finish()
	msg := &wardenpb.LeaseRevokeRequest{Header: req.header(c.clientID), LeaseId: leaseID}
	return c.do(ctx, c.opts.CallTimeout, func(ctx context.Context, _ string, conn *grpc.ClientConn) error {
		_, err := unary(ctx, c.opts.AttemptTimeout, func(ctx context.Context, o ...grpc.CallOption) (*wardenpb.LeaseRevokeResponse, error) {
			return wardenpb.NewLockClient(conn).LeaseRevoke(ctx, msg, o...)
		})
		return err
	})
}

// Release releases the grant of resource held by leaseID. With a non-zero
// fencingToken only that exact grant is released: a late release carrying
// an old token never frees a newer grant (S6). Returns whether a grant was
// released. Retried with one request id (S7).
//
// Errors: KindNotFound for an unknown lease; KindFailedPrecondition for a
// stale token or another holder. Another principal's lease answers as one
// that does not exist.
func (c *Client) Release(ctx context.Context, leaseID uint64, resource string, fencingToken uint64) (bool, error) {
	req, err := c.begin(ctx)
	if err != nil {
		return false, err
	}
	defer req.finish()
	msg := &wardenpb.ReleaseRequest{Header: req.header(c.clientID), Resource: resource, LeaseId: leaseID, FencingToken: fencingToken}
	released := false
	err = c.do(ctx, c.opts.CallTimeout, func(ctx context.Context, _ string, conn *grpc.ClientConn) error {
		r, err := unary(ctx, c.opts.AttemptTimeout, func(ctx context.Context, o ...grpc.CallOption) (*wardenpb.ReleaseResponse, error) {
			return wardenpb.NewLockClient(conn).Release(ctx, msg, o...)
		})
		released = r.GetReleased()
		return err
	})
	return released, err
}

// Proclaim publishes value for leaseID on resource (elections; see
// [Election]). fencingToken 0: a candidate's value; otherwise the lease
// must hold resource with exactly that grant. Idempotent, so retried
// freely.
//
// Errors: KindInvalidArgument (a value over 4,096 bytes); KindNotFound (the
// lease is not live); KindFailedPrecondition (the lease no longer holds
// that grant: a deposed leader cannot proclaim).
func (c *Client) Proclaim(ctx context.Context, resource string, leaseID, fencingToken uint64, value string) error {
	msg := &wardenpb.ProclaimRequest{Resource: resource, LeaseId: leaseID, FencingToken: fencingToken, Value: value}
	return c.do(ctx, c.opts.CallTimeout, func(ctx context.Context, _ string, conn *grpc.ClientConn) error {
		_, err := unary(ctx, c.opts.AttemptTimeout, func(ctx context.Context, o ...grpc.CallOption) (*wardenpb.ProclaimResponse, error) {
			return wardenpb.NewLockClient(conn).Proclaim(ctx, msg, o...)
		})
		return err
	})
}

// List lists every resource whose name starts with prefix ("" = all): its
// holder and its waiters in queue order (a linearizable read).
func (c *Client) List(ctx context.Context, prefix string) ([]ListedLock, error) {
	var out []ListedLock
	err := c.do(ctx, c.opts.CallTimeout, func(ctx context.Context, _ string, conn *grpc.ClientConn) error {
		r, err := unary(ctx, c.opts.AttemptTimeout, func(ctx context.Context, o ...grpc.CallOption) (*wardenpb.ListResponse, error) {
			return wardenpb.NewAdminClient(conn).List(ctx, &wardenpb.ListRequest{Prefix: prefix}, o...)
		})
		if err != nil {
			return err
		}
		out = out[:0]
		for _, l := range r.GetLocks() {
			item := ListedLock{Resource: l.GetResource()}
			if h := l.GetHolder(); h != nil {
				item.Holder = &ListedHolder{LeaseID: h.GetLeaseId(), FencingToken: h.GetFencingToken(), TTLRemaining: fromMS(h.GetTtlRemainingMs())}
			}
			for _, w := range l.GetWaiters() {
				item.Waiters = append(item.Waiters, w.GetLeaseId())
			}
			out = append(out, item)
		}
		return nil
	})
	return out, err
}

func holderFrom(h *wardenpb.Holder) Holder {
	out := Holder{
		LeaseID: h.GetLeaseId(), FencingToken: h.GetFencingToken(),
		TTLRemaining: fromMS(h.GetTtlRemainingMs()), TTL: fromMS(h.GetTtlMs()), Value: h.GetValue(),
		Mode: h.GetMode(),
	}
	if h.Slot != nil {
		out.Slot, out.HasSlot = h.GetSlot(), true
	}
	return out
}
