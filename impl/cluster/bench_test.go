package cluster_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/validator-manager/validator-manager/impl/cluster/simcluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// BenchmarkEmbeddedWrite: the embedded cluster's create and edit of one
// validator with 10 and with 1,000 validators present. Each write is one
// row of objects.db (synced), so the time must not grow with their number.
//
//	go test -run XXX -bench BenchmarkEmbeddedWrite -benchmem -count 5 ./impl/cluster/
func BenchmarkEmbeddedWrite(b *testing.B) {
	for _, n := range []int{10, 1000} {
		c, err := simcluster.Open(b.TempDir(), simcluster.Options{Namespace: "validators"})
		if err != nil {
			b.Fatal(err)
		}
		startKube(b, c.Start)
		ctx := context.Background()
		for i := range n {
			if err := c.ApplyValidator(ctx, benchValidator(b, fmt.Sprintf("v%d", i), "0.4.1"), nil); err != nil {
				b.Fatal(err)
			}
		}
		created := 0 // across runs of the sub-benchmark: every create is a new name
		b.Run(fmt.Sprintf("create/validators=%d", n), func(b *testing.B) {
			for b.Loop() {
				created++
				v := benchValidator(b, fmt.Sprintf("new-%d", created), "0.4.1")
				if err := c.ApplyValidator(ctx, v, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("edit/validators=%d", n), func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				v := benchValidator(b, fmt.Sprintf("v%d", i%n), fmt.Sprintf("0.5.%d", i))
				if err := c.ApplyValidator(ctx, v, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		c.Close()
	}
}

// benchValidator has 20 environment variables, a typical configuration.
func benchValidator(b *testing.B, name, tag string) domain.Validator {
	env := make([]any, 20)
	for i := range env {
		env[i] = map[string]any{"name": fmt.Sprintf("JAVA_OPT_%d", i), "value": fmt.Sprintf("-Dsome.property.%d=some-value-of-moderate-length", i)}
	}
	cfg := config(name, tag, map[string]any{"participant": map[string]any{"envVars": env}})
	return validator(b, name, cfg)
}
