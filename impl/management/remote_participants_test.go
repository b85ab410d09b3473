package management_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/domain"
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

// TestParticipantAddressPolicy: on the embedded default the outbound
// address policy allows the server's own sandbox only: a remote participant
// at a loopback port (the profiling port, the server itself) is 400 at
// write time naming the policy, and one stored before the policy is not
// dialled by the health probe and reads unhealthy.
func TestParticipantAddressPolicy(t *testing.T) {
	e := start(t, func(c *config.Config) { c.OutboundAllowedHosts = "" }) // the default
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
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
	for _, host := range []string{"127.0.0.1", "localhost", "169.254.169.254", "rp.example.com"} {
		r, err := e.Management.CreateRemoteParticipantWithResponse(ctx, participant("rp-1", host, port))
		if err != nil || r.StatusCode() != http.StatusBadRequest || !strings.Contains(errorMap(t, r.Body)["adminAddress"], "outbound address policy") {
			t.Fatalf("register at %s: got %d %s, want 400 naming the policy", host, r.StatusCode(), r.Body)
		}
	}
	dto := participant("legacy", "127.0.0.1", port)
	spec, _ := json.Marshal(dto)
	if err := e.App.Store.CreateRemoteParticipant(ctx, &domain.RemoteParticipant{Name: "legacy", Spec: spec, Phase: domain.PhasePending,
		AdminAddress: "127.0.0.1", AdminPort: port, LedgerAddress: "127.0.0.1", LedgerPort: port}); err != nil {
		t.Fatal(err)
	}
	if err := e.App.Management.ProbeParticipantsOnce(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	g, err := e.Management.GetRemoteParticipantWithResponse(ctx, "legacy")
	if err != nil || g.JSON200 == nil || g.JSON200.HealthStatus == nil || *g.JSON200.HealthStatus {
		t.Fatalf("legacy: got %v %s, want healthStatus false", err, g.Body)
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("the probe connected %d times to a refused address", n)
	}
}
