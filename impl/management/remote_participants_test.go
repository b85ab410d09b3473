package management_test

import (
	"context"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/config"
)

func participant(name, host, port string) managementapi.RemoteParticipantDto {
	return managementapi.RemoteParticipantDto{
		Name: name, AdminAddress: host, AdminPort: port,
		LedgerAddress: host, LedgerPort: "5001", LedgerId: "ledger-" + name,
		JsonApiUrl: "https://" + name + ".example.com/json", AuthProvider: managementapi.Provider2,
		Image: "registry.example.com/participant:3.3.0",
	}
}

func TestRemoteParticipants(t *testing.T) {
	// The probes below dial loopback, which the outbound address policy
	// refuses unless configured.
	e := start(t, func(c *config.Config) { c.OutboundAllowedHosts = "127.0.0.1" })
	ctx := context.Background()

	// One participant whose admin port answers, one whose port is closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, openPort, _ := net.SplitHostPort(ln.Addr().String())
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, closedPort, _ := net.SplitHostPort(closed.Addr().String())
	closed.Close()

	// "_" is a LIKE wildcard: the filters below must take it literally.
	up := participant("up_1", "127.0.0.1", openPort)
	down := participant("down-1", "127.0.0.1", closedPort)
	down.Phase = ptr(managementapi.RUNNING)
	for _, p := range []managementapi.RemoteParticipantDto{up, down, participant("never-probed", "127.0.0.1", closedPort)} {
		r, err := e.Management.CreateRemoteParticipantWithResponse(ctx, p)
		if err != nil || r.StatusCode() != http.StatusCreated {
			t.Fatalf("create %s: got %d %v", p.Name, r.StatusCode(), err)
		}
		if p.Phase == nil && *r.JSON201.Phase != managementapi.PENDING {
			t.Fatalf("create %s: phase got %v, want PENDING by default", p.Name, *r.JSON201.Phase)
		}
		if r.JSON201.HealthStatus != nil {
			t.Fatalf("create %s: healthStatus before any check", p.Name)
		}
	}
	if r, _ := e.Management.CreateRemoteParticipantWithResponse(ctx, up); r.StatusCode() != http.StatusConflict {
		t.Fatalf("duplicate: got %d, want 409", r.StatusCode())
	}

	// Probe only the first two (the third is added after the probe below).
	if err := e.App.Store.DeleteRemoteParticipant(ctx, "never-probed"); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(time.Minute)
	if err := e.App.Management.ProbeParticipantsOnce(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if r, _ := e.Management.CreateRemoteParticipantWithResponse(ctx, participant("never-probed", "127.0.0.1", closedPort)); r.StatusCode() != http.StatusCreated {
		t.Fatal("re-create never-probed")
	}

	list := func(p managementapi.ListRemoteParticipantsParams) []string {
		t.Helper()
		r, err := e.Management.ListRemoteParticipantsWithResponse(ctx, &p)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("list: %v %s", err, r.Body)
		}
		var names []string
		for _, p := range r.JSON200.Participants {
			names = append(names, p.Name)
		}
		if r.JSON200.TotalCount != int64(len(names)) && p.Limit == nil {
			t.Fatalf("totalCount %d for %d items", r.JSON200.TotalCount, len(names))
		}
		return names
	}
	cases := []struct {
		name   string
		params managementapi.ListRemoteParticipantsParams
		want   []string
	}{
		{"all", managementapi.ListRemoteParticipantsParams{}, []string{"down-1", "never-probed", "up_1"}},
		{"healthy", managementapi.ListRemoteParticipantsParams{HealthStatus: ptr(true)}, []string{"up_1"}},
		{"unhealthy (never probed matches neither)", managementapi.ListRemoteParticipantsParams{HealthStatus: ptr(false)}, []string{"down-1"}},
		{"running", managementapi.ListRemoteParticipantsParams{Status: ptr(managementapi.RUNNING)}, []string{"down-1"}},
		{"literal %", managementapi.ListRemoteParticipantsParams{Name: ptr("1%")}, nil},
		{"literal _", managementapi.ListRemoteParticipantsParams{Name: ptr("_")}, []string{"up_1"}},
		{"case-sensitive", managementapi.ListRemoteParticipantsParams{Name: ptr("DOWN")}, nil},
		{"page", managementapi.ListRemoteParticipantsParams{From: ptr[int32](1), Limit: ptr[int32](1)}, []string{"never-probed"}},
	}
	for _, tc := range cases {
		if got := list(tc.params); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}

	// Get shows the health record; update replaces and keeps it; rename is 400.
	g, err := e.Management.GetRemoteParticipantWithResponse(ctx, "up_1")
	if err != nil || g.JSON200 == nil || g.JSON200.HealthStatus == nil || !*g.JSON200.HealthStatus || g.JSON200.LastHealthCheck == nil {
		t.Fatalf("get: got %d %s, want the registration with a healthy check", g.StatusCode(), g.Body)
	}
	changed := up
	changed.Image = "registry.example.com/participant:3.4.0"
	u, err := e.Management.UpdateRemoteParticipantWithResponse(ctx, "up_1", changed)
	if err != nil || u.StatusCode() != http.StatusOK || u.JSON200.Image != changed.Image || u.JSON200.HealthStatus == nil {
		t.Fatalf("update: got %d %s, want 200 with the new image and the health kept", u.StatusCode(), u.Body)
	}
	renamed := changed
	renamed.Name = "other"
	if u, _ := e.Management.UpdateRemoteParticipantWithResponse(ctx, "up_1", renamed); u.StatusCode() != http.StatusBadRequest || errorMap(t, u.Body)["name"] == "" {
		t.Fatalf("rename: got %d %s, want 400 keyed name", u.StatusCode(), u.Body)
	}
	if d, _ := e.Management.DeleteRemoteParticipantWithResponse(ctx, "up_1"); d.StatusCode() != http.StatusNoContent {
		t.Fatalf("delete: got %d, want 204", d.StatusCode())
	}
	if d, _ := e.Management.DeleteRemoteParticipantWithResponse(ctx, "up_1"); d.StatusCode() != http.StatusNotFound {
		t.Fatalf("delete again: got %d, want 404", d.StatusCode())
	}
	if g, _ := e.Management.GetRemoteParticipantWithResponse(ctx, "up_1"); g.StatusCode() != http.StatusNotFound {
		t.Fatalf("get after delete: got %d, want 404", g.StatusCode())
	}
}

// TestParticipantAddressPolicy: the outbound address policy decides what
// the health probe dials, not what is registered. With the default policy
// (nothing allowed besides the server's own), registrations at loopback
// addresses and at a name the policy does not list are stored (201); the
// probe dials none of them, and each reads as not probed: no healthStatus
// and no lastHealthCheck, an earlier result cleared, matched by neither
// healthStatus filter; the log and remote_participant_probes_total say
// why. The address's form is still checked (400).
func TestParticipantAddressPolicy(t *testing.T) {
	e := start(t, func(c *config.Config) { c.OutboundAllowedHosts = "" }) // the default
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.9:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	hosts := map[string]string{"rp-loopback": "127.0.0.9", "rp-localhost": "localhost", "rp-partner": "participant.partner.example.test"}
	for name, host := range hosts {
		r, err := e.Management.CreateRemoteParticipantWithResponse(ctx, participant(name, host, port))
		if err != nil || r.StatusCode() != http.StatusCreated || r.JSON201.AdminAddress != host {
			t.Fatalf("register at %s: got %d %s, want 201 with the address stored", host, r.StatusCode(), r.Body)
		}
	}
	for _, bad := range []string{"http://127.0.0.9", "127.0.0.9:" + port, "a b.test", "rp.test/x", "user@rp.test"} {
		r, err := e.Management.CreateRemoteParticipantWithResponse(ctx, participant("rp-bad", bad, port))
		if err != nil || r.StatusCode() != http.StatusBadRequest || !strings.Contains(errorMap(t, r.Body)["adminAddress"], "host name or an IP address") {
			t.Fatalf("register at %q: got %d %s, want 400 keyed adminAddress", bad, r.StatusCode(), r.Body)
		}
	}
	// A result recorded before the policy refused the address does not stand.
	if err := e.App.Store.RecordParticipantHealth(ctx, "rp-loopback", true, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := e.App.Management.ProbeParticipantsOnce(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the probe connected %d times to a refused address", n)
	}
	for name := range hosts {
		g, err := e.Management.GetRemoteParticipantWithResponse(ctx, name)
		if err != nil || g.JSON200 == nil || g.JSON200.HealthStatus != nil || g.JSON200.LastHealthCheck != nil {
			t.Errorf("%s: got %s, want neither healthStatus nor lastHealthCheck (not probed)", name, g.Body)
		}
		if !strings.Contains(e.Logs(), `"participant":"`+name+`"`) {
			t.Errorf("%s: the log does not say why it is not probed", name)
		}
	}
	for _, healthy := range []bool{true, false} {
		l, err := e.Management.ListRemoteParticipantsWithResponse(ctx, &managementapi.ListRemoteParticipantsParams{HealthStatus: &healthy})
		if err != nil || l.JSON200 == nil || l.JSON200.TotalCount != 0 {
			t.Errorf("healthStatus=%v: got %s, want none (not probed matches neither)", healthy, l.Body)
		}
	}
	if !strings.Contains(e.Logs(), "the outbound address policy refuses its admin address") {
		t.Errorf("the log does not name the policy")
	}
	if got := probeCount(t, e, "not_probed"); got != float64(len(hosts)) {
		t.Errorf("remote_participant_probes_total{outcome=\"not_probed\"}: got %v, want %d", got, len(hosts))
	}
}

// probeCount reads remote_participant_probes_total for an outcome.
func probeCount(t *testing.T, e *env, outcome string) float64 {
	t.Helper()
	families, err := e.App.Telemetry.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "validator_manager_remote_participant_probes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
