package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/embedded/nodesim"
	"github.com/validator-manager/validator-manager/openapi"
)

// apiResponse is what every generated ...WithResponse result offers.
type apiResponse interface {
	StatusCode() int
	GetBody() []byte
	ContentType() string
}

// apiCall sends one request through a generated client of s.
type apiCall func(ctx context.Context, s *apitest.Server) (apiResponse, error)

// operationCase is one operation of a contract called with valid inputs.
type operationCase struct {
	release string // "1.11" or "2.0"
	id      string // operationId as written in the contract
	variant string // names a further row of the same operation
	call    apiCall
	status  int
	// check asserts the body; nil means the release's 501 error naming id.
	check func(t *testing.T, r apiResponse)
}

const (
	release111 = "1.11"
	release20  = "2.0"
	validator  = "validator-1"
	absent     = "never-created"
)

// TestEveryOperation calls every operation of both contracts with valid
// inputs, so that each request passes validation and reaches its handler.
func TestEveryOperation(t *testing.T) {
	t.Parallel()
	cases := operationCases()
	t.Run("table covers both contracts", func(t *testing.T) {
		assertCoversContracts(t, cases)
	})

	s := apitest.Start(t, apitest.Options{})
	for _, c := range cases {
		name := c.release + "/" + c.id
		if c.variant != "" {
			name += "/" + c.variant
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, err := c.call(t.Context(), s)
			if err != nil {
				t.Fatalf("%s: %v", c.id, err)
			}
			if got := r.StatusCode(); got != c.status {
				t.Fatalf("status: got %d, want %d; body: %s", got, c.status, r.GetBody())
			}
			if c.check != nil {
				c.check(t, r)
				return
			}
			assertNotBuilt(t, c.release, c.id, r)
		})
	}
}

func operationCases() []operationCase {
	m := func(id string, status int, call apiCall, check func(*testing.T, apiResponse)) operationCase {
		return operationCase{release: release111, id: id, call: call, status: status, check: check}
	}
	b := func(id string, status int, call apiCall, check func(*testing.T, apiResponse)) operationCase {
		return operationCase{release: release20, id: id, call: call, status: status, check: check}
	}
	// Built proxy operations, called on a validator that does not exist (the
	// rows run in parallel with the one that creates validator-1); their
	// behaviour is tested in impl/platform against the sandbox network.
	built404 := func(id string, call apiCall) operationCase {
		return operationCase{release: release20, id: id, call: call, status: http.StatusNotFound, check: platformNotFound}
	}
	prune := managementapi.ScheduledValidatorPruneDto{Cron: "0 0 20 * * ?", MaxDuration: "5m", Retention: "48h"}
	backup := managementapi.ValidatorBackupDto{Cron: ptr("@daily"), MaxBackups: 7}
	host := platformapi.HostingParticipant{ParticipantUid: "participant2::1220abcd", Permission: platformapi.HostingPermissionConfirming}

	return []operationCase{
		// ------------------------------------------------ release 1.11
		// Built: each row gets its real answer. Rows run in parallel, so the
		// only validator created is validator-1 and every by-name row names
		// objects that never exist (404). impl/management tests the behaviour.
		m("listValidators", http.StatusOK, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{
				From: ptr[int32](0), Limit: ptr[int32](500), Status: ptr(managementapi.RUNNING), Name: ptr("val_%"),
			})
		}, hasJSON),
		m("createValidator", http.StatusCreated, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.CreateValidatorWithResponse(ctx, validValidator())
		}, hasJSON),
		m("updateValidator", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.UpdateValidatorWithResponse(ctx, managementapi.ValidatorEditDto{
				Name:            absent,
				ImageTag:        ptr("0.4.2"),
				DatabaseStorage: ptr("20Gi"),
				ClusterConfig:   &managementapi.ClusterConfigEditDto{Migration: managementapi.MigrationDto{Id: 2, Migrating: ptr(true)}},
			})
		}, notFound),
		{release: release111, id: "updateValidator", variant: "null sections", status: http.StatusNotFound, check: notFound,
			call: func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				// Absent or null sections are left unchanged: null is valid.
				return s.Management.UpdateValidatorWithBodyWithResponse(ctx, "application/json", strings.NewReader(
					`{"name":"`+absent+`","imageRepo":null,"databaseStorage":null,"participant":null,`+
						`"clusterConfig":{"migration":{"id":3},"topUp":null,"walletSweeps":null,"appInfoValidator":{"envVars":null}}}`))
			}},
		m("getPruneSchedule", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.GetPruneScheduleWithResponse(ctx, absent)
		}, notFound),
		m("createPruneSchedule", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.CreatePruneScheduleWithResponse(ctx, absent, prune)
		}, notFound),
		m("updatePruneSchedule", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.UpdatePruneScheduleWithResponse(ctx, absent, prune)
		}, notFound),
		m("deletePruneSchedule", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.DeletePruneScheduleWithResponse(ctx, absent)
		}, notFound),
		m("createBackupSchedule", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.CreateBackupScheduleWithResponse(ctx, absent, backup)
		}, notFound),
		m("getBackupSchedule", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.GetBackupScheduleWithResponse(ctx, absent)
		}, notFound),
		m("updateBackupSchedule", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.UpdateBackupScheduleWithResponse(ctx, absent, managementapi.ValidatorBackupDto{Cron: ptr("0 3 * * 1"), MaxBackups: 84})
		}, notFound),
		m("deleteBackupSchedule", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.DeleteBackupScheduleWithResponse(ctx, absent)
		}, notFound),
		m("listRemoteParticipants", http.StatusOK, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.ListRemoteParticipantsWithResponse(ctx, &managementapi.ListRemoteParticipantsParams{
				HealthStatus: ptr(true), From: ptr[int32](20), Limit: ptr[int32](1), Status: ptr(managementapi.PENDING), Name: ptr("remote"),
			})
		}, hasJSON),
		m("createRemoteParticipant", http.StatusCreated, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.CreateRemoteParticipantWithResponse(ctx, remoteParticipant("remote-1"))
		}, hasJSON),
		m("getRemoteParticipant", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.GetRemoteParticipantWithResponse(ctx, absent)
		}, notFound),
		m("updateRemoteParticipant", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.UpdateRemoteParticipantWithResponse(ctx, absent, remoteParticipant(absent))
		}, notFound),
		m("deleteRemoteParticipant", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.DeleteRemoteParticipantWithResponse(ctx, absent)
		}, notFound),
		m("listValidatorRuns", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.ListValidatorRunsWithResponse(ctx, absent, &managementapi.ListValidatorRunsParams{
				Kind: ptr(managementapi.RunKindBackup), From: ptr[int32](0), Limit: ptr[int32](5),
			})
		}, notFound),
		m("listAuditEntries", http.StatusOK, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Management.ListAuditEntriesWithResponse(ctx, &managementapi.ListAuditEntriesParams{
				Validator: ptr(absent), Subject: ptr("nobody"), From: ptr[int32](0), Limit: ptr[int32](5),
			})
		}, hasJSON),

		// ------------------------------------------------ release 2.0, /api/v1
		// Built: resource reads from the cluster cache (impl/platform tests
		// the behaviour). Rows run in parallel with createValidator, so the
		// by-name rows name a validator that never exists.
		b("listValidators", http.StatusOK, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.ListValidatorsWithResponse(ctx, nil)
		}, hasJSON),
		b("getValidator", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.GetValidatorWithResponse(ctx, absent)
		}, platformNotFound),
		b("getValidatorStatus", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.GetValidatorStatusWithResponse(ctx, absent)
		}, platformNotFound),
		built404("getValidatorDetails", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.GetValidatorDetailsWithResponse(ctx, absent)
		}),
		built404("getValidatorBalances", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.GetValidatorBalancesWithResponse(ctx, absent)
		}),
		built404("getValidatorTrafficStatus", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.GetValidatorTrafficStatusWithResponse(ctx, absent)
		}),
		built404("getParticipantStatus", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.GetParticipantStatusWithResponse(ctx, absent)
		}),
		built404("getValidatorKeys", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.GetValidatorKeysWithResponse(ctx, absent)
		}),
		built404("getIdentityDump", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.GetIdentityDumpWithResponse(ctx, absent)
		}),
		// The embedded cluster starts with one Application, sample-app.
		b("listApplications", http.StatusOK, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.ListApplicationsWithResponse(ctx, nil)
		}, hasJSON),
		b("listApplicationMetrics", http.StatusOK, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.ListApplicationMetricsWithResponse(ctx)
		}, hasJSON),
		b("getApplication", http.StatusOK, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.GetApplicationWithResponse(ctx, nodesim.SampleApplication)
		}, hasJSON),
		{release: release20, id: "getApplication", variant: "absent", status: http.StatusNotFound, check: platformNotFound,
			call: func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Platform.GetApplicationWithResponse(ctx, absent)
			}},
		b("getApplicationStatus", http.StatusOK, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.GetApplicationStatusWithResponse(ctx, nodesim.SampleApplication)
		}, hasJSON),
		b("getApplicationMetrics", http.StatusNotFound, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.GetApplicationMetricsWithResponse(ctx, absent)
		}, platformNotFound),
		built404("listParties", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.ListPartiesWithResponse(ctx, absent, &platformapi.ListPartiesParams{PartyId: ptr("alice::1220")})
		}),
		built404("allocateParty", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.AllocatePartyWithResponse(ctx, absent, &platformapi.AllocatePartyParams{PartyIdHint: "alice"})
		}),
		built404("listLocalParties", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.ListLocalPartiesWithResponse(ctx, absent)
		}),
		built404("listExternalParties", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.ListExternalPartiesWithResponse(ctx, absent)
		}),
		built404("listTopologyProposals", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.ListTopologyProposalsWithResponse(ctx, absent)
		}),
		built404("lookupParticipant", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.LookupParticipantWithResponse(ctx, absent, &platformapi.LookupParticipantParams{ParticipantUid: "participant2::1220"})
		}),
		built404("generateExternalPartyTopology", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.GenerateExternalPartyTopologyWithResponse(ctx, absent, platformapi.GenerateTopologyRequest{
				PartyHint: "alice", PublicKeyBase64: []byte("public key DER"), KeySpec: ptr(platformapi.KeySpecEd25519),
				Hosts: &[]platformapi.HostingParticipant{host}, ConfirmationThreshold: ptr[int32](2),
			})
		}),
		built404("allocateExternalParty", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.AllocateExternalPartyWithResponse(ctx, absent, platformapi.AllocateExternalPartyRequest{
				SynchronizerId: "global-domain::1220ab", TopologyTransactions: [][]byte{[]byte("tx-1"), []byte("tx-2")},
				Signature: []byte("signature"), PublicKeyFingerprint: "1220fingerprint",
				SignatureFormat: ptr(platformapi.SignatureFormatConcat), SigningAlgorithmSpec: ptr(platformapi.SigningAlgorithmEd25519),
			})
		}),
		built404("approvePendingHosting", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.ApprovePendingHostingWithResponse(ctx, absent, platformapi.ApprovePendingHostingRequest{PartyId: "alice::1220ab"})
		}),
		built404("prepareAmendHosting", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.PrepareAmendHostingWithResponse(ctx, absent, platformapi.PrepareAmendHostingRequest{
				PartyId: "alice::1220ab", Hosts: []platformapi.HostingParticipant{host}, ConfirmationThreshold: ptr[int32](1),
			})
		}),
		built404("submitAmendHosting", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.SubmitAmendHostingWithResponse(ctx, absent, platformapi.SubmitAmendHostingRequest{
				PartyId: "alice::1220ab", Transaction: []byte("tx"), Signature: []byte("signature"), PublicKeyFingerprint: "1220fingerprint",
			})
		}),
		built404("createUser", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.CreateUserWithResponse(ctx, absent, &platformapi.CreateUserParams{
				UserId: "alice", PrimaryParty: ptr("alice::1220ab"), ParticipantAdmin: ptr(false),
				CanActAs: &[]string{"alice::1220ab", "bob::1220cd"}, CanReadAs: &[]string{"carol::1220ef"},
			})
		}),
		built404("updateUser", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.UpdateUserWithResponse(ctx, absent, "alice", &platformapi.UpdateUserParams{
				IsDeactivated: ptr(false), Annotation: &[]string{"team=payments", "retired="},
			})
		}),
		built404("listUserRights", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.ListUserRightsWithResponse(ctx, absent, "alice")
		}),
		built404("updateUserRights", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.UpdateUserRightsWithResponse(ctx, absent, "alice", &platformapi.UpdateUserRightsParams{
				CanReadAsAnyParty: ptr(true), CanExecuteAs: &[]string{"alice::1220ab"},
			})
		}),
		built404("listWalletUsers", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.ListWalletUsersWithResponse(ctx, absent)
		}),
		built404("onboardWalletUser", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.OnboardWalletUserWithResponse(ctx, absent, platformapi.OnboardWalletUserRequest{Name: "alice"})
		}),
		built404("offboardWalletUser", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.OffboardWalletUserWithResponse(ctx, absent, "alice")
		}),
		built404("listGatewayWallets", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.ListGatewayWalletsWithResponse(ctx, absent)
		}),
		built404("createGatewayWallet", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.CreateGatewayWalletWithResponse(ctx, absent, platformapi.CreateGatewayWalletRequest{
				PartyHint: "treasury", SigningProvider: platformapi.SigningProviderCustodyProviderA, Primary: ptr(true), Vault: ptr("vault-1"),
			})
		}),
		built404("getCustodyProviderSettings", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.GetCustodyProviderSettingsWithResponse(ctx, absent)
		}),
		built404("updateCustodyProviderSettings", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.UpdateCustodyProviderSettingsWithResponse(ctx, absent, platformapi.UpdateCustodyProviderSettingsRequest{
				Enabled: ptr(true), BaseUrl: ptr("https://custody.example.com/api"),
				Credentials: &platformapi.CustodyProviderCredentials{ApiKey: ptr("key"), ApiSecret: ptr("secret")},
			})
		}),
		b("listAuditEntries", http.StatusOK, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.ListAuditEntriesWithResponse(ctx, &platformapi.ListAuditEntriesParams{Validator: ptr(absent), Limit: ptr[int32](5)})
		}, hasJSON),
		built404("uploadDar", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			contentType, body, err := darUpload("model.dar", []byte("PK\x03\x04 not really a DAR"))
			if err != nil {
				return nil, err
			}
			return s.Platform.UploadDarWithBodyWithResponse(ctx, absent, contentType, body)
		}),

		// ------------------------------------------------ release 2.0, public paths at the root
		{release: release20, id: "getHealth", status: http.StatusOK, check: checkHealth,
			call: func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Public.GetHealthWithResponse(ctx)
			}},
		{release: release20, id: "getInfo", status: http.StatusOK, check: checkInfo,
			call: func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Public.GetInfoWithResponse(ctx)
			}},
		b("getPrometheus", http.StatusOK, func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			return s.Platform.GetPrometheusWithResponse(ctx)
		}, func(t *testing.T, r apiResponse) {
			if !strings.HasPrefix(r.ContentType(), "text/plain") || !strings.Contains(string(r.GetBody()), "validator_manager_http_requests_total") {
				t.Fatalf("got %q %.300s, want the Prometheus text format", r.ContentType(), r.GetBody())
			}
		}),
		{release: release20, id: "getApiDocs", status: http.StatusOK, check: checkApiDocs,
			call: func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Public.GetApiDocsWithResponse(ctx)
			}},
		{release: release20, id: "getManagementApiDocs", status: http.StatusOK, check: checkManagementApiDocs,
			call: func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Public.GetManagementApiDocsWithResponse(ctx)
			}},
		{release: release20, id: "getDocsUi", status: http.StatusOK, check: checkDocsUi,
			call: func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Public.GetDocsUiWithResponse(ctx)
			}},
		built404("openLedgerConsole", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
			// The console is at /api/ws, outside /api/v1; the same root client
			// reaches it, here with the token and the headers a WebSocket
			// client sends.
			return s.Public.OpenLedgerConsoleWithResponse(ctx,
				&platformapi.OpenLedgerConsoleParams{Validator: absent, Upgrade: "websocket"},
				withHeader("Authorization", "Bearer "+s.Token),
				withHeader("Connection", "Upgrade"),
				withHeader("Sec-WebSocket-Version", "13"),
				withHeader("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
			)
		}),
		// The streams themselves: TestWatchValidators; here (no watch cache
		// runs) each reaches its handler, which says what it waits for.
		{release: release111, id: "watchValidators", status: http.StatusServiceUnavailable, check: watchNotSynced,
			call: func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.WatchValidatorsWithResponse(ctx, &managementapi.WatchValidatorsParams{})
			}},
		{release: release20, id: "watchValidators", status: http.StatusServiceUnavailable, check: watchNotSynced,
			call: func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Platform.WatchValidatorsWithResponse(ctx, &platformapi.WatchValidatorsParams{})
			}},
		{release: release20, id: "openLedgerConsole", variant: "bearer subprotocol", status: http.StatusNotFound, check: platformNotFound,
			call: func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				// Browsers cannot set Authorization on a WebSocket; the contract
				// accepts the token as the subprotocol "bearer, <token>" instead.
				return s.Public.OpenLedgerConsoleWithResponse(ctx,
					&platformapi.OpenLedgerConsoleParams{Validator: absent, Upgrade: "websocket", SecWebSocketProtocol: ptr("bearer, " + s.Token)},
					withHeader("Connection", "Upgrade"),
					withHeader("Sec-WebSocket-Version", "13"),
					withHeader("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
				)
			}},
	}
}

func watchNotSynced(t *testing.T, r apiResponse) {
	t.Helper()
	if msg := errorText(t, r.GetBody()); !strings.Contains(msg, "cache has not synced") {
		t.Fatalf("got %q, want the watch cache named", msg)
	}
}

// TestBadInputs sends requests that break the contract: each is refused with
// 400 in the release's shape, naming the offending input.
func TestBadInputs(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})

	t.Run(release111, func(t *testing.T) {
		// 1.11: the body's keys are the offending fields; the value a message.
		tooLong := validValidator()
		tooLong.Name = strings.Repeat("v", 34)
		nested := validValidator()
		nested.ClusterConfig.Migration.Id = -1
		name48 := strings.Repeat("v", 48)

		cases := []struct {
			name   string
			call   apiCall
			fields map[string]string // key -> substring of its message
		}{
			{"listValidators limit=0", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{Limit: ptr[int32](0)})
			}, map[string]string{"limit": "at least 1"}},
			{"listValidators limit=501", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{Limit: ptr[int32](501)})
			}, map[string]string{"limit": "at most 500"}},
			{"listValidators from=-1", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{From: ptr[int32](-1)})
			}, map[string]string{"from": "at least 0"}},
			{"listValidators status=BOGUS", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{Status: ptr(managementapi.Phase("BOGUS"))})
			}, map[string]string{"status": "one of"}},
			{"listValidators limit=ten", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.ListValidatorsWithResponse(ctx, nil, withQuery("limit", "ten"))
			}, map[string]string{"limit": "invalid integer"}},
			{"createValidator {}", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.CreateValidatorWithBodyWithResponse(ctx, "application/json", strings.NewReader(`{}`))
			}, map[string]string{
				"name": "is required", "imageRepo": "is required", "imageTag": "is required",
				"clusterConfig": "is required", "clusterParticipantConfig": "is required", "participant": "is required",
			}},
			{"createValidator name of 34 characters", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.CreateValidatorWithResponse(ctx, tooLong)
			}, map[string]string{"name": "33"}},
			{"createValidator clusterConfig.migration.id=-1", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.CreateValidatorWithResponse(ctx, nested)
			}, map[string]string{"clusterConfig.migration.id": "at least 0"}},
			{"updateValidator clusterConfig.migration.id=-1", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.UpdateValidatorWithResponse(ctx, managementapi.ValidatorEditDto{
					Name: validator, ClusterConfig: &managementapi.ClusterConfigEditDto{Migration: managementapi.MigrationDto{Id: -1}},
				})
			}, map[string]string{"clusterConfig.migration.id": "at least 0"}},
			{"createValidator malformed JSON", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.CreateValidatorWithBodyWithResponse(ctx, "application/json", strings.NewReader(`{"name": "validator-1",`))
			}, map[string]string{"body": "not a valid"}},
			{"createValidator without body", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.CreateValidatorWithBodyWithResponse(ctx, "application/json", nil)
			}, map[string]string{"body": "is required"}},
			{"createValidator as text/plain", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.CreateValidatorWithBodyWithResponse(ctx, "text/plain", strings.NewReader("validator-1"))
			}, map[string]string{"body": "Content-Type"}},
			{"getBackupSchedule name of 48 characters", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.GetBackupScheduleWithResponse(ctx, name48)
			}, map[string]string{"name": "47"}},
			{"deleteBackupSchedule name of 48 characters", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.DeleteBackupScheduleWithResponse(ctx, name48)
			}, map[string]string{"name": "47"}},
			{"createBackupSchedule name with uppercase", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.CreateBackupScheduleWithResponse(ctx, "Validator-1", managementapi.ValidatorBackupDto{MaxBackups: 7})
			}, map[string]string{"name": "regular expression"}},
			{"updateBackupSchedule name with uppercase", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.UpdateBackupScheduleWithResponse(ctx, "VALIDATOR", managementapi.ValidatorBackupDto{MaxBackups: 7})
			}, map[string]string{"name": "regular expression"}},
			{"createBackupSchedule maxBackups=1", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.CreateBackupScheduleWithResponse(ctx, validator, managementapi.ValidatorBackupDto{MaxBackups: 1})
			}, map[string]string{"maxBackups": "at least 2"}},
			{"createBackupSchedule maxBackups=85", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.CreateBackupScheduleWithResponse(ctx, validator, managementapi.ValidatorBackupDto{MaxBackups: 85})
			}, map[string]string{"maxBackups": "at most 84"}},
			{"createPruneSchedule retention=2 days", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.CreatePruneScheduleWithResponse(ctx, validator, managementapi.ScheduledValidatorPruneDto{
					Cron: "0 0 20 * * ?", MaxDuration: "5m", Retention: "2 days",
				})
			}, map[string]string{"retention": "regular expression"}},
			{"listRemoteParticipants healthStatus=maybe", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Management.ListRemoteParticipantsWithResponse(ctx, nil, withQuery("healthStatus", "maybe"))
			}, map[string]string{"healthStatus": "invalid boolean"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				r, err := c.call(t.Context(), s)
				if err != nil {
					t.Fatal(err)
				}
				if got := r.StatusCode(); got != http.StatusBadRequest {
					t.Fatalf("status: got %d, want 400; body: %s", got, r.GetBody())
				}
				body := managementError(t, r)
				if got, want := sortedKeys(body), sortedKeys(c.fields); !slices.Equal(got, want) {
					t.Errorf("keys: got %v, want %v; body: %v", got, want, body)
				}
				for key, want := range c.fields {
					if got, ok := body[key]; ok && !strings.Contains(got, want) {
						t.Errorf("%s: got %q, want a message containing %q", key, got, want)
					}
				}
			})
		}
	})

	t.Run(release20, func(t *testing.T) {
		// 2.0: one {timestamp, status, error}; error names the offending inputs.
		cases := []struct {
			name string
			call apiCall
			want []string // substrings of error
		}{
			{"allocateParty without partyIdHint", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Platform.AllocatePartyWithResponse(ctx, validator, &platformapi.AllocatePartyParams{PartyIdHint: "alice"}, withoutQuery("partyIdHint"))
			}, []string{"partyIdHint: is required"}},
			{"lookupParticipant without participantUid", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Platform.LookupParticipantWithResponse(ctx, validator, &platformapi.LookupParticipantParams{ParticipantUid: "p"}, withoutQuery("participantUid"))
			}, []string{"participantUid: is required"}},
			{"createUser without userId", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Platform.CreateUserWithResponse(ctx, validator, &platformapi.CreateUserParams{UserId: "alice"}, withoutQuery("userId"))
			}, []string{"userId: is required"}},
			{"updateUser annotation without =", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Platform.UpdateUserWithResponse(ctx, validator, "alice", &platformapi.UpdateUserParams{Annotation: &[]string{"team"}})
			}, []string{"annotation"}},
			{"getValidator name of 254 characters", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Platform.GetValidatorWithResponse(ctx, strings.Repeat("v", 254))
			}, []string{"name: ", "253"}},
			{"generateExternalPartyTopology {}", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Platform.GenerateExternalPartyTopologyWithBodyWithResponse(ctx, validator, "application/json", strings.NewReader(`{}`))
			}, []string{"partyHint: is required", "publicKeyBase64: is required"}},
			{"prepareAmendHosting host without ::", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Platform.PrepareAmendHostingWithResponse(ctx, validator, platformapi.PrepareAmendHostingRequest{
					PartyId: "alice::1220ab", Hosts: []platformapi.HostingParticipant{{ParticipantUid: "participant2", Permission: platformapi.HostingPermissionObserving}},
				})
			}, []string{"hosts.0.participantUid: "}},
			{"onboardWalletUser empty name", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Platform.OnboardWalletUserWithBodyWithResponse(ctx, validator, "application/json", strings.NewReader(`{"name":""}`))
			}, []string{"name: "}},
			{"onboardWalletUser malformed JSON", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Platform.OnboardWalletUserWithBodyWithResponse(ctx, validator, "application/json", strings.NewReader(`{"name":`))
			}, []string{"body: "}},
			{"uploadDar as application/json", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Platform.UploadDarWithBodyWithResponse(ctx, validator, "application/json", strings.NewReader(`{"file":"abc"}`))
			}, []string{"body: ", "Content-Type"}},
			{"onboardWalletUser as text/plain", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Platform.OnboardWalletUserWithBodyWithResponse(ctx, validator, "text/plain", strings.NewReader(`alice`))
			}, []string{"body: ", "Content-Type"}},
			{"updateCustodyProviderSettings baseUrl not a URI", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Platform.UpdateCustodyProviderSettingsWithBodyWithResponse(ctx, validator, "application/json", strings.NewReader(`{"baseUrl":"not a uri"}`))
			}, []string{"baseUrl: ", "absolute URI"}},
			{"openLedgerConsole without Upgrade", func(ctx context.Context, s *apitest.Server) (apiResponse, error) {
				return s.Public.OpenLedgerConsoleWithResponse(ctx, &platformapi.OpenLedgerConsoleParams{Validator: validator},
					withHeader("Authorization", "Bearer "+s.Token), withoutHeader("Upgrade"))
			}, []string{"Upgrade: is required"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				r, err := c.call(t.Context(), s)
				if err != nil {
					t.Fatal(err)
				}
				if got := r.StatusCode(); got != http.StatusBadRequest {
					t.Fatalf("status: got %d, want 400; body: %s", got, r.GetBody())
				}
				e := platformErrorBody(t, r)
				if e.Status != http.StatusBadRequest {
					t.Errorf("status field: got %d, want 400", e.Status)
				}
				for _, want := range c.want {
					if !strings.Contains(e.Error, want) {
						t.Errorf("error: got %q, want it to contain %q", e.Error, want)
					}
				}
			})
		}
	})
}

// ---------------------------------------------------------------- helpers

func checkHealth(t *testing.T, r apiResponse) {
	t.Helper()
	h := r.(*platformapi.GetHealthResponse).JSON200
	if h == nil {
		t.Fatalf("body: got %s, want a Health document", r.GetBody())
	}
	for name, got := range map[string]platformapi.HealthStatus{
		"status":                    h.Status,
		"components.db.status":      h.Components.Db.Status,
		"components.cluster.status": h.Components.Cluster.Status,
	} {
		if got != platformapi.HealthUp {
			t.Errorf("%s: got %q, want %q", name, got, platformapi.HealthUp)
		}
	}
}

func checkInfo(t *testing.T, r apiResponse) {
	t.Helper()
	info := r.(*platformapi.GetInfoResponse).JSON200
	if info == nil {
		t.Fatalf("body: got %s, want an Info document", r.GetBody())
	}
	if got, want := info.Build.Version, "test"; got != want {
		t.Errorf("build.version: got %q, want %q", got, want)
	}
}

func checkApiDocs(t *testing.T, r apiResponse) {
	t.Helper()
	if r.(*platformapi.GetApiDocsResponse).JSON200 == nil {
		t.Fatalf("body: got %s, want an OpenAPI document", r.GetBody())
	}
	assertPublishedDoc(t, r.GetBody(), publishedInfo{"Platform Management API (release 2.0)", "2.0", "2.0"}, openapi.Platform)
}

func checkManagementApiDocs(t *testing.T, r apiResponse) {
	t.Helper()
	if r.(*platformapi.GetManagementApiDocsResponse).JSON200 == nil {
		t.Fatalf("body: got %s, want an OpenAPI document", r.GetBody())
	}
	// Release 1.11 says its description carries the version string 1.0.0-local.
	assertPublishedDoc(t, r.GetBody(), publishedInfo{"Validator Management API (release 1.11)", "1.0.0-local", "1.11"}, openapi.Management)
}

func checkDocsUi(t *testing.T, r apiResponse) {
	t.Helper()
	if mt, _, _ := mime.ParseMediaType(r.ContentType()); mt != "text/html" {
		t.Errorf("Content-Type: got %q, want text/html", r.ContentType())
	}
	if !bytes.Contains(r.GetBody(), []byte("swagger-ui")) {
		t.Errorf("body: got %.200q…, want a page containing %q", r.GetBody(), "swagger-ui")
	}
}

// publishedInfo is what a served description's info says.
type publishedInfo struct {
	Title   string `json:"title"`
	Version string `json:"version"`
	Release string `json:"x-release"`
}

// assertPublishedDoc checks that a served description is the contract as
// written: its title, version and release, and every operationId in its
// original spelling (the copies embedded in gen/ are capitalised).
func assertPublishedDoc(t *testing.T, raw []byte, info publishedInfo, load func() (*openapi3.T, error)) {
	t.Helper()
	var served struct {
		Info  publishedInfo                         `json:"info"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &served); err != nil {
		t.Fatal(err)
	}
	if served.Info != info {
		t.Errorf("info: got %+v, want %+v", served.Info, info)
	}
	var got []string
	for _, item := range served.Paths {
		for _, value := range item {
			var op struct{ OperationID string }
			if json.Unmarshal(value, &op) == nil && op.OperationID != "" {
				got = append(got, op.OperationID)
			}
		}
	}
	slices.Sort(got)
	contract, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if want := operationIDs(contract); !slices.Equal(got, want) {
		t.Errorf("operationIds: got %v, want %v", got, want)
	}
}

// assertCoversContracts fails when the table misses an operation of either
// contract or names one that does not exist, so that a new operation cannot
// go untested.
func assertCoversContracts(t *testing.T, cases []operationCase) {
	t.Helper()
	for _, rel := range []struct {
		name string
		load func() (*openapi3.T, error)
	}{{release111, openapi.Management}, {release20, openapi.Platform}} {
		doc, err := rel.load()
		if err != nil {
			t.Fatalf("load release %s contract: %v", rel.name, err)
		}
		var table []string
		for _, c := range cases {
			if c.release == rel.name && c.variant == "" {
				table = append(table, c.id)
			}
		}
		slices.Sort(table)
		if unique := slices.Compact(slices.Clone(table)); len(unique) != len(table) {
			t.Errorf("release %s: rows without variant: got %v, want each operation once", rel.name, table)
		}
		for _, c := range cases {
			if c.release == rel.name && c.variant != "" && !slices.Contains(table, c.id) {
				t.Errorf("release %s: variant %q of %s: got no plain row of the operation, want one", rel.name, c.variant, c.id)
			}
		}
		contract := operationIDs(doc)
		for _, id := range contract {
			if !slices.Contains(table, id) {
				t.Errorf("release %s: operation %s: got no row, want one", rel.name, id)
			}
		}
		for _, id := range table {
			if !slices.Contains(contract, id) {
				t.Errorf("release %s: row %s: got an operation the contract does not have, want none", rel.name, id)
			}
		}
	}
}

// operationIDs lists a contract's operationIds, sorted.
func operationIDs(doc *openapi3.T) []string {
	var ids []string
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			ids = append(ids, op.OperationID)
		}
	}
	slices.Sort(ids)
	return ids
}

// assertNotBuilt checks the 501 of an operation that is not built yet: the
// release's error shape with a message naming the operation.
func assertNotBuilt(t *testing.T, release, id string, r apiResponse) {
	t.Helper()
	want := id + " is not built yet"
	if release == release111 {
		body := managementError(t, r)
		if got := sortedKeys(body); !slices.Equal(got, []string{"error"}) {
			t.Errorf("keys: got %v, want [error]", got)
		}
		if !strings.Contains(body["error"], want) {
			t.Errorf("error: got %q, want it to contain %q", body["error"], want)
		}
		return
	}
	e := platformErrorBody(t, r)
	if e.Status != http.StatusNotImplemented {
		t.Errorf("status field: got %d, want 501", e.Status)
	}
	if e.Timestamp.IsZero() {
		t.Errorf("timestamp: got zero, want the time of the error")
	}
	if !strings.Contains(e.Error, want) {
		t.Errorf("error: got %q, want it to contain %q", e.Error, want)
	}
	area, ok := readmeNotBuilt(t)[id]
	if !ok {
		t.Errorf("%s answers 501 but the README's \"Not built yet\" table does not list it", id)
	} else if !strings.Contains(e.Error, area) {
		t.Errorf("error: got %q, want it to name what the README says is missing: %q", e.Error, area)
	}
}

// readmeNotBuilt reads the README's "Not built yet" table: operationId →
// the area the README names as missing.
func readmeNotBuilt(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	start := strings.Index(text, "**Not built yet**")
	if start < 0 {
		t.Fatal("README has no **Not built yet** section")
	}
	out := map[string]string{}
	for _, line := range strings.Split(text[start:], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 4 || !strings.Contains(cells[2], "`") {
			if len(out) > 0 && !strings.HasPrefix(line, "|") {
				break
			}
			continue
		}
		area := strings.TrimSpace(cells[1])
		for _, op := range strings.Split(cells[2], ",") {
			op = strings.TrimSpace(op)
			op = strings.Trim(strings.Fields(op + " x")[0], "`")
			out[op] = area
		}
	}
	return out
}

// managementError decodes release 1.11's error body, a JSON object of string to string.
func managementError(t *testing.T, r apiResponse) map[string]string {
	t.Helper()
	assertJSON(t, r)
	var body map[string]string
	if err := json.Unmarshal(r.GetBody(), &body); err != nil {
		t.Fatalf("body: got %s, want a JSON object of string to string: %v", r.GetBody(), err)
	}
	return body
}

// platformErrorBody decodes release 2.0's error body {timestamp, status, error}.
func platformErrorBody(t *testing.T, r apiResponse) platformapi.Error {
	t.Helper()
	assertJSON(t, r)
	var e platformapi.Error
	if err := json.Unmarshal(r.GetBody(), &e); err != nil {
		t.Fatalf("body: got %s, want {timestamp, status, error}: %v", r.GetBody(), err)
	}
	return e
}

func assertJSON(t *testing.T, r apiResponse) {
	t.Helper()
	if mt, _, _ := mime.ParseMediaType(r.ContentType()); mt != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", r.ContentType())
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// validValidator is a complete, valid createValidator body.
// hasJSON checks a success with a JSON body (the harness validated its schema).
func hasJSON(t *testing.T, r apiResponse) {
	t.Helper()
	if !strings.HasPrefix(r.ContentType(), "application/json") || len(r.GetBody()) == 0 {
		t.Fatalf("got %q %s, want a JSON body", r.ContentType(), r.GetBody())
	}
}

// platformNotFound checks release 2.0's 404 body names the absent validator.
func platformNotFound(t *testing.T, r apiResponse) {
	t.Helper()
	e := platformErrorBody(t, r)
	if e.Status != http.StatusNotFound || !strings.Contains(e.Error, absent) {
		t.Fatalf("got %+v, want a 404 naming %q", e, absent)
	}
}

// notFound checks release 1.11's 404 body names what is missing.
func notFound(t *testing.T, r apiResponse) {
	t.Helper()
	body := managementError(t, r)
	if !strings.Contains(body["error"], absent) || !strings.Contains(body["error"], "not found") {
		t.Fatalf("got %v, want an error saying %q was not found", body, absent)
	}
}

func remoteParticipant(name string) managementapi.RemoteParticipantDto {
	return managementapi.RemoteParticipantDto{
		Name: name, AdminAddress: "participant.example.com", AdminPort: "5002",
		LedgerAddress: "participant.example.com", LedgerPort: "5001", LedgerId: "ledger-1",
		JsonApiUrl: "https://participant.example.com/json", AuthProvider: managementapi.Provider1,
		Image: "registry.example.com/participant:3.3.0", V3: ptr(true),
	}
}

func validValidator() managementapi.ValidatorDto {
	none := []managementapi.EnvVar{}
	return managementapi.ValidatorDto{
		Name:      validator,
		ImageRepo: "registry.example.com/splice",
		ImageTag:  "0.4.2",
		ClusterConfig: managementapi.ClusterConfigDto{
			AppInfoLedgerNameService: managementapi.AppInfoDto{EnvVars: none},
			AppInfoValidator: managementapi.AppInfoDto{
				EnvVars:   []managementapi.EnvVar{{Name: ptr("LOG_LEVEL"), Value: ptr("INFO")}},
				Resources: &managementapi.ResourcesDto{CpuLimit: ptr("500m"), MemoryLimit: ptr("2Gi"), Replicas: ptr[int32](1)},
			},
			DefaultJvmOptions: "-Xms1g -Xmx2g",
			Migration:         managementapi.MigrationDto{Id: 0},
			PartyHint:         "acme-validator_1",
			ScanAddress:       "https://scan.example.com",
			SvSponsorAddress:  "https://sv.example.com",
		},
		ClusterParticipantConfig: managementapi.ClusterParticipantConfigDto{},
		Participant:              managementapi.AppInfoDto{EnvVars: none},
		OnboardingSecret:         ptr("onboarding-secret"),
	}
}

// darUpload is a multipart/form-data body with a `file` part.
func darUpload(fileName string, content []byte) (string, *bytes.Buffer, error) {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, err := w.CreateFormFile("file", fileName)
	if err != nil {
		return "", nil, err
	}
	if _, err := part.Write(content); err != nil {
		return "", nil, err
	}
	if err := w.Close(); err != nil {
		return "", nil, err
	}
	return w.FormDataContentType(), &body, nil
}

// requestEditor is assignable to both generated packages' RequestEditorFn.
type requestEditor = func(context.Context, *http.Request) error

func withHeader(name, value string) requestEditor {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set(name, value)
		return nil
	}
}

func withoutHeader(name string) requestEditor {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Del(name)
		return nil
	}
}

// withQuery sets a query parameter to a value the typed client cannot send.
func withQuery(key, value string) requestEditor {
	return func(_ context.Context, req *http.Request) error {
		q := req.URL.Query()
		q.Set(key, value)
		req.URL.RawQuery = q.Encode()
		return nil
	}
}

// withoutQuery drops a parameter the typed client always sends.
func withoutQuery(key string) requestEditor {
	return func(_ context.Context, req *http.Request) error {
		q := req.URL.Query()
		q.Del(key)
		req.URL.RawQuery = q.Encode()
		return nil
	}
}

func ptr[T any](v T) *T { return &v }
