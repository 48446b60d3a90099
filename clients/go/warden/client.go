package warden

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
)

// Defaults of [Options].
const (
	DefaultCallTimeout    = 5 * time.Second
	DefaultAttemptTimeout = 500 * time.Millisecond
	DefaultBackoffCap     = 200 * time.Millisecond
)

// maxID is the largest id the cluster hands out (2^53 − 1); the client id
// stays below it too, so it is safe in JSON.
const maxID = 1<<53 - 1

// Options tune a [Client]. The zero value is the defaults, plaintext.
type Options struct {
	// The longest a whole call may take, retries included (a waiting
	// acquire gets its wait plus this). A context deadline that comes
	// first wins. Default 5 s.
	CallTimeout time.Duration
	// The longest one attempt waits for an answer before the next
	// endpoint is tried. Default 500 ms.
	AttemptTimeout time.Duration
	// The longest pause between two rounds of endpoints. Default 200 ms.
	BackoffCap time.Duration
	// Mutual TLS; nil = plaintext (a server started with --insecure).
	TLS *TLSOptions
	// Extra gRPC dial options, added after the client's own.
	DialOptions []grpc.DialOption
}

func (o Options) withDefaults() (Options, error) {
	if o.CallTimeout < 0 || o.AttemptTimeout < 0 || o.BackoffCap < 0 {
		return o, &Error{Kind: KindInvalidArgument, Field: "options", Message: "options: timeouts must not be negative"}
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.AttemptTimeout == 0 {
		o.AttemptTimeout = DefaultAttemptTimeout
	}
	if o.BackoffCap == 0 {
		o.BackoffCap = DefaultBackoffCap
	}
	return o, nil
}

// Client talks to a Warden cluster. It is safe for concurrent use; make one
// per process (or per principal) and share it: its client id and request
// ids make every mutating call exactly-once (docs/semantics.md S7).
//
// Every call goes to the last known leader first. A node that is not the
// leader answers Unavailable with the leader's address in the
// `warden-leader` metadata; the call is re-sent there at once. A node that
// cannot be reached, or knows no leader, makes the client try the next
// endpoint at once; after a whole round failed it pauses (25 ms doubling,
// capped at Options.BackoffCap). Each attempt waits at most
// Options.AttemptTimeout, the whole call at most Options.CallTimeout (or
// the context's deadline); then it fails with KindNoQuorum (servers
// answered, none could serve) or KindUnavailable (none reachable), naming
// the addresses tried. A retried mutation reuses its request id, so the
// server applies it once.
type Client struct {
	endpoints []string
	opts      Options
	clientID  uint64
	creds     credentials.TransportCredentials
	ids       *requestIDs
	// Keep-alive sequence numbers, one per renew attempt, echoed by the
	// server (S5).
	sequence atomic.Uint64

	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	leader string
	closed bool

	published publishedSettings
}

// New builds a client for the cluster reachable at endpoints (`host:port`,
// any members; the leader is found by following hints). It makes no
// connection: connections open on first use, so it succeeds while every
// node is down.
//
// Errors: KindInvalidArgument for an empty list or a malformed endpoint; a
// [*TLSError] naming a TLS file that cannot be loaded.
func New(endpoints []string, opts Options) (*Client, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if len(endpoints) == 0 {
		return nil, &Error{Kind: KindInvalidArgument, Field: "endpoints", Message: "endpoints: at least one host:port is required"}
	}
	var canonical []string
	for _, raw := range endpoints {
		ep, err := ParseEndpoint(raw)
		if err != nil {
			return nil, &Error{Kind: KindInvalidArgument, Field: "endpoints", Message: err.Error()}
		}
		if !containsString(canonical, ep) {
			canonical = append(canonical, ep)
		}
	}
	creds := insecure.NewCredentials()
	if opts.TLS != nil {
		cfg, err := opts.TLS.Config()
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(cfg)
	}
	id, err := randomClientID()
	if err != nil {
		return nil, err
	}
	return &Client{
		endpoints: canonical,
		opts:      opts,
		clientID:  id,
		creds:     creds,
		ids:       newRequestIDs(DefaultMaxRequestsInFlight),
		conns:     map[string]*grpc.ClientConn{},
	}, nil
}

func randomClientID() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("client id: %w", err)
		}
		if id := binary.LittleEndian.Uint64(b[:]) & maxID; id != 0 {
			return id, nil
		}
	}
}

func containsString(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// ClientID is this client's id, sent with every mutating request (S7):
// random, never 0, below 2^53.
func (c *Client) ClientID() uint64 { return c.clientID }

// Endpoints are the endpoints in canonical host:port form, without
// duplicates.
func (c *Client) Endpoints() []string { return append([]string(nil), c.endpoints...) }

// CachedLeader is the address that last served a call ("" if none yet).
func (c *Client) CachedLeader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// Close closes every connection. Sessions made with the client stop being
// renewed and are lost; close them first.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for addr, conn := range c.conns {
		if err := conn.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		}
		delete(c.conns, addr)
	}
	return errors.Join(errs...)
}

func (c *Client) setLeader(addr string) {
	c.mu.Lock()
	c.leader = addr
	c.mu.Unlock()
}

func (c *Client) forgetLeader(addr string) {
	c.mu.Lock()
	if c.leader == addr {
		c.leader = ""
	}
	c.mu.Unlock()
}

// conn is the (lazily connecting) channel to addr.
func (c *Client) conn(addr string) (*grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, &Error{Kind: KindCanceled, Message: "the client is closed", cause: context.Canceled}
	}
	if conn, ok := c.conns[addr]; ok {
		return conn, nil
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(c.creds),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: grpcbackoff.Config{
				BaseDelay:  100 * time.Millisecond,
				Multiplier: 1.6,
				Jitter:     0.2,
				MaxDelay:   2 * time.Second,
			},
			MinConnectTimeout: c.opts.AttemptTimeout,
		}),
		// Detects a dead leader under a long wait (gRPC's floor is 10 s).
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time:                10 * time.Second,
			Timeout:             2 * time.Second,
			PermitWithoutStream: true,
		}),
	}
	opts = append(opts, c.opts.DialOptions...)
	conn, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		return nil, &Error{Kind: KindInvalidArgument, Field: "endpoints", Message: fmt.Sprintf("%s: %v", addr, err)}
	}
	c.conns[addr] = conn
	return conn, nil
}

// attemptFunc is one attempt of a call at addr. It returns nil, an
// [*rpcError] (judged by the retry loop), or any other error (final).
type attemptFunc func(ctx context.Context, addr string, conn *grpc.ClientConn) error

// do is the client's one retry loop: it runs attempt against the leader,
// following hints and rotating over the endpoints, until it succeeds, fails
// for good, ctx ends, or budget (from now) passes.
//
// Every failure that is not a final answer is retried, timeouts and
// dropped connections included, so attempt must be safe to repeat: a read,
// a renew, or a mutation that carries a request id (S7). A node answering
// Unimplemented is passed over; when every endpoint did, the call fails
// with KindUnimplemented.
func (c *Client) do(ctx context.Context, budget time.Duration, attempt attemptFunc) error {
	started := time.Now()
	deadline := started.Add(budget)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	cctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	plan, target := newCallPlan(c.endpoints, c.CachedLeader(), c.opts.BackoffCap)
	serverAnswered := false
	unimplemented := map[string]bool{}
	last := ""
	for {
		conn, err := c.conn(target)
		if err != nil {
			return err
		}
		err = attempt(cctx, target, conn)
		if err == nil {
			c.setLeader(target)
			return nil
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			return asContextError(ctx)
		}
		var re *rpcError
		if !errors.As(err, &re) {
			return err
		}
		f := judge(re)
		last = target + ": " + describe(f)
		if f.st.Code() == codes.Unimplemented {
			unimplemented[target] = true
			if len(unimplemented) >= len(c.endpoints) {
				return f.typed()
			}
		} else if !f.retryable() {
			// The node answered for the cluster: as good a first try as
			// any next time.
			c.setLeader(target)
			return f.typed()
		}
		serverAnswered = serverAnswered || (f.answered && f.st.Code() == codes.Unavailable)
		c.forgetLeader(target)
		pause, next := plan.afterFailure(target, leaderHint(f.md), f.answered)
		if !time.Now().Add(pause).Before(deadline) || cctx.Err() != nil {
			break
		}
		if pause > 0 {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-cctx.Done():
				t.Stop()
			}
			if errors.Is(ctx.Err(), context.Canceled) {
				return asContextError(ctx)
			}
		}
		target = next
	}
	kind := KindUnavailable
	if serverAnswered {
		kind = KindNoQuorum
	}
	// A caller's deadline that ended the call still matches
	// errors.Is(err, context.DeadlineExceeded).
	return &Error{Kind: kind, Code: codes.Unavailable, Tried: plan.tried, Waited: time.Since(started), Last: last, cause: ctx.Err()}
}

// unary runs one unary attempt bounded by the attempt timeout, keeping the
// reply's metadata for the retry loop.
func unary[T any](ctx context.Context, timeout time.Duration, call func(ctx context.Context, opts ...grpc.CallOption) (T, error)) (T, error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var header, trailer metadata.MD
	reply, err := call(actx, grpc.Header(&header), grpc.Trailer(&trailer))
	if err != nil {
		return reply, newRPCError(err, header, trailer)
	}
	return reply, nil
}

// begin takes a request id for a mutating call (applying the window the
// server publishes, once known).
func (c *Client) begin(ctx context.Context) (*inFlightRequest, error) {
	c.loadPublished(ctx)
	return c.ids.begin(ctx)
}
