package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/auth"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/server"
	"github.com/validator-manager/validator-manager/openapi"
)

// adminOperations are the operations only an admin may call: the identity
// dump (key material), the ledger console, the wallet gateway's credentials
// and the audit log.
var adminOperations = []string{"getIdentityDump", "openLedgerConsole", "updateCustodyProviderSettings", "listAuditEntries"}

// contractOperation is one operation of a contract with what the tests
// need of it.
type contractOperation struct {
	release, method string
	op              *openapi3.Operation
}

func (o contractOperation) public() bool { return o.op.Security != nil && len(*o.op.Security) == 0 }

func contractOperations(t *testing.T) map[string]contractOperation {
	t.Helper()
	out := map[string]contractOperation{}
	for rel, load := range map[string]func() (*openapi3.T, error){release111: openapi.Management, release20: openapi.Platform} {
		doc, err := load()
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range doc.Paths.Map() {
			for method, op := range item.Operations() {
				out[rel+"/"+op.OperationID] = contractOperation{release: rel, method: method, op: op}
			}
		}
	}
	return out
}

// TestRequiredRolesInContracts: every operation of both contracts names its
// role in x-required-role by the rule (public: none; GET: viewer; any other
// method: operator; the admin operations: admin), says it in its
// description, and declares 403 unless it is public.
func TestRequiredRolesInContracts(t *testing.T) {
	t.Parallel()
	for key, o := range contractOperations(t) {
		want := "operator"
		switch {
		case o.public():
			want = "none"
		case slices.Contains(adminOperations, o.op.OperationID):
			want = "admin"
		case o.method == http.MethodGet:
			want = "viewer"
		}
		if got := o.op.Extensions[server.RequiredRoleKey]; got != want {
			t.Errorf("%s: %s: got %v, want %s", key, server.RequiredRoleKey, got, want)
		}
		sentence := "**Required role** (when roles are on, setting `api.auth.roles`): `" + want + "`."
		if want == "none" {
			sentence = "**Required role:** none (public)."
		}
		if !strings.Contains(o.op.Description, sentence) {
			t.Errorf("%s: description does not say %q", key, sentence)
		}
		if forbidden := o.op.Responses.Value("403"); (forbidden != nil) == o.public() {
			t.Errorf("%s: 403 declared: got %v, want %v", key, forbidden != nil, !o.public())
		}
	}
}

// TestRolesEveryOperation calls every operation of both contracts (the rows
// of TestEveryOperation) with a token of each role, each role from another
// kind of claim. With roles on, a refusal is 403 exactly when the token's
// role is below the operation's x-required-role, with an empty body on
// release 2.0 and a JSON object on release 1.11. With roles off (release
// 2.0's rule) the same tokens are never refused.
func TestRolesEveryOperation(t *testing.T) {
	t.Parallel()
	callers := []struct {
		role   auth.Role
		claims map[string]any
	}{
		{auth.RoleNone, map[string]any{"realm_access": map[string]any{"roles": []string{"offline_access"}}, "scope": "openid profile"}},
		{auth.RoleViewer, map[string]any{"realm_access": map[string]any{"roles": []string{"offline_access", "vm-viewer"}}}},
		{auth.RoleOperator, map[string]any{"resource_access": map[string]any{"vm-ui": map[string]any{"roles": []string{"operator"}}}}},
		{auth.RoleOperator, map[string]any{"scope": "openid vm.write"}},
		{auth.RoleAdmin, map[string]any{"groups": []string{"/ops", "/vm-admins"}, "realm_access": map[string]any{"roles": []string{"vm-viewer"}}}},
	}
	ops := contractOperations(t)
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "roles on", false: "roles off"}[on], func(t *testing.T) {
			s := apitest.Start(t, apitest.Options{Config: func(c *config.Config) {
				if on {
					c.RolesViewer = "realm:vm-viewer"
					c.RolesOperator = "client:vm-ui/operator, scope:vm.write"
					c.RolesAdmin = "group:/vm-admins"
				}
			}})
			as := make([]*apitest.Server, len(callers))
			for i, c := range callers {
				tok, err := s.App.Issuer.IssueWith("caller-"+c.role.String(), time.Hour, c.claims)
				if err != nil {
					t.Fatal(err)
				}
				as[i] = s.As(t, tok)
			}
			for _, c := range operationCases() {
				name := c.release + "/" + c.id
				if c.variant != "" {
					name += "/" + c.variant
				}
				o := ops[c.release+"/"+c.id]
				need, err := auth.ParseRole(o.op.Extensions[server.RequiredRoleKey].(string))
				if err != nil {
					t.Fatal(err)
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					for i, caller := range callers {
						r, err := c.call(t.Context(), as[i])
						if err != nil {
							t.Fatalf("%s: %v", caller.role, err)
						}
						want := on && !o.public() && caller.role < need
						if got := r.StatusCode() == http.StatusForbidden; got != want {
							t.Errorf("token of role %s (%v), operation needs %s: got %d %.200s, want 403 %v", caller.role, caller.claims, need, r.StatusCode(), r.GetBody(), want)
							continue
						}
						if !want {
							continue
						}
						var body map[string]string
						switch {
						case c.release == release20 && len(r.GetBody()) != 0:
							t.Errorf("role %s: 403 body: got %q, want none", caller.role, r.GetBody())
						case c.release == release111 && (json.Unmarshal(r.GetBody(), &body) != nil || !strings.Contains(body["error"], "needs role "+need.String())):
							t.Errorf("role %s: 403 body: got %s, want a JSON object naming role %s", caller.role, r.GetBody(), need)
						}
					}
				})
			}
		})
	}
}
