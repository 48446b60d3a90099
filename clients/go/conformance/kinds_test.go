package conformance

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warden-locks/warden/clients/go/warden"
)

// outcome is the end of a lock call run in the background.
type outcome struct {
	g   *warden.Guard
	err error
	// The session clock's reading when the call returned.
	at time.Duration
}

// waitQueued runs lock (which must pass the given option on) in the
// background and returns once the server reported s's waiter queued; the
// channel gets the call's outcome.
func waitQueued(t *testing.T, ctx context.Context, s *warden.Session, what string,
	lock func(queued warden.LockOption) (*warden.Guard, error)) <-chan outcome {
	t.Helper()
	queued := make(chan struct{})
	var once sync.Once
	out := make(chan outcome, 1)
	go func() {
		g, err := lock(warden.OnQueued(func(q warden.Queued) {
			if q.LeaseID == s.LeaseID() {
				once.Do(func() { close(queued) })
			}
		}))
		now, _ := warden.BootClock{}.Now()
		out <- outcome{g: g, err: err, at: now}
		once.Do(func() { close(queued) })
	}()
	select {
	case <-queued:
	case <-ctx.Done():
		t.Fatalf("%s never reported queued", what)
	}
	select {
	case o := <-out:
		t.Fatalf("%s returned instead of waiting: %v", what, o.err)
	default:
	}
	return out
}

// granted receives the outcome and fails the test unless it is a grant.
func granted(t *testing.T, ctx context.Context, what string, out <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-out:
		if o.err != nil {
			t.Fatalf("%s: %v", what, o.err)
		}
		return o
	case <-ctx.Done():
		t.Fatalf("%s: not granted before the deadline", what)
		return outcome{}
	}
}

// notYet fails the test if the background call has already returned.
func notYet(t *testing.T, what string, out <-chan outcome) {
	t.Helper()
	select {
	case o := <-out:
		t.Fatalf("%s returned early (err %v)", what, o.err)
	default:
	}
}

// namesField asserts a refusal names field (the status's BadRequest field)
// and the resource's current kind.
func namesField(t *testing.T, we *warden.Error, field, kind string) {
	t.Helper()
	if we.Field != field {
		t.Fatalf("refusal names field %q (message %q), want %s", we.Field, we.Message, field)
	}
	if !strings.Contains(we.Message, kind) {
		t.Fatalf("refusal %q does not name the current kind %q", we.Message, kind)
	}
}

func slotOf(t *testing.T, g *warden.Guard) uint32 {
	t.Helper()
	slot, ok := g.Slot()
	if !ok {
		t.Fatalf("grant of %q with token %d carries no slot", g.Resource(), g.FencingToken())
	}
	return slot
}

// conformance: C14-semaphore-permits-in-slots
// Defends docs/semantics.md "Lock kinds": at most N holders of a semaphore
// of N, each in the lowest free slot with a fresh, growing fencing token; a
// freed permit goes to the oldest waiter; another kind or limit is refused.
func TestC14SemaphorePermitsInSlots(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	cl := newClient(t, shared, "root")
	const r = "c14-r"
	var s [5]*warden.Session
	for i := range s {
		s[i] = newSession(t, cl, 5*time.Second)
	}
	var held [3]*warden.Guard
	for i := range 3 {
		g, err := s[i].Semaphore(r, 3).TryAcquire(ctx)
		if err != nil {
			t.Fatalf("S%d: %v", i+1, err)
		}
		if slot := slotOf(t, g); slot != uint32(i) {
			t.Fatalf("S%d got slot %d, want %d", i+1, slot, i)
		}
		if i > 0 && g.FencingToken() <= held[i-1].FencingToken() {
			t.Fatalf("S%d token %d not above S%d's %d", i+1, g.FencingToken(), i, held[i-1].FencingToken())
		}
		if g.LeaseID() != s[i].LeaseID() || g.Mode() != warden.ModeUnspecified {
			t.Fatalf("S%d grant lease %d mode %v", i+1, g.LeaseID(), g.Mode())
		}
		held[i] = g
	}
	s4 := waitQueued(t, ctx, s[3], "S4's permit", func(q warden.LockOption) (*warden.Guard, error) {
		return s[3].Semaphore(r, 3).Acquire(ctx, warden.WithWait(30*time.Second), q)
	})
	st, err := cl.Status(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != "semaphore" || st.Limit != 3 || st.Holder != nil || st.Waiters != 1 || len(st.Holders) != 3 {
		t.Fatalf("status kind %q limit %d holder %+v waiters %d holders %d, want semaphore 3 nil 1 3",
			st.Kind, st.Limit, st.Holder, st.Waiters, len(st.Holders))
	}
	for i, h := range st.Holders {
		want := map[uint64]uint32{s[0].LeaseID(): 0, s[1].LeaseID(): 1, s[2].LeaseID(): 2}
		slot, ok := want[h.LeaseID]
		if !ok || !h.HasSlot || h.Slot != slot || h.FencingToken != held[slot].FencingToken() {
			t.Fatalf("holder %d: %+v, want one of S1..S3 in its slot with its token", i, h)
		}
	}
	if err := held[1].Release(ctx); err != nil {
		t.Fatal(err)
	}
	g4 := granted(t, ctx, "S4's permit", s4).g
	if slot := slotOf(t, g4); slot != 1 {
		t.Fatalf("S4 got slot %d, want S2's freed slot 1", slot)
	}
	if g4.FencingToken() <= held[2].FencingToken() {
		t.Fatalf("S4 token %d not above S3's %d", g4.FencingToken(), held[2].FencingToken())
	}
	_, err = s[4].Semaphore(r, 4).TryAcquire(ctx)
	namesField(t, wardenError(t, err, warden.KindFailedPrecondition), "limit", "semaphore of 3")
	_, err = s[4].TryLock(ctx, r)
	namesField(t, wardenError(t, err, warden.KindFailedPrecondition), "kind", "semaphore of 3")
	st, err = cl.Status(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != "semaphore" || st.Limit != 3 || len(st.Holders) != 3 || st.Waiters != 0 {
		t.Fatalf("after the refusals: kind %q limit %d holders %d waiters %d", st.Kind, st.Limit, len(st.Holders), st.Waiters)
	}
}

// conformance: C15-readers-share-writer-waits
// Defends docs/semantics.md "Lock kinds": readers hold together, a writer
// alone, and the queue is FIFO (S8): a reader queued behind a waiting
// writer is granted only after it, with a larger token (S2).
func TestC15ReadersShareWriterWaits(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	cl := newClient(t, shared, "root")
	const r = "c15-r"
	r1, r2, r3, w := newSession(t, cl, 5*time.Second), newSession(t, cl, 5*time.Second),
		newSession(t, cl, 5*time.Second), newSession(t, cl, 5*time.Second)
	g1, err := r1.ReadLock(ctx, r, warden.WithWait(0))
	if err != nil {
		t.Fatal(err)
	}
	g2, err := r2.ReadLock(ctx, r, warden.WithWait(0))
	if err != nil {
		t.Fatal(err)
	}
	if g1.Mode() != warden.ModeShared || g2.Mode() != warden.ModeShared || g2.FencingToken() <= g1.FencingToken() {
		t.Fatalf("readers: modes %v %v tokens %d %d", g1.Mode(), g2.Mode(), g1.FencingToken(), g2.FencingToken())
	}
	st, err := cl.Status(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if st.Kind != "read_write" || st.Holder != nil || len(st.Holders) != 2 {
		t.Fatalf("status kind %q holder %+v holders %+v, want read_write, none, two readers", st.Kind, st.Holder, st.Holders)
	}
	for _, h := range st.Holders {
		if h.Mode != warden.ModeShared || (h.LeaseID != r1.LeaseID() && h.LeaseID != r2.LeaseID()) {
			t.Fatalf("holder %+v is not R1 or R2 as a reader", h)
		}
	}
	wOut := waitQueued(t, ctx, w, "W's write lock", func(q warden.LockOption) (*warden.Guard, error) {
		return w.WriteLock(ctx, r, warden.WithWait(30*time.Second), q)
	})
	r3Out := waitQueued(t, ctx, r3, "R3's read lock", func(q warden.LockOption) (*warden.Guard, error) {
		return r3.ReadLock(ctx, r, warden.WithWait(30*time.Second), q)
	})
	if err := g1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// One reader left, a writer and a reader waiting: the reader does not
	// overtake the writer.
	st, err = cl.Status(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Holders) != 1 || st.Holders[0].LeaseID != r2.LeaseID() || st.Waiters != 2 {
		t.Fatalf("after R1's release: holders %+v waiters %d, want R2 alone and 2 waiters", st.Holders, st.Waiters)
	}
	notYet(t, "R3's read lock", r3Out)
	if err := g2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	gw := granted(t, ctx, "W's write lock", wOut).g
	if gw.Mode() != warden.ModeExclusive || gw.FencingToken() <= g2.FencingToken() {
		t.Fatalf("W: mode %v token %d, want exclusive above R2's %d", gw.Mode(), gw.FencingToken(), g2.FencingToken())
	}
	st, err = cl.Status(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder == nil || st.Holder.LeaseID != w.LeaseID() || st.Holder.Mode != warden.ModeExclusive ||
		len(st.Holders) != 1 || st.Waiters != 1 {
		t.Fatalf("while W holds: holder %+v holders %d waiters %d, want W alone, R3 waiting", st.Holder, len(st.Holders), st.Waiters)
	}
	notYet(t, "R3's read lock", r3Out)
	if err := gw.Release(ctx); err != nil {
		t.Fatal(err)
	}
	g3 := granted(t, ctx, "R3's read lock", r3Out).g
	if g3.Mode() != warden.ModeShared || g3.FencingToken() <= gw.FencingToken() {
		t.Fatalf("R3: mode %v token %d, want shared above W's %d", g3.Mode(), g3.FencingToken(), gw.FencingToken())
	}
}

// conformance: C16-multi-lock-all-or-none
// Defends docs/semantics.md "Multi-locks": all resources granted in one
// entry with a token each, or none; a release naming one frees all; sets
// taken in opposite orders never deadlock.
func TestC16MultiLockAllOrNone(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	cl := newClient(t, shared, "root")
	a, b := newSession(t, cl, 5*time.Second), newSession(t, cl, 5*time.Second)
	abc := []string{"c16-a", "c16-b", "c16-c"}
	ga, err := a.LockAll(ctx, abc, warden.WithWait(0))
	if err != nil {
		t.Fatal(err)
	}
	tokens := ga.Tokens()
	if len(tokens) != 3 {
		t.Fatalf("multi-lock grant carries %d tokens, want 3: %+v", len(tokens), tokens)
	}
	for i, rt := range tokens {
		if rt.Resource != abc[i] {
			t.Fatalf("token %d names %q, want %q (the order asked): %+v", i, rt.Resource, abc[i], tokens)
		}
		if i > 0 && rt.FencingToken <= tokens[i-1].FencingToken {
			t.Fatalf("tokens not distinct and in the order asked: %+v", tokens)
		}
		st, err := cl.Status(ctx, rt.Resource)
		if err != nil {
			t.Fatal(err)
		}
		if st.Holder == nil || st.Holder.LeaseID != a.LeaseID() || st.Holder.FencingToken != rt.FencingToken || st.Kind != "mutex" {
			t.Fatalf("%s: holder %+v kind %q, want A with token %d", rt.Resource, st.Holder, st.Kind, rt.FencingToken)
		}
	}
	if ga.Resource() != "c16-a" || ga.FencingToken() != tokens[0].FencingToken {
		t.Fatalf("guard names %q token %d, want c16-a's %d", ga.Resource(), ga.FencingToken(), tokens[0].FencingToken)
	}
	_, err = b.TryLock(ctx, "c16-b")
	var ng *warden.NotGrantedError
	if !errors.As(err, &ng) || !errors.Is(err, warden.ErrHeld) || ng.HolderLeaseID != a.LeaseID() {
		t.Fatalf("B's try of c16-b: want held by A's lease %d, got %T: %v", a.LeaseID(), err, err)
	}
	// The guard's release names c16-a with its token.
	if err := ga.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range abc {
		st, err := cl.Status(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if st.Holder != nil || len(st.Holders) != 0 || st.Waiters != 0 || st.Kind != "" {
			t.Fatalf("%s after the release: holder %+v holders %d waiters %d kind %q, want free", r, st.Holder, len(st.Holders), st.Waiters, st.Kind)
		}
	}
	loop := func(s *warden.Session, set []string) error {
		for range 5 {
			g, err := s.LockAll(ctx, set)
			if err != nil {
				return err
			}
			got := g.Tokens()
			if len(got) != 2 || got[0].Resource != set[0] || got[1].Resource != set[1] {
				return errors.New("grant does not hold both resources in the order asked")
			}
			for _, rt := range got {
				st, err := cl.Status(ctx, rt.Resource)
				if err != nil {
					return err
				}
				if st.Holder == nil || st.Holder.LeaseID != s.LeaseID() || st.Holder.FencingToken != rt.FencingToken {
					return errors.New(rt.Resource + " is not held by the multi-lock's grant")
				}
			}
			if err := g.Release(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	started := time.Now()
	errs := make(chan error, 2)
	go func() { errs <- loop(a, []string{"c16-x", "c16-y"}) }()
	go func() { errs <- loop(b, []string{"c16-y", "c16-x"}) }()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for range 2 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-deadline.C:
			t.Fatal("opposite-order multi-lock loops did not finish within 30 s (deadlock?)")
		}
	}
	t.Logf("both loops finished in %v", time.Since(started))
}

// conformance: C17-max-hold-ends-a-renewed-grant
// Defends docs/semantics.md "Max-hold": a grant ends no later than its
// max-hold after it was granted however often its lease is renewed, the
// client stops trusting it by the acquire's send + validity(max-hold), and
// out-of-bounds max-holds are refused naming the field.
func TestC17MaxHoldEndsARenewedGrant(t *testing.T) {
	ctx := ctxFor(t, 60*time.Second)
	cl := newClient(t, shared, "root")
	const r = "c17-r"
	const maxHold = 2 * time.Second
	// E with the default timing, and the clock-rate allowance 2ρ·D.
	const e = 2500 * time.Millisecond
	const allowance = maxHold * 2 * warden.DriftRhoPPM / 1_000_000
	// A TTL above the max-hold: the session outlives the grant only by
	// renewing (every TTL/3).
	h, w := newSession(t, cl, 3*time.Second), newSession(t, cl, 3*time.Second)
	beforeSend := bootNow(t)
	gh, err := h.Lock(ctx, r, warden.WithMaxHold(maxHold))
	if err != nil {
		t.Fatal(err)
	}
	afterGrant := bootNow(t)
	if gh.MaxHold() != maxHold {
		t.Fatalf("grant's max-hold %v, want %v", gh.MaxHold(), maxHold)
	}
	if v := gh.ValidUntil(); v < beforeSend+warden.Validity(maxHold) || v > afterGrant+warden.Validity(maxHold) || v > h.ValidUntil() {
		t.Fatalf("guard valid until %v, not send + validity(max-hold) for a send in [%v, %v] (session's %v)",
			v, beforeSend, afterGrant, h.ValidUntil())
	}
	if err := gh.Check(); err != nil {
		t.Fatal(err)
	}
	sessionFirst := h.ValidUntil()
	wOut := waitQueued(t, ctx, w, "W's lock", func(q warden.LockOption) (*warden.Guard, error) {
		return w.LockWithTimeout(ctx, r, 20*time.Second, q)
	})
	o := granted(t, ctx, "W's lock", wOut)
	if o.at > beforeSend+maxHold+e {
		t.Fatalf("W granted %v after H's send, later than max-hold + E = %v", o.at-beforeSend, maxHold+e)
	}
	if o.at-beforeSend < maxHold-allowance {
		t.Fatalf("W granted %v after H's send, before the max-hold less the allowance", o.at-beforeSend)
	}
	if o.g.FencingToken() <= gh.FencingToken() {
		t.Fatalf("W token %d not above H's %d", o.g.FencingToken(), gh.FencingToken())
	}
	// H's session lives on, renewed past the max-hold; only the grant ended.
	if err := h.Check(); err != nil {
		t.Fatalf("H's session: %v", err)
	}
	if h.ValidUntil() <= sessionFirst {
		t.Fatalf("H's session was not renewed: valid until %v, first %v", h.ValidUntil(), sessionFirst)
	}
	// By W's grant the client no longer trusts H's grant.
	var mh *warden.MaxHoldError
	if err := gh.Check(); !errors.As(err, &mh) || mh.Resource != r || mh.ValidUntil != gh.ValidUntil() {
		t.Fatalf("H's guard at W's grant: want a MaxHoldError on %q, got %T: %v", r, err, err)
	}
	if now := bootNow(t); now < gh.ValidUntil() {
		t.Fatalf("guard reported invalid at %v, before its valid_until %v", now, gh.ValidUntil())
	}
	st, err := cl.Status(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder == nil || st.Holder.LeaseID != w.LeaseID() || st.Holder.FencingToken != o.g.FencingToken() {
		t.Fatalf("holder %+v, want W with token %d", st.Holder, o.g.FencingToken())
	}
	_, err = h.TryLock(ctx, "c17-bad", warden.WithMaxHold(500*time.Millisecond))
	if we := wardenError(t, err, warden.KindInvalidArgument); we.Field != "max_hold_ms" {
		t.Fatalf("max-hold 500 ms refused naming %q, want max_hold_ms: %v", we.Field, err)
	}
	_, err = h.LockWithTimeout(ctx, "c17-bad", maxHold, warden.WithMaxHold(maxHold))
	if we := wardenError(t, err, warden.KindInvalidArgument); we.Field != "wait_timeout_ms" {
		t.Fatalf("a wait as long as the max-hold refused naming %q, want wait_timeout_ms: %v", we.Field, err)
	}
	st, err = cl.Status(ctx, "c17-bad")
	if err != nil {
		t.Fatal(err)
	}
	if st.Holder != nil || st.Waiters != 0 || st.Kind != "" {
		t.Fatalf("refusals changed c17-bad: %+v", st)
	}
}
