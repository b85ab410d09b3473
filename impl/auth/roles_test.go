package auth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/impl/auth"
)

// TestRolesFromClaims: each kind of claim maps to its role through a
// verified token; the highest role wins; a token of no mapped claim has
// none; roles off leaves every token at none.
func TestRolesFromClaims(t *testing.T) {
	issuer, err := auth.OpenDevIssuer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roles, err := auth.ParseRoles("realm:vm-viewer, group:/readers", "client:vm-ui/operator,scope:vm.write", "group:/platform/admins")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		claims map[string]any
		want   auth.Role
	}{
		{"no claims", nil, auth.RoleNone},
		{"unmapped realm role", map[string]any{"realm_access": map[string]any{"roles": []string{"offline_access"}}}, auth.RoleNone},
		{"realm role", map[string]any{"realm_access": map[string]any{"roles": []string{"offline_access", "vm-viewer"}}}, auth.RoleViewer},
		{"group", map[string]any{"groups": []string{"/readers"}}, auth.RoleViewer},
		{"client role", map[string]any{"resource_access": map[string]any{"vm-ui": map[string]any{"roles": []string{"operator"}}}}, auth.RoleOperator},
		{"same role of another client", map[string]any{"resource_access": map[string]any{"other": map[string]any{"roles": []string{"operator"}}}}, auth.RoleNone},
		{"scope string", map[string]any{"scope": "openid vm.write profile"}, auth.RoleOperator},
		{"scp array", map[string]any{"scp": []string{"vm.write"}}, auth.RoleOperator},
		{"scope is not a prefix match", map[string]any{"scope": "vm.writer"}, auth.RoleNone},
		{"highest wins", map[string]any{"realm_access": map[string]any{"roles": []string{"vm-viewer"}}, "groups": []string{"/platform/admins"}}, auth.RoleAdmin},
		{"claims of the wrong type", map[string]any{"groups": "/platform/admins", "realm_access": []string{"vm-viewer"}}, auth.RoleNone},
	}
	for _, tt := range tests {
		tok, err := issuer.IssueWith("someone", time.Hour, tt.claims)
		if err != nil {
			t.Fatal(err)
		}
		for _, on := range []bool{true, false} {
			v := auth.NewVerifier(issuer.PublicKeys(), auth.DevIssuerName, "")
			want := auth.RoleNone
			if on {
				v, want = v.WithRoles(roles), tt.want
			}
			p, err := v.Verify(context.Background(), tok)
			if err != nil {
				t.Fatal(err)
			}
			if p.Role != want || v.RolesOn() != on {
				t.Errorf("%s (roles on %v): got %s, want %s", tt.name, on, p.Role, want)
			}
		}
	}
}

func TestParseRoles(t *testing.T) {
	tests := []struct {
		viewer, operator, admin string
		off                     bool
		err                     string
	}{
		{"", "", "", true, ""},
		{" , ", "", "", true, ""},
		{"realm:a", "", "", false, ""},
		{"", "", "client:ui/admin", false, ""},
		{"realm", "", "", false, `"realm": want realm:<role>`},
		{"", "role:a", "", false, `api.auth.roles.operator: "role:a": unknown kind "role"`},
		{"", "", "client:ui", false, `api.auth.roles.admin: "client:ui": want client:<clientId>/<role>`},
		{"group:/ops", "group:/ops", "", false, `"group:/ops" is given to both viewer and operator`},
	}
	for _, tt := range tests {
		r, err := auth.ParseRoles(tt.viewer, tt.operator, tt.admin)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q %q %q: got error %v, want one containing %q", tt.viewer, tt.operator, tt.admin, err, tt.err)
			}
		case err != nil || (r == nil) != tt.off:
			t.Errorf("%q %q %q: got %v, %v; want off=%v", tt.viewer, tt.operator, tt.admin, r, err, tt.off)
		}
	}
	for _, name := range []string{"none", "viewer", "operator", "admin"} {
		if r, err := auth.ParseRole(name); err != nil || r.String() != name {
			t.Errorf("ParseRole(%q): got %v %v", name, r, err)
		}
	}
	if _, err := auth.ParseRole("root"); err == nil {
		t.Error(`ParseRole("root"): got no error`)
	}
}
