package robustness

import (
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/warden-locks/warden/clients/go/warden"
)

// op builds a Porcupine operation for the model tests; ret Forever is an
// unknown outcome.
func op(client int, call, ret int64, in Input, out Output) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
}

func acq(key string, lease uint64) Input {
	return Input{Model: "mutex", Kind: OpAcquire, Key: key, Lease: lease}
}

func rel(key string, lease, token uint64) Input {
	return Input{Model: "mutex", Kind: OpRelease, Key: key, Lease: lease, Token: token}
}

func wr(key string, token uint64, v string) Input {
	return Input{Model: "store", Kind: OpWrite, Key: key, Token: token, Value: v}
}

var (
	granted     = func(t uint64) Output { return Output{Status: StatusGranted, Token: t} }
	heldBy      = func(l uint64) Output { return Output{Status: StatusHeld, Holder: l} }
	released    = Output{Status: StatusReleased}
	notReleased = Output{Status: StatusNotReleased}
	unknown     = Output{Status: StatusUnknown, Err: "deadline exceeded"}
	accepted    = Output{Status: StatusAccepted}
	stale       = func(h uint64) Output { return Output{Status: StatusStale, Highest: h} }
)

func check(t *testing.T, m porcupine.Model, h []porcupine.Operation, want porcupine.CheckResult) {
	t.Helper()
	if got := porcupine.CheckOperationsTimeout(m, h, 0); got != want {
		t.Fatalf("Porcupine says %s, want %s", got, want)
	}
}

// A legal mutex history: grant, a try-lock refused naming the holder,
// release, a grant with a higher token.
func TestMutexModelAcceptsAHandOff(t *testing.T) {
	check(t, MutexModel(), []porcupine.Operation{
		op(0, 0, 10, acq("r", 1), granted(5)),
		op(1, 20, 30, acq("r", 2), heldBy(1)),
		op(0, 40, 50, rel("r", 1, 5), released),
		op(1, 60, 70, acq("r", 2), granted(9)),
	}, porcupine.Ok)
}

// S1: a grant made while the earlier holder still held (its later release
// succeeded) is a violation, although leases may expire at any time.
func TestMutexModelRefusesAGrantBesideALiveHolder(t *testing.T) {
	check(t, MutexModel(), []porcupine.Operation{
		op(0, 0, 10, acq("r", 1), granted(5)),
		op(1, 20, 30, acq("r", 2), granted(7)),
		op(0, 40, 50, rel("r", 1, 5), released),
	}, porcupine.Illegal)
}

// An expired lease is allowed: the next grant may come without a release,
// and the old holder's release is then refused.
func TestMutexModelAllowsExpiry(t *testing.T) {
	check(t, MutexModel(), []porcupine.Operation{
		op(0, 0, 10, acq("r", 1), granted(5)),
		op(1, 20, 30, acq("r", 2), granted(7)),
		op(0, 40, 50, rel("r", 1, 5), notReleased),
		op(1, 60, 70, rel("r", 2, 7), released),
	}, porcupine.Ok)
}

// S2: a token not above an earlier grant's is a violation.
func TestMutexModelRefusesATokenThatDoesNotGrow(t *testing.T) {
	check(t, MutexModel(), []porcupine.Operation{
		op(0, 0, 10, acq("r", 1), granted(5)),
		op(0, 20, 30, rel("r", 1, 5), released),
		op(1, 40, 50, acq("r", 2), granted(5)),
	}, porcupine.Illegal)
}

// S6: a release that frees someone else's grant is a violation.
func TestMutexModelRefusesAReleaseOfAnotherGrant(t *testing.T) {
	check(t, MutexModel(), []porcupine.Operation{
		op(0, 0, 10, acq("r", 1), granted(5)),
		op(0, 20, 30, rel("r", 1, 5), released),
		op(1, 40, 50, acq("r", 2), granted(8)),
		op(0, 60, 70, rel("r", 1, 5), released),
	}, porcupine.Illegal)
}

// An acquire whose outcome is unknown stays pending forever: the checker may
// let it take effect (its lease then holds with an unseen token) or not.
func TestMutexModelUnknownAcquireMayHaveTakenEffect(t *testing.T) {
	check(t, MutexModel(), []porcupine.Operation{
		op(0, 0, Forever, acq("r", 1), unknown),
		op(1, 20, 30, acq("r", 2), heldBy(1)),
	}, porcupine.Ok)
	check(t, MutexModel(), []porcupine.Operation{
		op(0, 0, Forever, acq("r", 1), unknown),
		op(1, 20, 30, acq("r", 2), granted(3)),
	}, porcupine.Ok)
	// ... but a refusal naming a lease that never asked is still wrong.
	check(t, MutexModel(), []porcupine.Operation{
		op(0, 0, Forever, acq("r", 1), unknown),
		op(1, 20, 30, acq("r", 2), heldBy(3)),
	}, porcupine.Illegal)
}

// The fenced store (S2 at the resource): a write whose token is below one
// the store accepted must be refused, naming the highest; a paused
// client's late write with its old token is the case that matters.
func TestStoreModel(t *testing.T) {
	check(t, StoreModel(), []porcupine.Operation{
		op(0, 0, 10, wr("r", 5, "a"), accepted),
		op(1, 20, 30, wr("r", 7, "b"), accepted),
		op(0, 40, 50, wr("r", 5, "late"), stale(7)),
		op(0, 60, 70, wr("r", 7, "c"), accepted),
		op(1, 80, 90, Input{Model: "store", Kind: OpRead, Key: "r"}, Output{Status: StatusValue, Value: "c", Found: true}),
	}, porcupine.Ok)
	check(t, StoreModel(), []porcupine.Operation{
		op(1, 0, 10, wr("r", 7, "b"), accepted),
		op(0, 20, 30, wr("r", 5, "late"), accepted),
	}, porcupine.Illegal)
	// An unknown write may have landed: a later refusal naming its token is
	// fine, a read of its value too.
	check(t, StoreModel(), []porcupine.Operation{
		op(1, 0, Forever, wr("r", 7, "b"), unknown),
		op(0, 20, 30, wr("r", 5, "late"), stale(7)),
		op(1, 40, 50, Input{Model: "store", Kind: OpRead, Key: "r"}, Output{Status: StatusValue, Value: "b", Found: true}),
	}, porcupine.Ok)
}

// Mutate turns a legal history into one the checker refuses.
func TestMutateMakesAHistoryIllegal(t *testing.T) {
	ops := []Op{
		{Client: 0, Input: acq("r", 1), Output: granted(5), Call: 0, Return: 10},
		{Client: 0, Input: rel("r", 1, 5), Output: released, Call: 20, Return: 30},
		{Client: 1, Input: acq("r", 2), Output: granted(8), Call: 40, Return: 50},
	}
	check(t, MutexModel(), porcupineOps(ops, "mutex"), porcupine.Ok)
	desc, ok := Mutate(ops)
	if !ok {
		t.Fatal("Mutate found nothing to corrupt")
	}
	if ops[2].Output.Token != 5 {
		t.Fatalf("Mutate changed %q, want op 2's token set to 5", desc)
	}
	check(t, MutexModel(), porcupineOps(ops, "mutex"), porcupine.Illegal)
}

func sacq(key string, lease uint64) Input {
	return Input{Model: "semaphore", Kind: OpAcquire, Key: key, Lease: lease}
}

func srel(key string, lease, token uint64) Input {
	return Input{Model: "semaphore", Kind: OpRelease, Key: key, Lease: lease, Token: token}
}

func permitAt(slot uint32, token uint64) Output {
	return Output{Status: StatusGranted, Token: token, Slot: slot}
}

// The semaphore of two permits: two grants in slots 0 and 1, a third
// refused; a release frees its slot, which the next grant takes.
func TestSemaphoreModelAcceptsTwoPermits(t *testing.T) {
	check(t, SemaphoreModel(), []porcupine.Operation{
		op(0, 0, 10, sacq("s", 1), permitAt(0, 3)),
		op(1, 20, 30, sacq("s", 2), permitAt(1, 4)),
		op(2, 40, 50, sacq("s", 3), heldBy(1)),
		op(0, 60, 70, srel("s", 1, 3), released),
		op(2, 80, 90, sacq("s", 3), permitAt(0, 9)),
		op(1, 100, 110, srel("s", 2, 4), released),
	}, porcupine.Ok)
}

// A third permit while two holders both prove they still held is a
// violation; so is a grant in a slot other than the lowest free one.
func TestSemaphoreModelRefusesAThirdPermitAndAWrongSlot(t *testing.T) {
	check(t, SemaphoreModel(), []porcupine.Operation{
		op(0, 0, 10, sacq("s", 1), permitAt(0, 3)),
		op(1, 20, 30, sacq("s", 2), permitAt(1, 4)),
		op(2, 40, 50, sacq("s", 3), permitAt(0, 5)),
		op(0, 60, 70, srel("s", 1, 3), released),
		op(1, 80, 90, srel("s", 2, 4), released),
	}, porcupine.Illegal)
	check(t, SemaphoreModel(), []porcupine.Operation{
		op(0, 0, 10, sacq("s", 1), permitAt(1, 3)),
	}, porcupine.Illegal)
}

// checkWatches refuses a stream that misses an answered grant or repeats
// one, and accepts one that has each once.
func TestCheckWatches(t *testing.T) {
	ops := []Op{{Input: acq("r1-e0", 1), Output: granted(5), Call: 0, Return: 10}}
	mk := func(evs ...warden.WatchEvent) *watchRecord {
		return &watchRecord{name: "w", events: evs}
	}
	g := warden.WatchEvent{Index: 7, Resource: "r1-e0", Event: "granted", LeaseID: 1, FencingToken: 5}
	if p, _ := checkWatches(ops, []*watchRecord{mk(g)}); len(p) != 0 {
		t.Fatalf("a complete stream was refused: %q", p)
	}
	if p, _ := checkWatches(ops, []*watchRecord{mk()}); len(p) != 1 {
		t.Fatalf("a stream without the grant gave %q, want one problem", p)
	}
	if p, _ := checkWatches(ops, []*watchRecord{mk(g, g)}); len(p) == 0 {
		t.Fatal("a grant streamed twice was accepted")
	}
	// A grant streamed to a lease whose acquire was told wait-timeout.
	timedOut := append(ops, Op{Input: acq("r1-e0", 2), Output: Output{Status: StatusTimeout}, Call: 20, Return: 30})
	orphan := warden.WatchEvent{Index: 9, Resource: "r1-e0", Event: "granted", LeaseID: 2, FencingToken: 6}
	if p, _ := checkWatches(timedOut, []*watchRecord{mk(g, orphan)}); len(p) != 1 {
		t.Fatalf("a grant its client was told it did not get gave %q, want one problem", p)
	}
}

func racq(key string, lease uint64, mode string) Input {
	return Input{Model: "rwlock", Kind: OpAcquire, Key: key, Lease: lease, Mode: mode}
}

func rrel(key string, lease, token uint64) Input {
	return Input{Model: "rwlock", Kind: OpRelease, Key: key, Lease: lease, Token: token}
}

// Readers together, then a writer once they are gone.
func TestRWLockModelAcceptsReadersThenAWriter(t *testing.T) {
	check(t, RWLockModel(), []porcupine.Operation{
		op(0, 0, 10, racq("w", 1, "shared"), granted(3)),
		op(1, 20, 30, racq("w", 2, "shared"), granted(4)),
		op(2, 40, 50, racq("w", 3, "exclusive"), heldBy(1)),
		op(0, 60, 70, rrel("w", 1, 3), released),
		op(1, 80, 90, rrel("w", 2, 4), released),
		op(2, 100, 110, racq("w", 3, "exclusive"), granted(8)),
		op(2, 120, 130, rrel("w", 3, 8), released),
	}, porcupine.Ok)
}

// A writer beside a reader that later proves it still held is a violation,
// and so is a refusal on a resource nothing holds.
func TestRWLockModelRefusesAWriterBesideAReader(t *testing.T) {
	check(t, RWLockModel(), []porcupine.Operation{
		op(0, 0, 10, racq("w", 1, "shared"), granted(3)),
		op(1, 20, 30, racq("w", 2, "exclusive"), granted(4)),
		op(0, 40, 50, rrel("w", 1, 3), released),
	}, porcupine.Illegal)
	check(t, RWLockModel(), []porcupine.Operation{
		op(0, 0, 10, racq("w", 1, "shared"), heldBy(2)),
	}, porcupine.Illegal)
}

func renew(lease uint64) Input { return Input{Model: "lease", Kind: OpRenew, Lease: lease} }

var renewed = Output{Status: StatusRenewed}

// S1/S3: a grant that vanished while its lease stayed alive (a lost
// acknowledged grant on failover). The next grant would need the first to
// have ended by expiry, which a later acknowledged renew of its lease
// refutes.
func TestMutexModelRefusesAGrantWhoseLeaseWasStillRenewed(t *testing.T) {
	check(t, MutexModel(), []porcupine.Operation{
		op(0, 0, 10, acq("r", 1), granted(5)),
		op(1, 20, 30, acq("r", 2), granted(7)),
		op(9, 40, 50, renew(1), renewed),
	}, porcupine.Illegal)
	// Without the renew, or with the renew refused, the expiry is legal.
	check(t, MutexModel(), []porcupine.Operation{
		op(0, 0, 10, acq("r", 1), granted(5)),
		op(1, 20, 30, acq("r", 2), granted(7)),
		op(9, 40, 50, renew(1), Output{Status: StatusLeaseGone}),
	}, porcupine.Ok)
	// A renew that overlaps the second grant may have come before it.
	check(t, MutexModel(), []porcupine.Operation{
		op(0, 0, 10, acq("r", 1), granted(5)),
		op(1, 20, 30, acq("r", 2), granted(7)),
		op(9, 25, 50, renew(1), renewed),
	}, porcupine.Ok)
}
