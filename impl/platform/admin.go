package platform

import (
	"context"
	"errors"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/emptypb"
	"k8s.io/utils/ptr"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	participantv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/admin/participant/v30"
	protocolv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/protocol/v30"
	topologyadminv30 "github.com/validator-manager/validator-manager/gen/upstream/adminapi/topology/admin/v30"
	"github.com/validator-manager/validator-manager/impl/domain"
	"github.com/validator-manager/validator-manager/impl/upstream"
)

// The operations on a validator's participant admin gRPC API share these:
// the API, the participant's identity and the topology reads.

// admin resolves validator's participant admin API.
func (s *Server) admin(ctx context.Context, operation, validator string) (*upstream.AdminAPI, error) {
	n, err := s.node(ctx, operation, validator)
	if err != nil {
		return nil, err
	}
	return n.Admin()
}

// participant is who a participant is on the synchronizer.
type participant struct {
	uid string
	// store is the topology store of the synchronizer it is connected to.
	store *topologyadminv30.StoreId
}

// identify asks the participant for its UID and its synchronizer; an
// uninitialized or unconnected participant is a 502.
func identify(ctx context.Context, a *upstream.AdminAPI) (participant, error) {
	st, err := a.Status.ParticipantStatus(ctx, &participantv30.ParticipantStatusRequest{})
	if err != nil {
		return participant{}, err
	}
	endpoint := upstream.AdminCall{Address: a.Address, Method: participantv30.ParticipantStatusService_ParticipantStatus_FullMethodName}.Endpoint()
	status := st.GetStatus()
	if status == nil || status.GetCommonStatus().GetUid() == "" {
		return participant{}, &domain.UpstreamError{Endpoint: endpoint, Message: "the participant is not initialized"}
	}
	syncs := status.GetConnectedSynchronizers()
	if len(syncs) == 0 {
		return participant{}, &domain.UpstreamError{Endpoint: endpoint, Message: "the participant is not connected to a synchronizer"}
	}
	return participant{
		uid: status.GetCommonStatus().GetUid(),
		store: &topologyadminv30.StoreId{Store: &topologyadminv30.StoreId_Synchronizer{Synchronizer: &topologyadminv30.Synchronizer{
			Kind: &topologyadminv30.Synchronizer_PhysicalId{PhysicalId: syncs[0].GetPhysicalSynchronizerId()},
		}}},
	}, nil
}

// identified is the validator's participant admin API and identity.
func (s *Server) identified(ctx context.Context, operation, validator string) (*upstream.AdminAPI, participant, error) {
	a, err := s.admin(ctx, operation, validator)
	if err != nil {
		return nil, participant{}, err
	}
	p, err := identify(ctx, a)
	return a, p, err
}

// headQuery asks for the head state of the synchronizer's store: its
// effective mappings, or its proposals.
func (p participant) headQuery(proposals bool) *topologyadminv30.BaseQuery {
	return &topologyadminv30.BaseQuery{
		Store: p.store, Proposals: proposals, Operation: protocolv30.Enums_TOPOLOGY_CHANGE_OP_ADD_REPLACE,
		TimeQuery: &topologyadminv30.BaseQuery_HeadState{HeadState: &emptypb.Empty{}},
	}
}

// partyToParticipant lists the synchronizer's mappings (or proposals)
// hosted on participantFilter (a part of a UID; "" for any) of the parties
// whose id starts with partyPrefix.
func (p participant) partyToParticipant(ctx context.Context, a *upstream.AdminAPI, proposals bool, partyPrefix, participantFilter string) ([]*topologyadminv30.ListPartyToParticipantResponse_Result, error) {
	r, err := a.TopologyRead.ListPartyToParticipant(ctx, &topologyadminv30.ListPartyToParticipantRequest{
		BaseQuery: p.headQuery(proposals), FilterParty: partyPrefix, FilterParticipant: participantFilter,
	})
	if err != nil {
		return nil, err
	}
	return r.GetResults(), nil
}

// namespace is the fingerprint part of a UID or party id (name::namespace).
func namespace(uid string) string {
	_, ns, _ := strings.Cut(uid, "::")
	return ns
}

var hostedPermissions = map[protocolv30.Enums_ParticipantPermission]platformapi.HostedPermission{
	protocolv30.Enums_PARTICIPANT_PERMISSION_SUBMISSION:   platformapi.HostedPermissionSubmitting,
	protocolv30.Enums_PARTICIPANT_PERMISSION_CONFIRMATION: platformapi.HostedPermissionConfirming,
	protocolv30.Enums_PARTICIPANT_PERMISSION_OBSERVATION:  platformapi.HostedPermissionObserving,
}

// partyHosts is a mapping's hosts as the contract shows them.
func partyHosts(m *protocolv30.PartyToParticipant) []platformapi.PartyHost {
	out := []platformapi.PartyHost{}
	for _, h := range m.GetParticipants() {
		ph := platformapi.PartyHost{ParticipantUid: h.GetParticipantUid(), Permission: hostedPermissions[h.GetPermission()]}
		if ph.Permission == "" {
			ph.Permission = platformapi.HostedPermissionObserving // an unknown permission grants no more than observing
		}
		if h.GetOnboarding() != nil {
			ph.Onboarding = ptr.To(true)
		}
		out = append(out, ph)
	}
	return out
}

// external tells whether a mapping is an externally signed party's: it
// carries the party's signing keys, or the party's namespace is none of
// its hosts' (a participant's local parties live in its own namespace).
func external(m *protocolv30.PartyToParticipant) bool {
	if len(m.GetPartySigningKeys().GetKeys()) > 0 {
		return true
	}
	ns := namespace(m.GetParty())
	return !slices.ContainsFunc(m.GetParticipants(), func(h *protocolv30.PartyToParticipant_HostingParticipant) bool {
		return namespace(h.GetParticipantUid()) == ns
	})
}

// owing are the hosts a proposal m adds to its party's current mapping
// (none yet: every host) whose participant has not signed it: Canton
// requires each added host's consent, and a participant signs with its
// namespace key, whose fingerprint is its UID's namespace.
func owing(ctx context.Context, a *upstream.AdminAPI, p participant, m *protocolv30.PartyToParticipant, signedBy []string) ([]platformapi.HostingParticipant, error) {
	current, err := currentMapping(ctx, a, p, m.GetParty())
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		return nil, err
	}
	out := []platformapi.HostingParticipant{}
	for _, h := range m.GetParticipants() {
		if slices.Contains(signedBy, namespace(h.GetParticipantUid())) || hosts(current.GetItem(), h.GetParticipantUid()) {
			continue
		}
		perm := platformapi.HostingPermissionConfirming
		if h.GetPermission() == protocolv30.Enums_PARTICIPANT_PERMISSION_OBSERVATION {
			perm = platformapi.HostingPermissionObserving
		}
		out = append(out, platformapi.HostingParticipant{ParticipantUid: h.GetParticipantUid(), Permission: perm})
	}
	return out, nil
}
