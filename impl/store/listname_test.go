package store_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/store"
)

// TestListValidatorsByName: a name filter is a literal, case-sensitive
// substring, byte for byte (non-ASCII names too), with or without a phase,
// after creates and deletes.
func TestListValidatorsByName(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		names := map[string]domain.Phase{}
		for i := range 30 {
			name := fmt.Sprintf("node-%03d", i*37%1000)
			if i%7 == 0 {
				name = fmt.Sprintf("nœud-été-%d", i)
			}
			v := newValidator(name)
			if i%2 == 0 {
				v.Phase = domain.PhaseRunning
			}
			mustCreateValidator(t, s, v)
			names[name] = v.Phase
		}
		checkNames(t, s, names, "after creates")
		for _, name := range []string{"node-037", "nœud-été-7"} {
			wantErr(t, s.DeleteValidator(ctx, name), nil)
			delete(names, name)
		}
		checkNames(t, s, names, "after deletes")
	})
}

func checkNames(t *testing.T, s *store.Store, names map[string]domain.Phase, when string) {
	t.Helper()
	for _, sub := range []string{"node", "ode-0", "-03", "037", "111", "zzz", "Node", "%", "_", "-0", "0\x00", "œud", "été-1", "ud-é", "no", "e-"} {
		for _, phase := range []domain.Phase{"", domain.PhaseRunning} {
			var want []string
			for name, p := range names {
				if strings.Contains(name, sub) && (phase == "" || p == phase) {
					want = append(want, name)
				}
			}
			sort.Strings(want)
			got, total, err := s.ListValidators(context.Background(), domain.ValidatorFilter{
				NameContains: sub, Phase: phase, Page: domain.Page{Limit: 100},
			})
			wantErr(t, err, nil)
			if names := validatorNames(got); !reflect.DeepEqual(names, want) || total != int64(len(want)) {
				t.Fatalf("%s, name %q, phase %q: got %q total %d, want %q", when, sub, phase, names, total, want)
			}
		}
	}
}
