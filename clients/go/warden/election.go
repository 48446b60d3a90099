package warden

import (
	"context"
	"time"
)

// LeaderInfo is an election's leader as the cluster reports it.
type LeaderInfo struct {
	// The leader's session lease.
	LeaseID uint64
	// The token of its term of office: larger than every earlier term's.
	FencingToken uint64
	// The value it published (campaign or proclaim).
	Value string
}

// Election is one election, campaigned in with a [Session] (etcd's
// concurrency.Election: campaign, proclaim, leader, observe, resign), with
// a fencing token for each term of office.
//
// An election named N is the lock-table key prefix + N, where the prefix is
// the one the server publishes (DefaultElectionPrefix until it does):
// elections live in their own namespace, apart from lock resources. A
// campaigner publishes its value as a candidate, then waits in the key's
// FIFO queue (S8: first come, first elected); its grant is its term of
// office, and the grant's fencing token is the term's token.
type Election struct {
	s    *Session
	name string
}

// NewElection is election name (1..=512 bytes of UTF-8 without control
// characters, as a resource name) for session s.
func NewElection(s *Session, name string) *Election { return &Election{s: s, name: name} }

// Name is the election's name.
func (e *Election) Name() string { return e.name }

// Key is the election's lock-table key.
func (e *Election) Key(ctx context.Context) string { return e.s.c.electionPrefix(ctx) + e.name }

// Campaign stands with value (at most 4,096 bytes) and waits until elected
// or ctx ends (opts as for [Session.Lock], e.g. OnQueued): the session publishes its value as a candidate, queues for
// the election, and once granted publishes the value again with the term's
// token. The wait survives leader changes of the cluster (S8); a ctx that
// ends first takes the wait back (as [Session.Lock]).
//
// Errors: a [*LostError] when the session is lost first (the candidacy goes
// with the lease); KindInvalidArgument for a bad name or value; ctx's error.
func (e *Election) Campaign(ctx context.Context, value string, opts ...LockOption) (*Leadership, error) {
	if err := e.s.Check(); err != nil {
		return nil, err
	}
	key := e.Key(ctx)
	if err := e.s.c.Proclaim(ctx, key, e.s.leaseID, 0, value); err != nil {
		return nil, err
	}
	g, err := e.s.Lock(ctx, key, opts...)
	if err != nil {
		return nil, err
	}
	l := &Leadership{g: g, name: e.name, key: key}
	if err := l.Proclaim(ctx, value); err != nil {
		// Not handed out: step down rather than lead unknowingly.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.s.c.opts.CallTimeout)
		defer cancel()
		_ = g.Release(rctx)
		return nil, err
	}
	return l, nil
}

// Leader is the current leader, nil if none (a linearizable read).
func (e *Election) Leader(ctx context.Context) (*LeaderInfo, error) {
	return e.s.c.Leader(ctx, e.name)
}

// Observe follows the election: see [Observer].
func (e *Election) Observe(ctx context.Context) (*Observer, error) {
	return e.s.c.Observe(ctx, e.name)
}

// Leader is the current leader of election name, nil if none (a
// linearizable read; no session needed).
func (c *Client) Leader(ctx context.Context, name string) (*LeaderInfo, error) {
	return c.leaderOf(ctx, c.electionPrefix(ctx)+name)
}

func (c *Client) leaderOf(ctx context.Context, key string) (*LeaderInfo, error) {
	st, err := c.Status(ctx, key)
	if err != nil || st.Holder == nil {
		return nil, err
	}
	return &LeaderInfo{LeaseID: st.Holder.LeaseID, FencingToken: st.Holder.FencingToken, Value: st.Holder.Value}, nil
}

// Leadership is a term of office: the election's lock, held by the
// session. Valid while the session is (Check before each act of the
// leader); pass FencingToken with every write so that a deposed leader's
// writes are rejected (S2).
type Leadership struct {
	g    *Guard
	name string
	key  string
}

// Name is the election's name.
func (l *Leadership) Name() string { return l.name }

// FencingToken is this term's token: larger than every earlier term's.
func (l *Leadership) FencingToken() uint64 { return l.g.FencingToken() }

// LeaseID is the leader's session lease.
func (l *Leadership) LeaseID() uint64 { return l.g.LeaseID() }

// ValidUntil: see [Session.ValidUntil].
func (l *Leadership) ValidUntil() time.Duration { return l.g.ValidUntil() }

// Check: see [Session.Check].
func (l *Leadership) Check() error { return l.g.Check() }

// Done: see [Session.Done].
func (l *Leadership) Done() <-chan struct{} { return l.g.Done() }

// Proclaim publishes a new value for this term (etcd's Proclaim).
//
// Errors: KindFailedPrecondition when this term has ended (a deposed
// leader cannot proclaim); KindInvalidArgument for a value over 4,096
// bytes; a [*LostError].
func (l *Leadership) Proclaim(ctx context.Context, value string) error {
	if err := l.Check(); err != nil {
		return err
	}
	return l.g.s.c.Proclaim(ctx, l.key, l.LeaseID(), l.FencingToken(), value)
}

// Resign steps down: releases this term's grant (the next campaigner in the
// queue is elected in the same committed entry) and waits for the commit.
func (l *Leadership) Resign(ctx context.Context) error { return l.g.Release(ctx) }

// Observer follows an election's leaders (etcd's Observe): the current one
// first (if any), then each new leader or new value, in commit order.
// Several short terms may pass unseen between two reports; the tokens of
// reported leaders never decrease.
type Observer struct {
	c       *Client
	key     string
	w       *Watcher
	last    *LeaderInfo
	pending []LeaderInfo
}

// Observe follows election name (no session needed).
//
// Errors: as [Client.Watch].
func (c *Client) Observe(ctx context.Context, name string) (*Observer, error) {
	key := c.electionPrefix(ctx) + name
	// Watch first, then read: a change between the two shows up as an
	// event and is read again (duplicates are filtered).
	w, err := c.Watch(ctx, WatchResource(key), 0)
	if err != nil {
		return nil, err
	}
	o := &Observer{c: c, key: key, w: w}
	if err := o.refresh(ctx); err != nil {
		w.Close()
		return nil, err
	}
	return o, nil
}

func (o *Observer) refresh(ctx context.Context) error {
	now, err := o.c.leaderOf(ctx, o.key)
	if err != nil || now == nil {
		return err
	}
	if o.last != nil && (*o.last == *now || now.FencingToken < o.last.FencingToken) {
		return nil
	}
	o.last = now
	o.pending = append(o.pending, *now)
	return nil
}

// Next is the next leader (or the current leader's new value); it waits
// until there is one or ctx ends, reconnecting like [Watcher.Next].
func (o *Observer) Next(ctx context.Context) (LeaderInfo, error) {
	for {
		if len(o.pending) > 0 {
			l := o.pending[0]
			o.pending = o.pending[1:]
			return l, nil
		}
		ev, err := o.w.Next(ctx)
		if err != nil {
			return LeaderInfo{}, err
		}
		if ev.Event == "granted" || ev.Event == "proclaimed" {
			if err := o.refresh(ctx); err != nil {
				return LeaderInfo{}, err
			}
		}
	}
}

// Close stops following.
func (o *Observer) Close() { o.w.Close() }
