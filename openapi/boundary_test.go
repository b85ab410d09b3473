package openapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/validator-manager/validator-manager/impl/apitest"
)

// TestConstraintBoundaries sends each documented constraint of the user
// ids, party ids, wallet-user names, the NUL rule and generate-topology's
// optional fields, and the Base64 values of external parties and their
// arrays at its boundary: the value just inside is not refused by
// validation (the validator does not exist, so the answer is 404), the
// value just outside is 400 naming the field.
func TestConstraintBoundaries(t *testing.T) {
	s := apitest.Start(t, apitest.Options{})
	const v = "/api/v1/validators/absent"
	party := "alice::1220" + strings.Repeat("ab", 32)
	q := url.QueryEscape
	cases := []struct {
		name, method, path, body string
		bad                      bool
		field                    string
	}{
		{"user id of 128 characters", http.MethodPost, v + "/users?userId=" + strings.Repeat("u", 128), "", false, ""},
		{"user id of 129 characters", http.MethodPost, v + "/users?userId=" + strings.Repeat("u", 129), "", true, "userId"},
		{"user id with every allowed symbol", http.MethodPost, v + "/users?userId=" + q("a@^$.!`-#+'~_|:()"), "", false, ""},
		{"user id with a space", http.MethodPost, v + "/users?userId=" + q("a b"), "", true, "userId"},
		{"user id with a space (path)", http.MethodPost, v + "/users/" + url.PathEscape("a b") + "?isDeactivated=true", "", true, "userId"},
		{"user id with NUL", http.MethodPost, v + "/users?userId=a%00b", "", true, "userId"},
		// "." and ".." are dot segments in the ledger's /v2/users/{user-id}
		// paths: a client resolves them away, calling another path.
		{"user id .", http.MethodPost, v + "/users?userId=.", "", true, "userId"},
		{"user id ..", http.MethodPost, v + "/users?userId=..", "", true, "userId"},
		{"user id ...", http.MethodPost, v + "/users?userId=...", "", false, ""},
		{"user id with dots and a letter", http.MethodPost, v + "/users?userId=..a.", "", false, ""},
		{"user id . (path)", http.MethodGet, v + "/users/%2E/rights", "", true, "userId"},
		{"user id .. (path)", http.MethodPost, v + "/users/%2E%2E?isDeactivated=true", "", true, "userId"},
		{"user id .. (path of rights)", http.MethodPost, v + "/users/%2E%2E/rights", "", true, "userId"},
		{"user id .x (path)", http.MethodGet, v + "/users/.x/rights", "", false, ""},
		{"primary party", http.MethodPost, v + "/users?userId=a&primaryParty=" + q(party), "", false, ""},
		{"primary party empty (none)", http.MethodPost, v + "/users?userId=a&primaryParty=", "", false, ""},
		{"primary party with a 69-digit namespace", http.MethodPost, v + "/users?userId=a&primaryParty=" + q(party+"0"), "", true, "primaryParty"},
		{"primary party with an upper-case namespace", http.MethodPost, v + "/users?userId=a&primaryParty=" + q("alice::1220AB"), "", true, "primaryParty"},
		{"primary party cleared", http.MethodPost, v + "/users/a?primaryParty=", "", false, ""},
		{"canActAs not a party id", http.MethodPost, v + "/users?userId=a&canActAs=alice", "", true, "canActAs"},
		{"party hint of 185 characters", http.MethodPost, v + "/parties?partyIdHint=" + strings.Repeat("p", 185), "", false, ""},
		{"party hint of 186 characters", http.MethodPost, v + "/parties?partyIdHint=" + strings.Repeat("p", 186), "", true, "partyIdHint"},
		{"party hint with single colons and a space", http.MethodPost, v + "/parties?partyIdHint=" + q(":a b:c:"), "", false, ""},
		{"party hint with ::", http.MethodPost, v + "/parties?partyIdHint=" + q("a::b"), "", true, "partyIdHint"},
		{"wallet user of 128 characters", http.MethodPost, v + "/wallet-users", `{"name":"` + strings.Repeat("w", 128) + `"}`, false, ""},
		{"wallet user of 129 characters", http.MethodPost, v + "/wallet-users", `{"name":"` + strings.Repeat("w", 129) + `"}`, true, "name"},
		{"wallet user with ::", http.MethodPost, v + "/wallet-users", `{"name":"a::b"}`, true, "name"},
		{"wallet user with a space", http.MethodPost, v + "/wallet-users", `{"name":"a b"}`, true, "name"},
		{"wallet user with NUL", http.MethodPost, v + "/wallet-users", `{"name":"a\u0000b"}`, true, "name"},
		{"wallet user offboarded by a bad name", http.MethodDelete, v + "/wallet-users/" + url.PathEscape("a b"), "", true, "username"},
		{"generate-topology with the optional fields absent", http.MethodPost, v + "/external-parties/generate-topology", `{"partyHint":"a","publicKeyBase64":"AAAA"}`, false, ""},
		{"generate-topology threshold 1", http.MethodPost, v + "/external-parties/generate-topology", `{"partyHint":"a","publicKeyBase64":"AAAA","confirmationThreshold":1}`, false, ""},
		{"generate-topology threshold 0", http.MethodPost, v + "/external-parties/generate-topology", `{"partyHint":"a","publicKeyBase64":"AAAA","confirmationThreshold":0}`, true, "confirmationThreshold"},
		{"generate-topology threshold null", http.MethodPost, v + "/external-parties/generate-topology", `{"partyHint":"a","publicKeyBase64":"AAAA","confirmationThreshold":null}`, true, "confirmationThreshold"},
		{"generate-topology observation-only null", http.MethodPost, v + "/external-parties/generate-topology", `{"partyHint":"a","publicKeyBase64":"AAAA","localParticipantObservationOnly":null}`, true, "localParticipantObservationOnly"},
		{"generate-topology key spec null", http.MethodPost, v + "/external-parties/generate-topology", `{"partyHint":"a","publicKeyBase64":"AAAA","keySpec":null}`, true, "keySpec"},
		{"generate-topology hosts null", http.MethodPost, v + "/external-parties/generate-topology", `{"partyHint":"a","publicKeyBase64":"AAAA","hosts":null}`, true, "hosts"},
	}
	// Base64 values and the arrays that carry them: at the bound, and one
	// over (still of the Base64 alphabet, so only the bound refuses it,
	// which the answer names).
	b64 := func(n int) string { return `"` + strings.Repeat("A", n) + `"` }
	list := func(n int, item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	}
	host := func(i int) string {
		return fmt.Sprintf(`{"participantUid":"p%d::1220ab","permission":"CONFIRMING"}`, i)
	}
	hosts := func(n int) string {
		h := make([]string, n)
		for i := range h {
			h[i] = host(i)
		}
		return "[" + strings.Join(h, ",") + "]"
	}
	generate := func(key, hs string) string {
		return `{"partyHint":"a","publicKeyBase64":` + key + `,"hosts":` + hs + `}`
	}
	allocate := func(txs, sig string) string {
		return `{"synchronizerId":"s::1220ab","topologyTransactions":` + txs + `,"signature":` + sig + `,"publicKeyFingerprint":"1220ab"}`
	}
	prepare := func(hs string) string { return `{"partyId":"alice::1220ab","hosts":` + hs + `}` }
	submit := func(tx, sig string) string {
		return `{"partyId":"alice::1220ab","transaction":` + tx + `,"signature":` + sig + `,"publicKeyFingerprint":"1220ab"}`
	}
	gen, alloc := v+"/external-parties/generate-topology", v+"/external-parties/allocate"
	prep, sub := v+"/external-parties/amend-hosting/prepare", v+"/external-parties/amend-hosting/submit"
	cases = append(cases, []struct {
		name, method, path, body string
		bad                      bool
		field                    string
	}{
		{"public key of 1024 characters", http.MethodPost, gen, generate(b64(1024), "[]"), false, ""},
		{"public key of 1025 characters", http.MethodPost, gen, generate(b64(1025), "[]"), true, "publicKeyBase64: maximum string length is 1024"},
		{"32 co-hosts", http.MethodPost, gen, generate(b64(4), hosts(32)), false, ""},
		{"33 co-hosts", http.MethodPost, gen, generate(b64(4), hosts(33)), true, "hosts: maximum number of items is 32"},
		{"topology transaction of 65536 characters", http.MethodPost, alloc, allocate(list(1, b64(65536)), b64(88)), false, ""},
		{"topology transaction of 65537 characters", http.MethodPost, alloc, allocate(list(1, b64(65537)), b64(88)), true, "topologyTransactions.0: maximum string length is 65536"},
		{"16 topology transactions", http.MethodPost, alloc, allocate(list(16, b64(4)), b64(88)), false, ""},
		{"17 topology transactions", http.MethodPost, alloc, allocate(list(17, b64(4)), b64(88)), true, "topologyTransactions: maximum number of items is 16"},
		{"allocate signature of 1024 characters", http.MethodPost, alloc, allocate(list(1, b64(4)), b64(1024)), false, ""},
		{"allocate signature of 1025 characters", http.MethodPost, alloc, allocate(list(1, b64(4)), b64(1025)), true, "signature: maximum string length is 1024"},
		{"33 hosts in an amendment", http.MethodPost, prep, prepare(hosts(33)), false, ""},
		{"34 hosts in an amendment", http.MethodPost, prep, prepare(hosts(34)), true, "hosts: maximum number of items is 33"},
		{"amendment of 65536 characters", http.MethodPost, sub, submit(b64(65536), b64(88)), false, ""},
		{"amendment of 65537 characters", http.MethodPost, sub, submit(b64(65537), b64(88)), true, "transaction: maximum string length is 65536"},
		{"amendment signature of 1024 characters", http.MethodPost, sub, submit(b64(4), b64(1024)), false, ""},
		{"amendment signature of 1025 characters", http.MethodPost, sub, submit(b64(4), b64(1025)), true, "signature: maximum string length is 1024"},
	}...)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			req, _ := http.NewRequestWithContext(t.Context(), tt.method, s.URL+tt.path, body)
			req.Header.Set("Authorization", "Bearer "+s.Token)
			if tt.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			switch {
			case tt.bad && (resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), tt.field)):
				t.Fatalf("got %d %s, want 400 naming %s", resp.StatusCode, raw, tt.field)
			case !tt.bad && resp.StatusCode != http.StatusNotFound:
				t.Fatalf("got %d %s, want 404 (validation passed, no such validator)", resp.StatusCode, raw)
			}
		})
	}
}
