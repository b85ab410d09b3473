package upstream_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	participantv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/admin/participant/v30"
	"github.com/validator-manager/validator-manager/impl/outbound"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// TestAdminFailed: each gRPC status of the admin API maps to one outcome of the release.
func TestAdminFailed(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		want     int
		contains string
	}{
		{"invalid argument", status.Error(codes.InvalidArgument, "INVALID_TOPOLOGY_TX_SIGNATURE_ERROR(8,ab): the signature does not verify"), 422, "does not verify"},
		{"failed precondition about a signature", status.Error(codes.FailedPrecondition, "UNAUTHORIZED_TOPOLOGY_TRANSACTION(9,ab): no signature by the party's key"), 422, "no signature"},
		{"serial mismatch", status.Error(codes.FailedPrecondition, "SERIAL_MISMATCH(9,ab): The given serial 2 does not match"), 409, "SERIAL_MISMATCH"},
		{"other failed precondition", status.Error(codes.FailedPrecondition, "NO_APPROPRIATE_SIGNING_KEY_IN_STORE(9,ab): none"), 502, "refused the request"},
		{"not found", status.Error(codes.NotFound, "TOPOLOGY_TRANSACTION_NOT_FOUND(11,ab): no proposal"), 404, "TOPOLOGY_TRANSACTION_NOT_FOUND"},
		{"unavailable", status.Error(codes.Unavailable, "connection refused"), 502, "could not be reached"},
		// The participant answered: its reason is shown (the sandbox's, when
		// its state cannot be saved; a real participant's, when it cannot
		// reach its synchronizer), not a failure to reach it.
		{"unavailable, answered by the participant", status.Error(codes.Unavailable, "UNAVAILABLE(1,ab): the sandbox state (/data/sandbox/state.json) could not be saved; the change was not made"), 502, "the change was not made"},
		{"deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), 502, "did not answer in time"},
		{"unauthenticated", status.Error(codes.Unauthenticated, "bad token"), 502, "refused the server's credentials"},
		{"internal, message withheld", status.Error(codes.Internal, "stack trace with secrets"), 502, "failed (Internal)"},
		{"no status", context.DeadlineExceeded, 502, "did not answer in time"},
		{"no status, cancelled", context.Canceled, 502, "cancelled"},
		{"no status, not reached", errors.New("dial tcp: no route to host"), 502, "could not be reached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := upstream.AdminCall{Address: "participant.test:5002", Method: "/pkg.Service/Rpc"}.Failed(tt.err)
			got, msg, endpoint := outcome(err)
			if got != tt.want || !contains(msg, tt.contains) {
				t.Fatalf("got %d %q, want %d containing %q", got, msg, tt.want, tt.contains)
			}
			if endpoint != "" && endpoint != "grpc://participant.test:5002/pkg.Service/Rpc" {
				t.Fatalf("endpoint: got %q", endpoint)
			}
			if tt.name == "internal, message withheld" && contains(msg, "secrets") {
				t.Fatal("the participant's internal message reached the client")
			}
			if !errors.Is(err, tt.err) {
				t.Fatal("the cause is not kept for the log")
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestAdminPolicy: the participant admin API is dialled only where the
// outbound address policy allows (checked before the client is made, and
// again when dialling); elsewhere nothing connects, no token is fetched or
// sent, and the call is 502 naming the policy.
func TestAdminPolicy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingListener{Listener: ln}
	participant := &statusServer{}
	srv := grpc.NewServer()
	participantv30.RegisterParticipantStatusServiceServer(srv, participant)
	go func() { _ = srv.Serve(counted) }()
	defer srv.Stop()

	var tokens atomic.Int32
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokens.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"tok-1","token_type":"Bearer","expires_in":3600}`))
	}))
	defer idp.Close()

	// The listeners are on loopback, which the policy refuses unless it is
	// listed as an IP or is the server's own.
	var own atomic.Bool
	tests := []struct {
		name   string
		policy *outbound.Policy
		token  string
		// disown makes the policy refuse the address after the client is
		// made, before the call dials.
		disown    bool
		wantError string
	}{
		{"admin address refused", &outbound.Policy{AnyHost: true}, "", false, "outbound address policy"},
		{"plaintext where https is required", &outbound.Policy{Hosts: []string{"127.0.0.1"}, RequireHTTPS: true, PlainHosts: []string{"*.test"}}, "", false, "https is required"},
		{"token endpoint refused", &outbound.Policy{Hosts: []string{"127.0.0.1"}}, "https://169.254.169.254/token", false, "outbound address policy"},
		{"refused when dialled", &outbound.Policy{Own: func(string) bool { return own.Load() }}, "", true, "outbound address policy"},
		{"allowed", &outbound.Policy{Hosts: []string{"127.0.0.1"}}, idp.URL, false, ""},
		{"allowed as the server's own", &outbound.Policy{Own: func(string) bool { return own.Load() }}, "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counted.accepts.Store(0)
			tokens.Store(0)
			participant.auth.Store("")
			own.Store(true)
			res := resolverFunc(func(_ context.Context, name string) (upstream.Target, error) {
				target := upstream.Target{Validator: name, AdminAddress: ln.Addr().String()}
				if tt.token != "" {
					target.Credentials = &upstream.Credentials{TokenURL: tt.token, ClientID: "c", ClientSecret: "secret"}
				}
				return target, nil
			})
			c := upstream.New(upstream.Options{Resolver: res, Timeout: 2 * time.Second, Transport: tt.policy.Transport()})
			defer c.Close()
			n, err := c.For(t.Context(), "v1")
			if err != nil {
				t.Fatal(err)
			}
			if tt.disown {
				own.Store(false)
			}
			a, err := n.Admin()
			if err == nil {
				_, err = a.Status.ParticipantStatus(t.Context(), &participantv30.ParticipantStatusRequest{})
			}
			if tt.wantError == "" {
				if err != nil {
					t.Fatalf("allowed call: %v", err)
				}
				if got := counted.accepts.Load(); got != 1 {
					t.Fatalf("connections: got %d, want 1", got)
				}
				if want := map[bool]string{true: "Bearer tok-1", false: ""}[tt.token != ""]; participant.auth.Load() != want {
					t.Fatalf("authorization: got %q, want %q", participant.auth.Load(), want)
				}
				return
			}
			if got := counted.accepts.Load(); got != 0 {
				t.Fatalf("connections to a refused address: got %d, want 0", got)
			}
			if got := tokens.Load(); got != 0 {
				t.Fatalf("token requests: got %d, want 0", got)
			}
			status, msg, _ := outcome(err)
			if status != http.StatusBadGateway || !strings.Contains(msg, tt.wantError) || !errors.Is(err, outbound.ErrRefused) {
				t.Fatalf("got %d %q (%v), want 502 naming the policy (%q)", status, msg, err, tt.wantError)
			}
		})
	}
}

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepts atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err == nil {
		l.accepts.Add(1)
	}
	return conn, err
}

// statusServer answers ParticipantStatus and keeps the authorization it was sent.
type statusServer struct {
	participantv30.UnimplementedParticipantStatusServiceServer
	auth atomic.Value
}

func (s *statusServer) ParticipantStatus(ctx context.Context, _ *participantv30.ParticipantStatusRequest) (*participantv30.ParticipantStatusResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.auth.Store(strings.Join(md.Get("authorization"), ","))
	return &participantv30.ParticipantStatusResponse{}, nil
}
