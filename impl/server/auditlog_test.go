package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/config"
)

// TestAuditLogAnswersWhoChangedAValidator: with roles on, an operator
// creates a validator through release 1.11 and edits it twice (once
// refused as invalid, once done), a viewer tries to edit it; an admin reads
// from either release's audit operation who did what, when, with which
// role and whether it worked, filtered and paged; nobody else may read it.
// On SQLite and on PostgreSQL.
func TestAuditLogAnswersWhoChangedAValidator(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dsn := ""
			if backend == "postgres" {
				if dsn = apitest.ThrowawayPostgres(t); dsn == "" {
					t.Skip("TEST_POSTGRES_DSN is not set: PostgreSQL is not tested")
				}
			}
			s := apitest.Start(t, apitest.Options{Config: func(c *config.Config) {
				c.DatabaseDSN = dsn
				c.RolesViewer = "realm:vm-viewer"
				c.RolesOperator = "realm:vm-operator"
				c.RolesAdmin = "realm:vm-admin"
			}})
			as := func(subject, role string) *apitest.Server {
				tok, err := s.App.Issuer.IssueWith(subject, time.Hour, map[string]any{"realm_access": map[string]any{"roles": []string{role}}})
				if err != nil {
					t.Fatal(err)
				}
				return s.As(t, tok)
			}
			alice, bob, root := as("alice", "vm-operator"), as("bob", "vm-viewer"), as("root", "vm-admin")
			ctx := t.Context()
			const name = "audited"

			created, err := alice.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload(name))
			if err != nil || created.StatusCode() != http.StatusCreated {
				t.Fatalf("create: %v %d %s", err, created.StatusCode(), created.Body)
			}
			invalid, err := alice.Management.UpdateValidatorWithResponse(ctx, managementapi.ValidatorEditDto{
				Name: name, ClusterConfig: &managementapi.ClusterConfigEditDto{Migration: managementapi.MigrationDto{Id: 0}},
			})
			if err != nil || invalid.StatusCode() != http.StatusBadRequest {
				t.Fatalf("lower migration id: %v %d %s", err, invalid.StatusCode(), invalid.Body)
			}
			edited, err := alice.Management.UpdateValidatorWithResponse(ctx, managementapi.ValidatorEditDto{Name: name, ImageTag: ptr("0.4.3")})
			if err != nil || edited.StatusCode() != http.StatusOK {
				t.Fatalf("edit: %v %d %s", err, edited.StatusCode(), edited.Body)
			}
			refused, err := bob.Management.UpdateValidatorWithResponse(ctx, managementapi.ValidatorEditDto{Name: name, ImageTag: ptr("9.9.9")})
			if err != nil || refused.StatusCode() != http.StatusForbidden {
				t.Fatalf("viewer's edit: %v %d %s", err, refused.StatusCode(), refused.Body)
			}

			// Release 1.11: the validator's history, newest first.
			page, err := root.Management.ListAuditEntriesWithResponse(ctx, &managementapi.ListAuditEntriesParams{Validator: ptr(name)})
			if err != nil || page.JSON200 == nil {
				t.Fatalf("1.11 audit: %v %d %s", err, page.StatusCode(), page.Body)
			}
			type row struct {
				subject, role, operation string
				status                   int32
				requestID                string
			}
			want := []row{
				{"alice", "operator", "updateValidator", http.StatusOK, edited.HTTPResponse.Header.Get("X-Request-Id")},
				{"alice", "operator", "updateValidator", http.StatusBadRequest, invalid.HTTPResponse.Header.Get("X-Request-Id")},
				{"alice", "operator", "createValidator", http.StatusCreated, created.HTTPResponse.Header.Get("X-Request-Id")},
			}
			got := page.JSON200.Entries
			if page.JSON200.TotalCount != int64(len(want)) || len(got) != len(want) {
				t.Fatalf("1.11 audit of %s: got %d of %d entries %s, want %d", name, len(got), page.JSON200.TotalCount, page.Body, len(want))
			}
			for i, w := range want {
				e := got[i]
				if e.Subject != w.subject || e.Role == nil || string(*e.Role) != w.role || e.Operation != w.operation ||
					e.Status != w.status || e.RequestId != w.requestID || e.Outcome != managementapi.Done ||
					e.Validator == nil || *e.Validator != name || time.Since(e.At) > time.Minute {
					t.Errorf("entry %d: got %s, want %+v", i, mustJSON(e), w)
				}
			}

			// Release 2.0: the viewer's refused attempt, by subject.
			byBob, err := root.Platform.ListAuditEntriesWithResponse(ctx, &platformapi.ListAuditEntriesParams{Subject: ptr("bob")})
			if err != nil || byBob.JSON200 == nil || len(byBob.JSON200.Entries) != 1 || byBob.JSON200.NextCursor != nil {
				t.Fatalf("2.0 audit of bob: %v %s", err, byBob.Body)
			}
			if e := byBob.JSON200.Entries[0]; e.Operation != "updateValidator" || e.Status != http.StatusForbidden ||
				e.Role == nil || *e.Role != platformapi.Viewer || e.Outcome != platformapi.Done {
				t.Errorf("bob's entry: got %s, want updateValidator refused 403 as viewer", mustJSON(e))
			}

			// Release 2.0: alice's calls, two at a time.
			var pages [][]platformapi.AuditEntry
			var cursor *string
			for {
				p, err := root.Platform.ListAuditEntriesWithResponse(ctx, &platformapi.ListAuditEntriesParams{Subject: ptr("alice"), Limit: ptr[int32](2), Cursor: cursor})
				if err != nil || p.JSON200 == nil {
					t.Fatalf("2.0 audit page: %v %d %s", err, p.StatusCode(), p.Body)
				}
				pages = append(pages, p.JSON200.Entries)
				if cursor = p.JSON200.NextCursor; cursor == nil || len(pages) > 3 {
					break
				}
			}
			if len(pages) != 2 || len(pages[0]) != 2 || len(pages[1]) != 1 ||
				pages[0][0].RequestId != want[0].requestID || pages[0][1].RequestId != want[1].requestID || pages[1][0].RequestId != want[2].requestID {
				t.Fatalf("alice's pages: got %s, want the three entries newest first, 2 then 1", mustJSON(pages))
			}

			// A time range: only the create.
			at := got[2].At
			ranged, err := root.Platform.ListAuditEntriesWithResponse(ctx, &platformapi.ListAuditEntriesParams{
				Validator: ptr(name), Since: ptr(at), Until: ptr(at.Add(time.Microsecond)),
			})
			if err != nil || ranged.JSON200 == nil || len(ranged.JSON200.Entries) != 1 || ranged.JSON200.Entries[0].Operation != "createValidator" {
				t.Fatalf("since/until the create's instant: %v %s", err, ranged.Body)
			}

			// Only an admin reads the log.
			for who, c := range map[string]*apitest.Server{"operator": alice, "viewer": bob} {
				m, err := c.Management.ListAuditEntriesWithResponse(ctx, nil)
				if err != nil || m.StatusCode() != http.StatusForbidden {
					t.Errorf("%s reads 1.11 audit: %v %d, want 403", who, err, m.StatusCode())
				}
				p, err := c.Platform.ListAuditEntriesWithResponse(ctx, nil)
				if err != nil || p.StatusCode() != http.StatusForbidden || len(p.Body) != 0 {
					t.Errorf("%s reads 2.0 audit: %v %d %q, want 403 with no body", who, err, p.StatusCode(), p.Body)
				}
			}
		})
	}
}

func mustJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(raw)
}
