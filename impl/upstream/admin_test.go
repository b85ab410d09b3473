package upstream_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
		{"deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), 502, "did not answer in time"},
		{"unauthenticated", status.Error(codes.Unauthenticated, "bad token"), 502, "refused the server's credentials"},
		{"internal, message withheld", status.Error(codes.Internal, "stack trace with secrets"), 502, "failed (Internal)"},
		{"no status", context.DeadlineExceeded, 502, "did not answer in time"},
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
