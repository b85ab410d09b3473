package management_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
)

// BenchmarkCreateEdit measures a create and an edit through the API on the
// embedded default (SQLite, the embedded cluster, the reconciler's writes)
// with 10 and with 1,000 validators present: neither may grow with their
// number. Creates use custom authentication (no wallet user).
func BenchmarkCreateEdit(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("validators=%d", n), func(b *testing.B) {
			s := apitest.Start(b, apitest.Options{})
			ctx := context.Background()
			for i := range n {
				if r, err := s.Management.CreateValidatorWithResponse(ctx, customAuth(apitest.ValidatorPayload(fmt.Sprintf("seed%04d", i)))); err != nil || r.StatusCode() != http.StatusCreated {
					b.Fatalf("seed %d: %v %v", i, statusCode(r), err)
				}
			}
			created := 0 // across the runs of -count
			b.Run("create", func(b *testing.B) {
				for b.Loop() {
					created++
					i := created
					if r, err := s.Management.CreateValidatorWithResponse(ctx, customAuth(apitest.ValidatorPayload(fmt.Sprintf("new%06d", i)))); err != nil || r.StatusCode() != http.StatusCreated {
						b.Fatalf("create: %v %v", statusCode(r), err)
					}
				}
			})
			b.Run("edit", func(b *testing.B) {
				i := 0
				for b.Loop() {
					i++
					tag := fmt.Sprintf("0.5.%d", i)
					if r, err := s.Management.UpdateValidatorWithResponse(ctx, managementapi.ValidatorEditDto{Name: "seed0005", ImageTag: &tag}); err != nil || r.StatusCode() != http.StatusOK {
						b.Fatalf("edit: %v %v", statusCode(r), err)
					}
				}
			})
		})
	}
}

func statusCode(r interface{ StatusCode() int }) int {
	if r == nil {
		return 0
	}
	return r.StatusCode()
}
