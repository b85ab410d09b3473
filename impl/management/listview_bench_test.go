package management

import (
	"context"
	"fmt"
	"testing"

	"github.com/validator-manager/validator-manager/impl/domain"
)

func BenchmarkRenderPage(b *testing.B) {
	full := goldenValidator
	if err := setConfig(&full, fullConfig()); err != nil {
		b.Fatal(err)
	}
	s := &Server{Options: Options{Namespace: "validators"}}
	rows := make([]domain.ListedValidator, 50)
	for i := range rows {
		rows[i] = domain.ListedValidator{Name: fmt.Sprintf("node-%05d", i), Phase: domain.PhaseRunning, ListView: full.ListView, ListViewVersion: listViewVersion}
	}
	b.ReportAllocs()
	for b.Loop() {
		p, err := s.renderPage(context.Background(), rows, 100000)
		if err != nil {
			b.Fatal(err)
		}
		p.release()
	}
}
