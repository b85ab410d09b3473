package store_test

import (
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

// The wallet gateway is recorded intent: updates read and change the row
// in one transaction, wallets are recorded before their party and finished
// once, and every write names the validator in the change feed.
func TestWalletGatewayRecord(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		if _, err := s.TakeGatewayChanges(ctx, 1000); err != nil {
			t.Fatal(err)
		}
		g, err := s.WalletGateway(ctx, "v1")
		if err != nil || g != (domain.WalletGateway{Validator: "v1"}) {
			t.Fatalf("never set: got %+v, %v, want the zero gateway", g, err)
		}
		g, err = s.UpdateWalletGateway(ctx, "v1", func(g *domain.WalletGateway) error {
			g.Enabled, g.BaseURL, g.Credentials = true, "https://custody.test", "sealed"
			return nil
		})
		if err != nil || !g.Enabled || g.BaseURL != "https://custody.test" || g.Credentials != "sealed" || g.UpdatedAt == nil {
			t.Fatalf("update: got %+v, %v", g, err)
		}
		// A refused change stores nothing.
		refused := errors.New("refused")
		if _, err := s.UpdateWalletGateway(ctx, "v1", func(g *domain.WalletGateway) error { g.Enabled = false; return refused }); !errors.Is(err, refused) {
			t.Fatalf("refused change: got %v, want %v", err, refused)
		}
		// Concurrent updates each see the other's write (the row is held).
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.UpdateWalletGateway(ctx, "v1", func(g *domain.WalletGateway) error { g.BaseURL += string(rune('a' + i)); return nil })
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if g, err = s.WalletGateway(ctx, "v1"); err != nil || !g.Enabled || len(g.BaseURL) != len("https://custody.test")+8 {
			t.Fatalf("after concurrent updates: got %+v, %v", g, err)
		}

		a := domain.GatewayWallet{WalletID: "w-a", Validator: "v1", PartyHint: "alice", SigningProvider: "p", Primary: true}
		if err := s.RecordWallet(ctx, &a); err != nil || a.CreatedAt.IsZero() {
			t.Fatalf("record alice: %v %+v", err, a)
		}
		// Taken over while its party is not recorded, with the new request's fields.
		again := domain.GatewayWallet{WalletID: "w-other", Validator: "v1", PartyHint: "alice", SigningProvider: "p", Vault: "v7"}
		if err := s.RecordWallet(ctx, &again); err != nil || again.WalletID != "w-a" || again.Primary || again.Vault != "v7" {
			t.Fatalf("record alice again: got %+v, %v, want the record w-a taken over", again, err)
		}
		again.PartyID, again.Primary = "alice::1220", true
		if err := s.CompleteWallet(ctx, again); err != nil {
			t.Fatal(err)
		}
		dup := domain.GatewayWallet{WalletID: "w-dup", Validator: "v1", PartyHint: "alice", SigningProvider: "p"}
		if err := s.RecordWallet(ctx, &dup); !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("record a finished hint again: got %v, want conflict", err)
		}
		b := domain.GatewayWallet{WalletID: "w-b", Validator: "v1", PartyHint: "bob", SigningProvider: "p", Primary: true}
		if err := s.RecordWallet(ctx, &b); err != nil {
			t.Fatal(err)
		}
		b.PartyID = "bob::1220"
		if err := s.CompleteWallet(ctx, b); err != nil {
			t.Fatal(err)
		}
		// Another validator's wallet of the same hint is another wallet.
		other := domain.GatewayWallet{WalletID: "w-c", Validator: "v2", PartyHint: "alice", SigningProvider: "p"}
		if err := s.RecordWallet(ctx, &other); err != nil {
			t.Fatal(err)
		}
		ws, err := s.GatewayWallets(ctx, "v1")
		if err != nil {
			t.Fatal(err)
		}
		if len(ws) != 2 || ws[0].WalletID != "w-a" || ws[0].Primary || ws[0].PartyID != "alice::1220" || ws[1].WalletID != "w-b" || !ws[1].Primary {
			t.Fatalf("wallets of v1 (alice demoted by bob): %+v", ws)
		}
		names, err := s.WalletGatewayNames(ctx)
		if err != nil || !slices.Equal(names, []string{"v1", "v2"}) {
			t.Fatalf("names: got %v, %v, want [v1 v2]", names, err)
		}
		changed, err := s.TakeGatewayChanges(ctx, 1000)
		if err != nil || !slices.Equal(changed, []string{"v1", "v2"}) {
			t.Fatalf("change feed: got %v, %v, want [v1 v2]", changed, err)
		}
		if changed, err = s.TakeGatewayChanges(ctx, 1000); err != nil || len(changed) != 0 {
			t.Fatalf("change feed taken: got %v, %v, want none", changed, err)
		}
	})
}
