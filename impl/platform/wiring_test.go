package platform_test

import (
	"context"
	"testing"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/platform"
	"github.com/validator-manager/validator-manager/impl/server"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// lateParts hands the release 2.0 server the app's cluster reader and
// upstream clients, which exist only once the app is open: the tests of
// the wallet gateway and the console build 2.0's handlers with the parts
// the app does not wire yet, the way the app is to wire them.
type lateParts struct {
	res platform.Resources
	ups platform.Upstreams
}

func (l *lateParts) ResourceList(kind domain.ResourceKind) ([]byte, error) {
	return l.res.ResourceList(kind)
}
func (l *lateParts) ResourceListVersion(kind domain.ResourceKind) (string, error) {
	return l.res.ResourceListVersion(kind)
}
func (l *lateParts) ResourceObject(kind domain.ResourceKind, name string) ([]byte, error) {
	return l.res.ResourceObject(kind, name)
}
func (l *lateParts) ResourceStatus(kind domain.ResourceKind, name string) ([]byte, error) {
	return l.res.ResourceStatus(kind, name)
}
func (l *lateParts) ApplicationMetrics(ctx context.Context, names ...string) ([]domain.ApplicationMetrics, error) {
	return l.res.ApplicationMetrics(ctx, names...)
}
func (l *lateParts) For(ctx context.Context, validator string) (*upstream.Node, error) {
	return l.ups.For(ctx, validator)
}

// startWired runs the server with 2.0's handlers built from o plus the
// app's resources and upstreams; ready is called with the started server
// before any request (to finish o's parts that need the app).
func startWired(t testing.TB, o platform.Options, ready func(*apitest.Server), extra ...app.Option) *apitest.Server {
	t.Helper()
	late := &lateParts{}
	wire := app.With(func(so *server.Options) {
		o.Resources, o.Upstreams = late, late
		o.Logger, o.Docs = so.Logger, so.Docs
		p := platform.New(o)
		so.Platform = p
		so.Plain["openLedgerConsole"] = p.LedgerConsole
	})
	s := apitest.Start(t, apitest.Options{App: append([]app.Option{wire}, extra...)})
	late.res, late.ups = s.App.Cluster, s.App.Upstreams
	if ready != nil {
		ready(s)
	}
	return s
}
