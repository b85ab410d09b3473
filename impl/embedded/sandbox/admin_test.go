package sandbox_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/emptypb"

	protocolv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/protocol/v30"
	topologyadminv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/topology/admin/v30"
	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
)

// adminConn serves validator name's admin API in-process (bufconn) and
// returns a connection to it and a context carrying a valid token.
func adminConn(t *testing.T, n *sandbox.Network, name string) (*grpc.ClientConn, context.Context) {
	t.Helper()
	srv, err := n.NewAdminServer(name)
	if err != nil {
		t.Fatal(err)
	}
	lis := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	tgt, err := n.Target(name)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.PostForm(tgt.Credentials.TokenURL, url.Values{"grant_type": {"client_credentials"}, "client_id": {sandbox.ClientID}, "client_secret": {n.ClientSecret()}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil {
		t.Fatal(err)
	}
	return conn, metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+tok.AccessToken)
}

// TestAdminRules: the admin API's own checks, answered as gRPC statuses in
// Canton's message form.
func TestAdminRules(t *testing.T) {
	var tokens atomic.Int32
	n, _ := open(t, t.TempDir(), &tokens)
	conn, ctx := adminConn(t, n, "v1")
	read := topologyadminv30.NewTopologyManagerReadServiceClient(conn)
	write := topologyadminv30.NewTopologyManagerWriteServiceClient(conn)
	head := &topologyadminv30.BaseQuery{TimeQuery: &topologyadminv30.BaseQuery_HeadState{HeadState: &emptypb.Empty{}}}
	sync := func() *topologyadminv30.StoreId {
		r, err := read.ListSynchronizerTrustCertificate(ctx, &topologyadminv30.ListSynchronizerTrustCertificateRequest{BaseQuery: head})
		if err != nil || len(r.GetResults()) != 1 {
			t.Fatalf("trust certificates: %v %v", r, err)
		}
		return &topologyadminv30.StoreId{Store: &topologyadminv30.StoreId_Synchronizer{Synchronizer: &topologyadminv30.Synchronizer{Kind: &topologyadminv30.Synchronizer_Id{Id: r.GetResults()[0].GetItem().GetSynchronizerId()}}}}
	}()
	mapping := &protocolv30.TopologyMapping{Mapping: &protocolv30.TopologyMapping_PartyToParticipant{PartyToParticipant: &protocolv30.PartyToParticipant{
		Party: "nobody::1220" + strings.Repeat("ab", 32), Threshold: 1,
		Participants: []*protocolv30.PartyToParticipant_HostingParticipant{{ParticipantUid: "p::1220ab", Permission: protocolv30.Enums_PARTICIPANT_PERMISSION_CONFIRMATION}},
	}}}
	tests := []struct {
		name string
		call func() error
		code codes.Code
		want string
	}{
		{"no token", func() error {
			_, err := read.ListPartyToParticipant(t.Context(), &topologyadminv30.ListPartyToParticipantRequest{BaseQuery: head})
			return err
		}, codes.Unauthenticated, "UNAUTHENTICATED"},
		{"no time query", func() error {
			_, err := read.ListPartyToParticipant(ctx, &topologyadminv30.ListPartyToParticipantRequest{BaseQuery: &topologyadminv30.BaseQuery{}})
			return err
		}, codes.InvalidArgument, "FIELD_NOT_SET"},
		{"authorize an unknown hash", func() error {
			_, err := write.Authorize(ctx, &topologyadminv30.AuthorizeRequest{Type: &topologyadminv30.AuthorizeRequest_TransactionHash{TransactionHash: "1220" + strings.Repeat("00", 32)}, Store: sync})
			return err
		}, codes.NotFound, "TOPOLOGY_TRANSACTION_NOT_FOUND"},
		{"authorize without a store", func() error {
			_, err := write.Authorize(ctx, &topologyadminv30.AuthorizeRequest{Type: &topologyadminv30.AuthorizeRequest_TransactionHash{TransactionHash: "1220" + strings.Repeat("00", 32)}})
			return err
		}, codes.InvalidArgument, "store"},
		{"add a mapping of a party without a known key", func() error {
			g, err := write.GenerateTransactions(ctx, &topologyadminv30.GenerateTransactionsRequest{Proposals: []*topologyadminv30.GenerateTransactionsRequest_Proposal{{
				Operation: protocolv30.Enums_TOPOLOGY_CHANGE_OP_ADD_REPLACE, Mapping: mapping, Store: sync}}})
			if err != nil {
				return err
			}
			_, err = write.AddTransactions(ctx, &topologyadminv30.AddTransactionsRequest{Store: sync, Transactions: []*protocolv30.SignedTopologyTransaction{{
				Transaction: g.GetGeneratedTransactions()[0].GetSerializedTransaction(), Proposal: true}}})
			return err
		}, codes.NotFound, "UNKNOWN_PARTY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if st := status.Convert(err); st.Code() != tt.code || !strings.Contains(st.Message(), tt.want) {
				t.Fatalf("got %v, want %s containing %q", err, tt.code, tt.want)
			}
		})
	}

	// The operator's party is hosted with submission permission.
	r, err := read.ListPartyToParticipant(ctx, &topologyadminv30.ListPartyToParticipantRequest{BaseQuery: head, FilterParty: "v1-validator-1::"})
	if err != nil || len(r.GetResults()) != 1 || r.GetResults()[0].GetItem().GetParticipants()[0].GetPermission() != protocolv30.Enums_PARTICIPANT_PERMISSION_SUBMISSION ||
		len(r.GetResults()[0].GetContext().GetTransactionHash()) != 34 {
		t.Fatalf("operator party: got %v %v", r, err)
	}
}
