package eventstoretest

import (
	"testing"
	"time"
)

// Patience is how long Eventually waits before it fails the test: long
// enough for a loaded CI machine and a cluster's elections, and only ever
// spent when something is broken.
const Patience = 2 * time.Minute

// Eventually polls cond every 10 ms until it holds, and fails the test,
// saying it was waiting for what, when it still does not hold after
// Patience. It is how a test waits for asynchronous work whose end it
// cannot be told of: it never sleeps for a guessed time.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyEvery(t, what, 10*time.Millisecond, func() (bool, string) { return cond(), "" })
}

// EventuallyEvery is Eventually polling every interval (a condition that
// costs a request under a rate limit polls less often), with a condition
// that says why it does not hold yet: the last reason is in the failure.
func EventuallyEvery(t testing.TB, what string, every time.Duration, cond func() (done bool, why string)) {
	t.Helper()
	deadline := time.Now().Add(Patience)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		done, why := cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			if why != "" {
				why = ": " + why
			}
			t.Fatalf("timed out after %s waiting for %s%s", Patience, what, why)
		}
		<-tick.C
	}
}
