package intent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestIdentityDriftHealed: the wallet user and the clients the leader made
// for a validator, deleted by hand in the identity provider, are made again
// at the next look (here every reconcile), the user with the same temporary
// password; looks are paced per validator.
func TestIdentityDriftHealed(t *testing.T) {
	w := newWorld()
	c := run(t, w, func(o *Options) { o.ObserveEvery = time.Millisecond })
	w.record(t, "drift", false, domain.ValidatorSecrets{OnboardingSecret: "s3cret"})
	eventually(t, func() bool { return w.provisioned("drift") })
	w.mu.Lock()
	password, creates := w.passwords["drift"], w.creates
	w.mu.Unlock()

	for _, tt := range []struct {
		what   string
		delete func()
		back   func() bool
	}{
		{"the wallet user", func() { delete(w.users, "drift") }, func() bool { _, ok := w.users["drift"]; return ok }},
		{"the clients", func() { delete(w.clients, "drift") }, func() bool { _, ok := w.clients["drift"]; return ok }},
	} {
		w.mu.Lock()
		tt.delete()
		w.mu.Unlock()
		// Reconciles as the resync brings them, until a look is due (and
		// within the looks' rate).
		eventually(t, func() bool {
			if _, err := c.Reconcile(context.Background(), "drift"); err != nil {
				t.Fatalf("%s deleted by hand: reconcile: %v", tt.what, err)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			return tt.back()
		})
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.creates != creates+1 || w.passwords["drift"] != password {
		t.Errorf("wallet users created: %d after %d, same password %t; want one more, with the same temporary password", w.creates, creates, w.passwords["drift"] == password)
	}
}

// Looks at the identity provider are paced: once per validator within the
// period, and at most observeRate a second over all validators.
func TestDriftLooksArePaced(t *testing.T) {
	d := newDrift(time.Minute)
	now := time.Now()
	if d.due("a", now) {
		t.Fatal("a validator looked at on its first reconcile, which starts its period")
	}
	if d.due("a", now.Add(time.Second)) {
		t.Fatal("a validator looked at within the period")
	}
	if !d.due("a", now.Add(time.Minute)) || d.due("a", now.Add(time.Minute+time.Second)) {
		t.Fatal("a validator not looked at once after the period")
	}
	d = newDrift(time.Minute)
	n := 0
	for i := range 100 {
		name := string(rune('a'+i%26)) + string(rune('a'+i/26))
		d.due(name, now)
		if d.due(name, now.Add(time.Minute)) {
			n++
		}
	}
	if n != observeRate {
		t.Fatalf("%d looks at one instant, want the burst of %d", n, observeRate)
	}
}

// The controller's DOWN while its first pass runs is a start's (logged at
// INFO by health) for the pass's first two minutes, a fault after.
func TestFirstPassIsStarting(t *testing.T) {
	c := New(Options{})
	if err := c.Ping(context.Background()); !errors.Is(err, domain.ErrStarting) {
		t.Fatalf("before the pass: %v, want starting", err)
	}
	c.began.Store(time.Now().Add(-domain.StartChance - time.Second).UnixNano())
	if err := c.Ping(context.Background()); err == nil || errors.Is(err, domain.ErrStarting) || !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("a pass that took longer: %v, want unavailable, not starting", err)
	}
}

// TestRemadeClientSecretIsWrittenAfterAFailure: the ledger API client
// deleted by hand is made anew with another secret, which reaches the
// validator's Secret even when the first write of it fails (or the leader
// is killed before it): the row records the new client only once its
// Secret holds the new secret, so the next look writes it again.
func TestRemadeClientSecretIsWrittenAfterAFailure(t *testing.T) {
	for _, fail := range []string{"PutSecrets", "ClientSecret"} {
		t.Run(fail, func(t *testing.T) {
			w := newWorld()
			c := run(t, w, func(o *Options) { o.ObserveEvery = time.Millisecond })
			name := "remade-" + strings.ToLower(fail)
			w.record(t, name, false, domain.ValidatorSecrets{OnboardingSecret: "s3cret"})
			eventually(t, func() bool {
				if !w.provisioned(name) {
					return false
				}
				w.mu.Lock()
				defer w.mu.Unlock()
				return w.secrets[name].LedgerAPIClientSecret == "client-secret-"+name
			})
			w.mu.Lock()
			delete(w.clients, name)
			w.failNext[fail] = errors.New("injected: " + fail)
			w.mu.Unlock()
			// Reconciles as the resync brings them; the failing one is
			// retried as the work queue would.
			eventually(t, func() bool {
				_, _ = c.Reconcile(context.Background(), name)
				w.mu.Lock()
				defer w.mu.Unlock()
				return w.secrets[name].LedgerAPIClientSecret == "client-secret-"+name+"-1" &&
					w.rows[name].ProvisionedAuth != nil && w.rows[name].ProvisionedAuth.LedgerAPIUser == "sa-"+name+"-1"
			})
		})
	}
}
