package auth

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lestrrat-go/jwx/v2/jwt"
)

// Role is what a token may do when roles are on (setting api.auth.roles).
// Each role includes the ones below it.
type Role int

// The roles, lowest first. RoleNone is a token that maps to no role (or
// roles are off).
const (
	RoleNone Role = iota
	RoleViewer
	RoleOperator
	RoleAdmin
)

var roleNames = []string{"none", "viewer", "operator", "admin"}

func (r Role) String() string {
	if r < RoleNone || int(r) >= len(roleNames) {
		return fmt.Sprintf("Role(%d)", int(r))
	}
	return roleNames[r]
}

// ParseRole reads a role's name (as the contracts' x-required-role has it).
func ParseRole(s string) (Role, error) {
	if i := slices.Index(roleNames, s); i >= 0 {
		return Role(i), nil
	}
	return RoleNone, fmt.Errorf("unknown role %q (want one of %s)", s, strings.Join(roleNames, ", "))
}

// Roles maps token claims (realm:<role>, client:<clientId>/<role>,
// group:<group>, scope:<scope>) to roles; a token carries the highest role
// any of its claims maps to.
type Roles struct {
	byClaim map[string]Role
}

// ParseRoles builds the mapping from the comma-separated claim lists of
// each role; nil when all three are empty (roles off).
func ParseRoles(viewer, operator, admin string) (*Roles, error) {
	r := &Roles{byClaim: map[string]Role{}}
	for role, list := range map[Role]string{RoleViewer: viewer, RoleOperator: operator, RoleAdmin: admin} {
		for _, claim := range strings.Split(list, ",") {
			claim = strings.TrimSpace(claim)
			if claim == "" {
				continue
			}
			if err := checkClaim(claim); err != nil {
				return nil, fmt.Errorf("api.auth.roles.%s: %w", role, err)
			}
			if other, ok := r.byClaim[claim]; ok && other != role {
				return nil, fmt.Errorf("api.auth.roles: %q is given to both %s and %s", claim, min(role, other), max(role, other))
			}
			r.byClaim[claim] = role
		}
	}
	if len(r.byClaim) == 0 {
		return nil, nil
	}
	return r, nil
}

func checkClaim(claim string) error {
	kind, name, _ := strings.Cut(claim, ":")
	switch {
	case name == "":
		return fmt.Errorf("%q: want realm:<role>, client:<clientId>/<role>, group:<group> or scope:<scope>", claim)
	case kind == "client":
		if c, role, ok := strings.Cut(name, "/"); !ok || c == "" || role == "" {
			return fmt.Errorf("%q: want client:<clientId>/<role>", claim)
		}
	case kind != "realm" && kind != "group" && kind != "scope":
		return fmt.Errorf("%q: unknown kind %q (want realm, client, group or scope)", claim, kind)
	}
	return nil
}

// Of returns the role tok carries: RoleNone on a nil Roles (roles off) or
// when no claim maps to a role.
func (r *Roles) Of(tok jwt.Token) Role {
	if r == nil {
		return RoleNone
	}
	best := RoleNone
	see := func(claim string) {
		if role, ok := r.byClaim[claim]; ok && role > best {
			best = role
		}
	}
	claims := tok.PrivateClaims()
	if realm, ok := claims["realm_access"].(map[string]any); ok {
		for _, role := range strs(realm["roles"]) {
			see("realm:" + role)
		}
	}
	if clients, ok := claims["resource_access"].(map[string]any); ok {
		for client, access := range clients {
			if m, ok := access.(map[string]any); ok {
				for _, role := range strs(m["roles"]) {
					see("client:" + client + "/" + role)
				}
			}
		}
	}
	for _, g := range strs(claims["groups"]) {
		see("group:" + g)
	}
	for _, key := range []string{"scope", "scp"} {
		v := claims[key]
		if s, ok := v.(string); ok {
			v = strings.Fields(s)
		}
		for _, s := range strs(v) {
			see("scope:" + s)
		}
	}
	return best
}

// strs is the strings of a JSON array claim ([]any or []string).
func strs(v any) []string {
	switch v := v.(type) {
	case []string:
		return v
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
