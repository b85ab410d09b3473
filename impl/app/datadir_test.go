package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/idp"
)

// TestStartRefusesContradictions: the embedded default's start-up compares
// its stores with the database. A store that is missing beside a database
// with validators, of another installation, or a database emptied beside
// stores that recorded one is refused naming the file and what to do;
// startAfresh lets the named stores start empty (their files set aside),
// and a fresh data directory starts with no questions.
func TestStartRefusesContradictions(t *testing.T) {
	if apiServer == nil {
		t.Skip(skipNoServer)
	}
	foreign := func(path string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			raw, err := os.ReadFile(filepath.Join(dir, path))
			if err != nil {
				t.Fatal(err)
			}
			var st map[string]any
			if err := json.Unmarshal(raw, &st); err != nil {
				t.Fatal(err)
			}
			st["installation"] = "another"
			raw, _ = json.Marshal(st)
			if err := os.WriteFile(filepath.Join(dir, path), raw, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	remove := func(paths ...string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			for _, p := range paths {
				if err := os.Remove(filepath.Join(dir, p)); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
		}
	}
	emptyDatabase := remove("validator-manager.db", "validator-manager.db-wal", "validator-manager.db-shm")
	// list edits a list of the users file ("users": v2's and v3's wallet
	// users; "clients": their three clients each), once an open has
	// written it whole with what its journal holds.
	list := func(key string, count int, edit func(list []any) any) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if _, err := idp.OpenLocal(filepath.Join(dir, "idp"), idp.LocalOptions{}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "idp", "users.json")
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var st map[string]any
			if err := json.Unmarshal(raw, &st); err != nil {
				t.Fatal(err)
			}
			items, _ := st[key].([]any)
			if len(items) != count {
				t.Fatalf("users.json holds %d %s, want %d", len(items), key, count)
			}
			st[key] = edit(items)
			raw, _ = json.Marshal(st)
			if err := os.WriteFile(path, raw, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	users := func(edit func(list []any) any) func(t *testing.T, dir string) { return list("users", 2, edit) }
	emptied := users(func([]any) any { return []any{} })
	nulled := users(func([]any) any { return nil })
	clientsEmptied := list("clients", 6, func([]any) any { return []any{} })
	clientDropped := list("clients", 6, func(list []any) any {
		for i, c := range list {
			if c.(map[string]any)["clientId"] == "v3-wallet-ui" {
				return append(list[:i:i], list[i+1:]...)
			}
		}
		t.Fatal("no wallet UI client of v3")
		return nil
	})
	dropped := users(func(list []any) any {
		for i, u := range list {
			if u.(map[string]any)["username"] == "v3_walletuser" {
				return append(list[:i:i], list[i+1:]...)
			}
		}
		t.Fatal("no wallet user of v3")
		return nil
	})
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
		afresh string
		want   []string // nil: it starts
		aside  []string // files set aside
	}{
		{"restart", func(*testing.T, string) {}, "", nil, nil},
		{"users.json missing", remove("idp/users.json"), "", []string{"idp/users.json is missing, but the database holds validators", "--start-afresh=idp"}, nil},
		{"state.json missing", remove("sandbox/state.json"), "", []string{"sandbox/state.json is missing, but the database holds validators", "--start-afresh=sandbox"}, nil},
		{"users.json foreign", foreign("idp/users.json"), "", []string{"idp/users.json belongs to installation another"}, nil},
		{"state.json foreign", foreign("sandbox/state.json"), "", []string{"sandbox/state.json belongs to installation another"}, nil},
		{"database emptied", emptyDatabase, "", []string{"validator-manager.db records no installation", "idp/users.json (installation", "sandbox/state.json (installation", "--start-afresh=idp,sandbox"}, nil},
		{"users.json missing, afresh", remove("idp/users.json"), "idp", nil, nil},
		{"state.json foreign, afresh", foreign("sandbox/state.json"), "sandbox", nil, []string{"sandbox/state.json"}},
		{"database emptied, afresh", emptyDatabase, "idp,sandbox", nil, []string{"idp/users.json", "sandbox/state.json"}},
		{"afresh without a contradiction", func(*testing.T, string) {}, "idp,sandbox", nil, nil},
		{"users.json users emptied", emptied, "", []string{"idp/users.json lacks the wallet users the database records for validators v2, v3 (", "--start-afresh=idp"}, nil},
		{"users.json users null", nulled, "", []string{"idp/users.json lacks the wallet users the database records for validators v2, v3 (", "--start-afresh=idp"}, nil},
		{"users.json entry dropped", dropped, "", []string{"idp/users.json lacks the wallet users the database records for validators v3 (", "--start-afresh=idp"}, nil},
		{"users.json users emptied, afresh", emptied, "idp", nil, []string{"idp/users.json"}},
		{"users.json clients emptied", clientsEmptied, "", []string{"idp/users.json lacks the clients the database records for validators v2, v3 (", "--start-afresh=idp"}, nil},
		{"users.json client dropped", clientDropped, "", []string{"idp/users.json lacks the clients the database records for validators v3 (", "--start-afresh=idp"}, nil},
		{"users.json clients emptied, afresh", clientsEmptied, "idp", nil, []string{"idp/users.json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, ns := t.TempDir(), apitest.Namespace()
			a := openEmbedded(t, dir, ns, "")
			if err := a.Store.Exec(context.Background(), "INSERT INTO validators (name, created_at, updated_at) VALUES ('v1', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"); err != nil {
				t.Fatal(err)
			}
			// v2 and v3 have wallet users and clients the identity
			// provider made (v1 has custom authentication).
			for _, name := range []string{"v2", "v3"} {
				u, err := a.Identity.CreateWalletUser(context.Background(), name, "claim-"+name, "Datadir-Test-Pa55word")
				if err != nil {
					t.Fatal(err)
				}
				if err := a.Store.Exec(context.Background(), fmt.Sprintf("INSERT INTO validators (name, wallet_user_id, created_at, updated_at) VALUES ('%s', '%s', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)", name, u.ID)); err != nil {
					t.Fatal(err)
				}
				made, err := a.Identity.ProvisionClients(context.Background(), name, "claim-"+name)
				if err != nil {
					t.Fatal(err)
				}
				if err := a.Store.SetProvisionedAuth(context.Background(), name, made); err != nil {
					t.Fatal(err)
				}
			}
			a.Close()
			tt.change(t, dir)
			a, err := open(dir, ns, tt.afresh)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("got %v, want it to start", err)
				}
				a.Close()
				for _, f := range tt.aside {
					if m, _ := filepath.Glob(filepath.Join(dir, f+".set-aside-*")); len(m) != 1 {
						t.Errorf("got %v set aside, want %s", m, f)
					}
				}
				return
			}
			if err == nil {
				a.Close()
				t.Fatalf("started, want an error containing %q", tt.want)
			}
			for _, want := range append(tt.want, dir) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("got %q, want it to contain %q", err, want)
				}
			}
		})
	}
}

// openEmbedded opens the embedded default in dir on envtest's API server
// (namespace ns), failing the test if it does not start.
func openEmbedded(t *testing.T, dir, ns, afresh string) *app.App {
	t.Helper()
	a, err := open(dir, ns, afresh)
	if err != nil {
		t.Fatalf("fresh data directory: %v", err)
	}
	return a
}

func open(dir, ns, afresh string) (*app.App, error) {
	cfg := config.Default()
	cfg.DataDir, cfg.Namespace, cfg.StartAfresh = dir, ns, afresh
	return app.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), "test", app.WithControlPlane(apiServer), apitest.SeveralManagers())
}

// TestEmptiedEtcdIsRefused: the embedded control plane records the
// installation; an etcd emptied beside a database with validators is
// refused naming it, at every start until --start-afresh=cluster accepts
// it (the record is written again).
func TestEmptiedEtcdIsRefused(t *testing.T) {
	if apiServer == nil {
		t.Skip(skipNoServer)
	}
	dir := t.TempDir()
	cfg := config.Default()
	cfg.DataDir = dir
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	a, err := app.Open(ctx, cfg, log, "test", apitest.SeveralManagers())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Store.Exec(ctx, "INSERT INTO validators (name, created_at, updated_at) VALUES ('v1', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"); err != nil {
		t.Fatal(err)
	}
	a.Close()
	a, err = app.Open(ctx, cfg, log, "test", apitest.SeveralManagers())
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	a.Close()
	etcd := filepath.Join(dir, "cluster", "etcd")
	if err := os.RemoveAll(etcd); err != nil {
		t.Fatal(err)
	}
	a, err = app.Open(ctx, cfg, log, "test", apitest.SeveralManagers())
	if err == nil {
		a.Close()
		t.Fatal("started on an emptied etcd, want a refusal")
	}
	for _, want := range []string{etcd, "is empty (a new cluster), but the database holds validators", "--start-afresh=cluster"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %q, want it to contain %q", err, want)
		}
	}
	if a, err = app.Open(ctx, cfg, log, "test", apitest.SeveralManagers()); err == nil {
		a.Close()
		t.Fatal("a second start on the emptied etcd started, want the refusal again")
	}
	cfg.StartAfresh = "cluster"
	a, err = app.Open(ctx, cfg, log, "test", apitest.SeveralManagers())
	if err != nil {
		t.Fatalf("--start-afresh=cluster: %v", err)
	}
	a.Close()
}
