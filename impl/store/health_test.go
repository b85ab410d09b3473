package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

// TestPingBesideAHeldWriter: health reads, so a writer that holds the
// database (SQLite's one writer, a PostgreSQL row lock on what a write
// would touch) does not hold health back.
func TestPingBesideAHeldWriter(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		held, release := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- s.DB().Transaction(func(tx *gorm.DB) error {
				if err := tx.Exec("INSERT INTO health (singleton, checked_at) VALUES (1, ?) ON CONFLICT (singleton) DO UPDATE SET checked_at = excluded.checked_at", time.Now().UTC()).Error; err != nil {
					return err
				}
				close(held)
				<-release
				return nil
			})
		}()
		select {
		case <-held:
		case err := <-done:
			t.Fatalf("the writer ended before it held the database: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		began := time.Now()
		err := s.Ping(ctx)
		close(release)
		if err != nil {
			t.Errorf("got %v after %s, want UP while a writer holds the database", err, time.Since(began))
		}
		if err := <-done; err != nil {
			t.Fatalf("writer: %v", err)
		}
	})
}

// TestPingFullDisk: a SQLite database on a disk with no space left is
// DOWN, saying so, and UP again once space is freed.
func TestPingFullDisk(t *testing.T) {
	s, dir := onSmallDisk(t)
	ctx := context.Background()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("with room: got %v, want UP", err)
	}
	filler := apitest.FillDisk(t, dir, "filler")
	err := s.Ping(ctx)
	for _, want := range []string{"vm.db", "cannot be written", "full"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("full disk: got %v, want an error containing %q", err, want)
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("space freed: got %v, want UP", err)
	}
}

// TestFullDiskRefusesAsUnavailable: on a disk with no space left every
// create the database refuses, the first included, is ErrUnavailable (503),
// and records nothing.
func TestFullDiskRefusesAsUnavailable(t *testing.T) {
	s, dir := onSmallDisk(t)
	ctx := context.Background()
	filler := apitest.FillDisk(t, dir, "filler")
	var refused []string
	for i := range 20 {
		v := domain.Validator{Name: fmt.Sprintf("v%d", i), Phase: domain.PhasePending, Spec: []byte(`{}`)}
		err := s.CreateValidator(ctx, &v)
		switch {
		case err == nil:
		case errors.Is(err, domain.ErrUnavailable):
			refused = append(refused, v.Name)
		default:
			t.Fatalf("create %s on a full disk: got %v, want ErrUnavailable", v.Name, err)
		}
	}
	if len(refused) == 0 {
		t.Fatal("no create was refused on a full disk")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for _, name := range refused {
		if _, err := s.GetValidator(ctx, name); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("refused %s: got %v, want nothing recorded", name, err)
		}
	}
}

// onSmallDisk is a SQLite store on a filesystem of its own, 8 MiB large,
// and the store's directory.
func onSmallDisk(t *testing.T) (*store.Store, string) {
	t.Helper()
	dir := apitest.SmallDisk(t, "8m")
	s, err := store.Open("sqlite", filepath.Join(dir, "vm.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// TestFullDiskRefusesWalletGatewayWrites: the wallet gateway's writes on a
// disk with no space left are ErrUnavailable (503) too, whether SQLite
// refuses a statement or the commit.
func TestFullDiskRefusesWalletGatewayWrites(t *testing.T) {
	writes := []struct {
		name  string
		write func(s *store.Store, i int) error
	}{
		{"UpdateWalletGateway", func(s *store.Store, i int) error {
			_, err := s.UpdateWalletGateway(context.Background(), "v", func(g *domain.WalletGateway) error {
				g.Enabled, g.BaseURL = true, fmt.Sprintf("https://custody-%d.test/%s", i, strings.Repeat("x", 4096))
				return nil
			})
			return err
		}},
		{"RecordWallet", func(s *store.Store, i int) error {
			return s.RecordWallet(context.Background(), &domain.GatewayWallet{WalletID: fmt.Sprintf("w%d", i), Validator: "v",
				PartyHint: fmt.Sprintf("hint-%d-%s", i, strings.Repeat("x", 4096)), SigningProvider: "participant"})
		}},
		{"CompleteWallet", func(s *store.Store, i int) error {
			return s.CompleteWallet(context.Background(), domain.GatewayWallet{WalletID: "w", Validator: "v", Primary: true,
				PartyID: fmt.Sprintf("party-%d::%s", i, strings.Repeat("1", 4096))})
		}},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			s, dir := onSmallDisk(t)
			ctx := context.Background()
			v := domain.Validator{Name: "v", Phase: domain.PhasePending, Spec: []byte(`{}`)}
			if err := s.CreateValidator(ctx, &v); err != nil {
				t.Fatal(err)
			}
			if err := s.RecordWallet(ctx, &domain.GatewayWallet{WalletID: "w", Validator: "v", PartyHint: "h", SigningProvider: "participant"}); err != nil {
				t.Fatal(err)
			}
			apitest.FillDisk(t, dir, "filler")
			refused := 0
			for i := range 20 {
				switch err := w.write(s, i); {
				case err == nil:
				case errors.Is(err, domain.ErrUnavailable):
					refused++
				default:
					t.Fatalf("write %d on a full disk: got %v, want ErrUnavailable", i, err)
				}
			}
			if refused == 0 {
				t.Fatal("no write was refused on a full disk")
			}
		})
	}
}
