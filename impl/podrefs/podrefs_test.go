package podrefs_test

import (
	"reflect"
	"testing"

	"github.com/validator-manager/validator-manager/impl/podrefs"
)

func TestLacking(t *testing.T) {
	secret := func(name string, keys ...string) podrefs.Ref {
		return podrefs.Ref{Kind: podrefs.Secret, Name: name, Keys: keys}
	}
	optional := func(r podrefs.Ref) podrefs.Ref { r.Optional = true; return r }
	db := podrefs.Object{Kind: podrefs.Secret, Name: "db"}
	for _, tc := range []struct {
		name string
		refs []podrefs.Ref
		held map[podrefs.Object][]string
		want []podrefs.Ref
	}{
		{"nothing read", nil, nil, nil},
		{"every key there", []podrefs.Ref{secret("db", "user", "password"), secret("db")},
			map[podrefs.Object][]string{db: {"password", "user"}}, nil},
		{"object missing, named once", []podrefs.Ref{secret("db", "user"), secret("db", "password"), secret("db")},
			nil, []podrefs.Ref{secret("db")}},
		{"a key missing", []podrefs.Ref{secret("db", "user"), secret("db", "password")},
			map[podrefs.Object][]string{db: {"user"}}, []podrefs.Ref{secret("db", "password")}},
		{"keys missing from two refs, each once", []podrefs.Ref{secret("db", "a", "b"), secret("db", "b", "c")},
			map[podrefs.Object][]string{db: {"c"}}, []podrefs.Ref{secret("db", "a", "b")}},
		{"a Secret without data lacks every key", []podrefs.Ref{secret("db", "user")},
			map[podrefs.Object][]string{db: nil}, []podrefs.Ref{secret("db", "user")}},
		{"envFrom needs no key", []podrefs.Ref{secret("db")}, map[podrefs.Object][]string{db: nil}, nil},
		{"optional refs need nothing", []podrefs.Ref{optional(secret("db", "user")), optional(secret("other"))},
			map[podrefs.Object][]string{db: nil}, nil},
		{"an optional ref does not excuse a required one", []podrefs.Ref{optional(secret("db", "user")), secret("db", "user")},
			map[podrefs.Object][]string{db: nil}, []podrefs.Ref{secret("db", "user")}},
		{"same name, other kind", []podrefs.Ref{{Kind: podrefs.ConfigMap, Name: "db", Keys: []string{"x"}}, secret("db", "x")},
			map[podrefs.Object][]string{db: {"x"}}, []podrefs.Ref{{Kind: podrefs.ConfigMap, Name: "db"}}},
		{"in the order first read", []podrefs.Ref{secret("b", "k"), secret("a"), secret("b", "l")},
			map[podrefs.Object][]string{{Kind: podrefs.Secret, Name: "b"}: {"l"}},
			[]podrefs.Ref{secret("b", "k"), secret("a")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podrefs.Lacking(tc.refs, tc.held); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
