package platform_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/validator-manager/validator-manager/gen/platformapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/app"
	"github.com/validator-manager/validator-manager/impl/config"
	"github.com/validator-manager/validator-manager/impl/embedded/sandbox"
)

const validator = "validator-1"

// startWithValidator runs the server with a validator created through release 1.11; the
// sandbox ledger answers pages of two, so listings follow pages. Every
// exchange with the sandbox is checked against the upstream descriptions
// (apitest), every response against ours.
func startWithValidator(t *testing.T, cfg func(*config.Config)) *apitest.Server {
	t.Helper()
	s := apitest.Start(t, apitest.Options{Config: cfg, App: []app.Option{app.With(func(o *sandbox.Options) { o.PageSize = 2 })}})
	createValidator(t, s)
	return s
}

func createValidator(t testing.TB, s *apitest.Server) {
	t.Helper()
	if r, err := s.Management.CreateValidatorWithResponse(t.Context(), validatorDto(validator)); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create validator: %v %s", err, r.Body)
	}
	s.Provisioned(t, validator)
}

// platformError decodes 2.0's {timestamp, status, error} or {endpoint, error}.
func platformError(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("error body %s: %v", raw, err)
	}
	return m
}

func expect(t *testing.T, what string, got int, raw []byte, want int) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: got %d %s, want %d", what, got, raw, want)
	}
}

func TestParties(t *testing.T) {
	t.Parallel()
	s := startWithValidator(t, nil)
	ctx := t.Context()

	r, err := s.Platform.AllocatePartyWithResponse(ctx, validator, &platformapi.AllocatePartyParams{PartyIdHint: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "allocate alice", r.StatusCode(), r.Body, http.StatusOK)
	alice := r.JSON200.PartyDetails.Party
	if hint, fp, _ := strings.Cut(alice, "::"); hint != "alice" || !strings.HasPrefix(fp, "1220") || len(fp) != 68 {
		t.Fatalf("party id: got %q, want alice::1220<64 hex>", alice)
	}
	for _, hint := range []string{"alina", "bob", "carol"} {
		if r, err := s.Platform.AllocatePartyWithResponse(ctx, validator, &platformapi.AllocatePartyParams{PartyIdHint: hint}); err != nil || r.StatusCode() != http.StatusOK {
			t.Fatalf("allocate %s: %v %s", hint, err, r.Body)
		}
	}

	tests := []struct {
		name   string
		prefix *string
		want   []string // hints, in order
	}{
		{"every party, over pages of two", nil, []string{"alice", "alina", "bob", "carol", validator + "-validator-1"}},
		{"prefix", ptr("ali"), []string{"alice", "alina"}},
		{"full id", ptr(alice), []string{"alice"}},
		{"no match", ptr("zed"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := s.Platform.ListPartiesWithResponse(ctx, validator, &platformapi.ListPartiesParams{PartyId: tt.prefix})
			if err != nil {
				t.Fatal(err)
			}
			expect(t, "list", r.StatusCode(), r.Body, http.StatusOK)
			var got []string
			for _, p := range *r.JSON200 {
				hint, _, _ := strings.Cut(p.Party, "::")
				got = append(got, hint)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}

	errs := []struct {
		name   string
		hint   string
		status int
		want   string
	}{
		{"already allocated", "alice", http.StatusConflict, "PARTY_ALREADY_EXISTS"},
		{"invalid hint, refused by the contract's pattern", "no::colons", http.StatusBadRequest, "partyIdHint"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			r, err := s.Platform.AllocatePartyWithResponse(ctx, validator, &platformapi.AllocatePartyParams{PartyIdHint: tt.hint})
			if err != nil {
				t.Fatal(err)
			}
			expect(t, tt.name, r.StatusCode(), r.Body, tt.status)
			body := platformError(t, r.Body)
			if msg, _ := body["error"].(string); !strings.Contains(msg, tt.want) {
				t.Fatalf("error: got %q, want it to contain %q", msg, tt.want)
			}
			if tt.status == http.StatusUnprocessableEntity {
				if ep, _ := body["endpoint"].(string); !strings.HasSuffix(ep, "/v2/parties") || !strings.HasPrefix(ep, "http://127.0.0.1:") {
					t.Fatalf("endpoint: got %q, want the sandbox ledger's /v2/parties", ep)
				}
			}
		})
	}
	t.Run("unauthenticated", func(t *testing.T) {
		r, err := s.Public.ListPartiesWithResponse(ctx, validator, nil)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "no token", r.StatusCode(), r.Body, http.StatusUnauthorized)
	})
}

// rightsOf renders a rights answer as "Kind:party" strings.
func rightsOf(t *testing.T, raw []byte) []string {
	t.Helper()
	var body struct {
		Rights []struct {
			Kind map[string]struct {
				Value struct{ Party string } `json:"value"`
			} `json:"kind"`
		} `json:"rights"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range body.Rights {
		for k, v := range r.Kind {
			out = append(out, k+":"+v.Value.Party)
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		if seen[x] == 0 {
			return false
		}
		seen[x]--
	}
	return true
}

func TestUsersAndRights(t *testing.T) {
	t.Parallel()
	s := startWithValidator(t, nil)
	ctx := t.Context()
	alloc := func(hint string) string {
		r, err := s.Platform.AllocatePartyWithResponse(ctx, validator, &platformapi.AllocatePartyParams{PartyIdHint: hint})
		if err != nil || r.JSON200 == nil {
			t.Fatalf("allocate %s: %v %s", hint, err, r.Body)
		}
		return r.JSON200.PartyDetails.Party
	}
	alice, bob := alloc("alice"), alloc("bob")

	t.Run("create", func(t *testing.T) {
		r, err := s.Platform.CreateUserWithResponse(ctx, validator, &platformapi.CreateUserParams{
			UserId: "alice", PrimaryParty: &alice, ParticipantAdmin: ptr(true), CanActAs: &[]string{alice}, CanReadAs: &[]string{bob},
		})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "create alice", r.StatusCode(), r.Body, http.StatusOK)
		if r.JSON200.User.Id != "alice" || r.JSON200.User.PrimaryParty == nil || *r.JSON200.User.PrimaryParty != alice {
			t.Fatalf("user: got %s", r.Body)
		}
		rights, _ := s.Platform.ListUserRightsWithResponse(ctx, validator, "alice")
		expect(t, "rights", rights.StatusCode(), rights.Body, http.StatusOK)
		if got, want := rightsOf(t, rights.Body), []string{"ParticipantAdmin:", "CanActAs:" + alice, "CanReadAs:" + bob}; !sameSet(got, want) {
			t.Fatalf("rights: got %v, want %v", got, want)
		}
	})
	t.Run("create with form parameters", func(t *testing.T) {
		// The contract: a single-valued parameter sent in both places
		// takes the query's value, a list gets the query's values then
		// the form's.
		tests := []struct {
			name        string
			query, form url.Values
			user        string
			rights      []string
		}{
			{"form only", nil, url.Values{"userId": {"bob"}, "canActAs": {bob}}, "bob", []string{"CanActAs:" + bob}},
			// A form's blank field: an empty primaryParty means none.
			{"blank primary party", nil, url.Values{"userId": {"eve"}, "primaryParty": {""}, "canActAs": {bob}}, "eve", []string{"CanActAs:" + bob}},
			{"userId in both", url.Values{"userId": {"carol"}}, url.Values{"userId": {"mallory"}, "canActAs": {alice}}, "carol", []string{"CanActAs:" + alice}},
			{"boolean in both, lists in both", url.Values{"userId": {"dan"}, "participantAdmin": {"true"}, "canReadAs": {alice}},
				url.Values{"userId": {"dan"}, "participantAdmin": {"false"}, "canReadAs": {bob}}, "dan", []string{"ParticipantAdmin:", "CanReadAs:" + alice, "CanReadAs:" + bob}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				u := s.URL + "/api/v1/validators/" + validator + "/users"
				if tt.query != nil {
					u += "?" + tt.query.Encode()
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(tt.form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Authorization", "Bearer "+s.Token)
				resp, err := s.HTTP.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				expect(t, "create", resp.StatusCode, b, http.StatusOK)
				var got struct{ User struct{ Id string } }
				if err := json.Unmarshal(b, &got); err != nil || got.User.Id != tt.user {
					t.Fatalf("created %s (%v), want user %s", b, err, tt.user)
				}
				rights, _ := s.Platform.ListUserRightsWithResponse(ctx, validator, tt.user)
				expect(t, "rights", rights.StatusCode(), rights.Body, http.StatusOK)
				if got := rightsOf(t, rights.Body); !sameSet(got, tt.rights) {
					t.Fatalf("rights: got %v, want %v", got, tt.rights)
				}
			})
		}
	})

	createErrs := []struct {
		name   string
		params platformapi.CreateUserParams
		status int
		want   string
	}{
		{"exists", platformapi.CreateUserParams{UserId: "alice"}, http.StatusConflict, "USER_ALREADY_EXISTS"},
		{"unknown party", platformapi.CreateUserParams{UserId: "dave", CanActAs: &[]string{"dave::1220" + strings.Repeat("0", 64)}}, http.StatusUnprocessableEntity, "INVALID_ARGUMENT"},
		{"invalid user id", platformapi.CreateUserParams{UserId: "no spaces allowed"}, http.StatusBadRequest, "userId"},
		{"empty party", platformapi.CreateUserParams{UserId: "erin", CanReadAs: &[]string{" "}}, http.StatusBadRequest, "canReadAs"},
		// A user "." or ".." could never be read or changed: the ledger's
		// /v2/users/{user-id} paths lose a dot segment (the client resolves
		// ./v2/users/./rights to /v2/users/rights).
		{"user id .", platformapi.CreateUserParams{UserId: "."}, http.StatusBadRequest, "userId"},
		{"user id ..", platformapi.CreateUserParams{UserId: ".."}, http.StatusBadRequest, "userId"},
	}
	for _, tt := range createErrs {
		t.Run("create "+tt.name, func(t *testing.T) {
			r, err := s.Platform.CreateUserWithResponse(ctx, validator, &tt.params)
			if err != nil {
				t.Fatal(err)
			}
			expect(t, tt.name, r.StatusCode(), r.Body, tt.status)
			if msg, _ := platformError(t, r.Body)["error"].(string); !strings.Contains(msg, tt.want) {
				t.Fatalf("error: got %q, want it to contain %q", msg, tt.want)
			}
		})
	}

	t.Run("update", func(t *testing.T) {
		r, err := s.Platform.UpdateUserWithResponse(ctx, validator, "alice", &platformapi.UpdateUserParams{
			IsDeactivated: ptr(true), Annotation: &[]string{"team=payments", "gone="},
		})
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "update", r.StatusCode(), r.Body, http.StatusOK)
		u := r.JSON200.User
		if u.IsDeactivated == nil || !*u.IsDeactivated || u.Metadata == nil || (*u.Metadata.Annotations)["team"] != "payments" {
			t.Fatalf("user: got %s, want deactivated with team=payments", r.Body)
		}
		if u.PrimaryParty == nil || *u.PrimaryParty != alice {
			t.Fatalf("primary party changed: got %s", r.Body)
		}
		r, _ = s.Platform.UpdateUserWithResponse(ctx, validator, "alice", &platformapi.UpdateUserParams{PrimaryParty: ptr(""), Annotation: &[]string{"team="}})
		expect(t, "clear", r.StatusCode(), r.Body, http.StatusOK)
		if u := r.JSON200.User; u.PrimaryParty != nil || len(*u.Metadata.Annotations) != 0 || !*u.IsDeactivated {
			t.Fatalf("user: got %s, want no primary party, no annotation, still deactivated", r.Body)
		}
	})
	updateErrs := []struct {
		name   string
		user   string
		params platformapi.UpdateUserParams
		status int
	}{
		{"unknown user", "nobody", platformapi.UpdateUserParams{IsDeactivated: ptr(true)}, http.StatusNotFound},
		{"nothing to update", "alice", platformapi.UpdateUserParams{}, http.StatusBadRequest},
		{"invalid primary party", "alice", platformapi.UpdateUserParams{PrimaryParty: ptr("not a party")}, http.StatusBadRequest},
		// The ledger refuses it (Canton: "Requesting user cannot
		// self-deactivate"): the server would lock itself out.
		{"the server's own ledger user", validator + "-validator-operator", platformapi.UpdateUserParams{IsDeactivated: ptr(true)}, http.StatusUnprocessableEntity},
	}
	for _, tt := range updateErrs {
		t.Run("update "+tt.name, func(t *testing.T) {
			r, err := s.Platform.UpdateUserWithResponse(ctx, validator, tt.user, &tt.params)
			if err != nil {
				t.Fatal(err)
			}
			expect(t, tt.name, r.StatusCode(), r.Body, tt.status)
		})
	}
	t.Run("the ledger still answers the server", func(t *testing.T) {
		r, _ := s.Platform.ListUserRightsWithResponse(ctx, validator, validator+"-validator-operator")
		expect(t, "list", r.StatusCode(), r.Body, http.StatusOK)
	})

	t.Run("replace rights", func(t *testing.T) {
		steps := []struct {
			params platformapi.UpdateUserRightsParams
			want   []string
		}{
			{platformapi.UpdateUserRightsParams{CanReadAs: &[]string{alice, bob}, CanActAs: &[]string{alice}}, []string{"CanActAs:" + alice, "CanReadAs:" + alice, "CanReadAs:" + bob}},
			{platformapi.UpdateUserRightsParams{CanReadAsAnyParty: ptr(true), CanExecuteAs: &[]string{bob}}, []string{"CanReadAsAnyParty:", "CanExecuteAs:" + bob}},
			{platformapi.UpdateUserRightsParams{}, nil},
		}
		for i, st := range steps {
			r, err := s.Platform.UpdateUserRightsWithResponse(ctx, validator, "alice", &st.params)
			if err != nil {
				t.Fatal(err)
			}
			expect(t, "replace", r.StatusCode(), r.Body, http.StatusOK)
			if got := rightsOf(t, r.Body); !sameSet(got, st.want) {
				t.Fatalf("step %d: answer got %v, want %v", i, got, st.want)
			}
			l, _ := s.Platform.ListUserRightsWithResponse(ctx, validator, "alice")
			if got := rightsOf(t, l.Body); !sameSet(got, st.want) {
				t.Fatalf("step %d: ledger holds %v, want %v", i, got, st.want)
			}
		}
	})
	t.Run("rights of an unknown user", func(t *testing.T) {
		l, _ := s.Platform.ListUserRightsWithResponse(ctx, validator, "nobody")
		expect(t, "list", l.StatusCode(), l.Body, http.StatusNotFound)
		u, _ := s.Platform.UpdateUserRightsWithResponse(ctx, validator, "nobody", &platformapi.UpdateUserRightsParams{})
		expect(t, "replace", u.StatusCode(), u.Body, http.StatusNotFound)
	})
	t.Run("grant over an unknown party", func(t *testing.T) {
		u, _ := s.Platform.UpdateUserRightsWithResponse(ctx, validator, "alice", &platformapi.UpdateUserRightsParams{CanActAs: &[]string{"zed::1220" + strings.Repeat("a", 64)}})
		expect(t, "replace", u.StatusCode(), u.Body, http.StatusUnprocessableEntity)
	})
}

func TestWalletUsers(t *testing.T) {
	t.Parallel()
	s := startWithValidator(t, nil)
	ctx := t.Context()
	operator := validator + "-validator-operator"

	list := func() []string {
		r, err := s.Platform.ListWalletUsersWithResponse(ctx, validator)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("list: %v %s", err, r.Body)
		}
		return r.JSON200.Usernames
	}
	if got := list(); strings.Join(got, ",") != operator {
		t.Fatalf("wallet users: got %v, want [%s]", got, operator)
	}
	r, err := s.Platform.OnboardWalletUserWithResponse(ctx, validator, platformapi.OnboardWalletUserRequest{Name: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "onboard", r.StatusCode(), r.Body, http.StatusOK)
	if r.JSON200.Name != "carol" || !strings.HasPrefix(r.JSON200.PartyId, "carol::1220") {
		t.Fatalf("onboarded: got %s", r.Body)
	}
	if got := list(); strings.Join(got, ",") != "carol,"+operator {
		t.Fatalf("wallet users: got %v, want [carol %s]", got, operator)
	}
	// Onboarding made carol's party and ledger user.
	parties, _ := s.Platform.ListPartiesWithResponse(ctx, validator, &platformapi.ListPartiesParams{PartyId: ptr("carol::")})
	if parties.JSON200 == nil || len(*parties.JSON200) != 1 {
		t.Fatalf("carol's party: got %s", parties.Body)
	}
	rights, _ := s.Platform.ListUserRightsWithResponse(ctx, validator, "carol")
	expect(t, "carol's rights", rights.StatusCode(), rights.Body, http.StatusOK)

	bad, _ := s.Platform.OnboardWalletUserWithResponse(ctx, validator, platformapi.OnboardWalletUserRequest{Name: "no spaces"})
	expect(t, "onboard invalid name", bad.StatusCode(), bad.Body, http.StatusBadRequest) // the contract's pattern

	cases := []struct {
		name, user string
		status     int
	}{
		{"own wallet user", operator, http.StatusConflict},
		{"onboarded user", "carol", http.StatusOK},
		{"again", "carol", http.StatusNotFound},
		{"never onboarded", "nobody", http.StatusNotFound},
	}
	for _, tt := range cases {
		t.Run("offboard "+tt.name, func(t *testing.T) {
			r, err := s.Platform.OffboardWalletUserWithResponse(ctx, validator, tt.user)
			if err != nil {
				t.Fatal(err)
			}
			expect(t, tt.name, r.StatusCode(), r.Body, tt.status)
			if tt.status == http.StatusOK && (!r.JSON200.Offboarded || r.JSON200.Username != tt.user) {
				t.Fatalf("body: got %s", r.Body)
			}
		})
	}
	if got := list(); strings.Join(got, ",") != operator {
		t.Fatalf("after offboarding: got %v, want [%s]", got, operator)
	}
	l, _ := s.Platform.ListUserRightsWithResponse(ctx, validator, "carol")
	expect(t, "carol's ledger user is deleted", l.StatusCode(), l.Body, http.StatusNotFound)
}

// dar builds a DAR: a zip whose manifest names its DALFs, each a Daml-LF
// archive of the content given as its package.
func dar(t *testing.T, dalfs map[string]string, main string) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := zip.NewWriter(&buf)
	names := []string{}
	for name, content := range dalfs {
		w, _ := z.Create(name)
		_, _ = w.Write(apitest.Archive("1.17", []byte(content)))
		names = append(names, name)
	}
	w, _ := z.Create("META-INF/MANIFEST.MF")
	_, _ = w.Write([]byte("Manifest-Version: 1.0\r\nCreated-By: damlc\r\nMain-Dalf: " + main + "\r\nDalfs: " + strings.Join(names, ", ") + "\r\nFormat: daml-lf\r\nEncryption: non-encrypted\r\n"))
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func multipartBody(t *testing.T, field, fileName string, content []byte) (string, *bytes.Buffer) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, err := w.CreateFormFile(field, fileName)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = part.Write(content)
	_ = w.Close()
	return w.FormDataContentType(), &body
}

func TestUploadDar(t *testing.T) {
	t.Parallel()
	s := startWithValidator(t, func(c *config.Config) { c.MaxUploadBytes = 64 << 10 })
	ctx := t.Context()
	packages := func() []string {
		tgt, err := s.App.Sandbox.Target(validator)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tgt.LedgerURL+"/v2/packages", nil)
		tok, err := sandboxToken(ctx, tgt.Credentials.TokenURL, s.App.Sandbox.ClientSecret())
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ PackageIds []string }
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return out.PackageIds
	}
	before := len(packages())

	good := dar(t, map[string]string{"model-1.0.0-aa/model.dalf": "main package", "model-1.0.0-aa/dep.dalf": "a dependency"}, "model-1.0.0-aa/model.dalf")
	cases := []struct {
		name    string
		field   string
		content []byte
		status  int
	}{
		{"a DAR", "file", good, http.StatusOK},
		{"not a zip", "file", []byte("PK\x03\x04 not really a DAR"), http.StatusUnprocessableEntity},
		{"zip without manifest", "file", func() []byte {
			var b bytes.Buffer
			z := zip.NewWriter(&b)
			w, _ := z.Create("x.dalf")
			_, _ = w.Write([]byte("x"))
			_ = z.Close()
			return b.Bytes()
		}(), http.StatusUnprocessableEntity},
		{"no file part", "upload", good, http.StatusBadRequest},
		{"beyond server.maxUploadBytes", "file", bytes.Repeat([]byte("x"), 100<<10), http.StatusRequestEntityTooLarge},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			ct, body := multipartBody(t, tt.field, "model.dar", tt.content)
			r, err := s.Platform.UploadDarWithBodyWithResponse(ctx, validator, ct, body)
			if err != nil {
				t.Fatal(err)
			}
			expect(t, tt.name, r.StatusCode(), r.Body, tt.status)
			if tt.status == http.StatusOK {
				if !r.JSON200.Uploaded || r.JSON200.SizeBytes != int64(len(tt.content)) || r.JSON200.FileName == nil || *r.JSON200.FileName != "model.dar" {
					t.Fatalf("body: got %s, want uploaded, %d bytes, model.dar", r.Body, len(tt.content))
				}
			}
		})
	}
	if got := len(packages()); got != before+2 {
		t.Fatalf("packages: got %d, want %d (the DAR's two DALFs)", got, before+2)
	}
}

// sandboxToken runs the client-credentials grant against the sandbox.
func sandboxToken(ctx context.Context, tokenURL, secret string) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {sandbox.ClientID}, "client_secret": {secret}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	return out.AccessToken, err
}

// faults switches the sandbox's failures during a test.
type faults struct {
	mu sync.Mutex
	f  func(up string, r *http.Request) int
}

func (f *faults) set(fn func(up string, r *http.Request) int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.f = fn
}

func (f *faults) hook(up string, r *http.Request) int {
	f.mu.Lock()
	fn := f.f
	f.mu.Unlock()
	if fn == nil {
		return 0
	}
	return fn(up, r)
}

func TestValidatorViews(t *testing.T) {
	t.Parallel()
	var fl faults
	s := apitest.Start(t, apitest.Options{
		Config: func(c *config.Config) { c.UpstreamTimeout = 300 * time.Millisecond },
		App:    []app.Option{app.With(func(o *sandbox.Options) { o.Fault = fl.hook })},
	})
	createValidator(t, s)
	ctx := t.Context()

	t.Run("traffic status", func(t *testing.T) {
		r, err := s.Platform.GetValidatorTrafficStatusWithResponse(ctx, validator)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "traffic", r.StatusCode(), r.Body, http.StatusOK)
		before := r.JSON200.TrafficStatus.Actual.TotalConsumed
		if r.JSON200.TrafficStatus.Actual.TotalLimit <= 0 || r.JSON200.TrafficStatus.Target.TotalPurchased <= 0 {
			t.Fatalf("counters: got %s", r.Body)
		}
		if a, _ := s.Platform.AllocatePartyWithResponse(ctx, validator, &platformapi.AllocatePartyParams{PartyIdHint: "traffic"}); a.StatusCode() != http.StatusOK {
			t.Fatalf("allocate: %s", a.Body)
		}
		r, _ = s.Platform.GetValidatorTrafficStatusWithResponse(ctx, validator)
		if after := r.JSON200.TrafficStatus.Actual.TotalConsumed; after <= before {
			t.Fatalf("consumed: got %d after a submission, want more than %d", after, before)
		}
	})
	t.Run("balances", func(t *testing.T) {
		r, err := s.Platform.GetValidatorBalancesWithResponse(ctx, validator)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "balances", r.StatusCode(), r.Body, http.StatusOK)
		b := r.JSON200
		if b.Error != nil || b.PartyId == nil || !strings.HasPrefix(*b.PartyId, validator+"-validator-1::1220") || b.TotalUnlockedCoin == nil || *b.TotalUnlockedCoin != "1000.0000000000" || b.RecordTime == nil {
			t.Fatalf("balances: got %s", r.Body)
		}
	})
	t.Run("balances when scan fails", func(t *testing.T) {
		fl.set(func(up string, r *http.Request) int {
			if up == "scan" {
				return http.StatusInternalServerError
			}
			return 0
		})
		defer fl.set(nil)
		r, err := s.Platform.GetValidatorBalancesWithResponse(ctx, validator)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "balances", r.StatusCode(), r.Body, http.StatusOK)
		var body map[string]any
		_ = json.Unmarshal(r.Body, &body)
		if len(body) != 2 || body["error"] == nil || body["party_id"] == nil {
			t.Fatalf("body: got %s, want only error and party_id", r.Body)
		}
	})
	t.Run("identity dump", func(t *testing.T) {
		r, err := s.Platform.GetIdentityDumpWithResponse(ctx, validator)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "dump", r.StatusCode(), r.Body, http.StatusOK)
		h := r.HTTPResponse.Header
		if h.Get("Content-Type") != "application/octet-stream" || h.Get("Cache-Control") != "no-store" ||
			h.Get("Content-Disposition") != `attachment; filename="validator-1-participant-identities.json"` {
			t.Fatalf("headers: got %v", h)
		}
		var dump struct {
			ID   string `json:"id"`
			Keys []struct {
				KeyPair string `json:"keyPair"`
			} `json:"keys"`
			AuthorizedStoreSnapshot string `json:"authorizedStoreSnapshot"`
		}
		if err := json.Unmarshal(r.Body, &dump); err != nil || !strings.HasPrefix(dump.ID, "participant-validator-1::1220") || len(dump.Keys) == 0 {
			t.Fatalf("dump: got %s (%v)", r.Body, err)
		}
		if strings.Contains(s.Logs(), dump.Keys[0].KeyPair) {
			t.Fatal("the key material is in the log")
		}
	})

	for _, tt := range []upstreamFault{ledgerUnavailable, ledgerTooSlow(2 * time.Second)} {
		t.Run("502 "+tt.name, func(t *testing.T) {
			fl.set(tt.fault)
			defer fl.set(nil)
			calls := map[string]func() (int, []byte){
				"listParties": func() (int, []byte) {
					r, _ := s.Platform.ListPartiesWithResponse(ctx, validator, nil)
					return r.StatusCode(), r.Body
				},
				"allocateParty": func() (int, []byte) {
					r, _ := s.Platform.AllocatePartyWithResponse(ctx, validator, &platformapi.AllocatePartyParams{PartyIdHint: "x"})
					return r.StatusCode(), r.Body
				},
				"createUser": func() (int, []byte) {
					r, _ := s.Platform.CreateUserWithResponse(ctx, validator, &platformapi.CreateUserParams{UserId: "x"})
					return r.StatusCode(), r.Body
				},
				"updateUser": func() (int, []byte) {
					r, _ := s.Platform.UpdateUserWithResponse(ctx, validator, "x", &platformapi.UpdateUserParams{IsDeactivated: ptr(true)})
					return r.StatusCode(), r.Body
				},
				"listUserRights": func() (int, []byte) {
					r, _ := s.Platform.ListUserRightsWithResponse(ctx, validator, "x")
					return r.StatusCode(), r.Body
				},
				"updateUserRights": func() (int, []byte) {
					r, _ := s.Platform.UpdateUserRightsWithResponse(ctx, validator, "x", &platformapi.UpdateUserRightsParams{})
					return r.StatusCode(), r.Body
				},
				"getValidatorTrafficStatus": func() (int, []byte) {
					r, _ := s.Platform.GetValidatorTrafficStatusWithResponse(ctx, validator)
					return r.StatusCode(), r.Body
				},
			}
			for op, call := range calls {
				status, raw := call()
				if status != http.StatusBadGateway {
					t.Fatalf("%s: got %d %s, want 502", op, status, raw)
				}
				body := platformError(t, raw)
				if ep, _ := body["endpoint"].(string); !strings.HasPrefix(ep, "http://127.0.0.1:") || !strings.Contains(ep, "/v2/") {
					t.Fatalf("%s endpoint: got %q", op, ep)
				}
				if msg, _ := body["error"].(string); !strings.Contains(msg, tt.want) {
					t.Fatalf("%s error: got %q, want it to contain %q", op, msg, tt.want)
				}
			}
		})
	}
	t.Run("502 validator app unavailable", func(t *testing.T) {
		fl.set(func(up string, r *http.Request) int {
			if up == "validator-app" {
				return http.StatusInternalServerError
			}
			return 0
		})
		defer fl.set(nil)
		for op, call := range map[string]func() (int, []byte){
			"listWalletUsers": func() (int, []byte) {
				r, _ := s.Platform.ListWalletUsersWithResponse(ctx, validator)
				return r.StatusCode(), r.Body
			},
			"onboardWalletUser": func() (int, []byte) {
				r, _ := s.Platform.OnboardWalletUserWithResponse(ctx, validator, platformapi.OnboardWalletUserRequest{Name: "x"})
				return r.StatusCode(), r.Body
			},
			"offboardWalletUser": func() (int, []byte) {
				r, _ := s.Platform.OffboardWalletUserWithResponse(ctx, validator, "x")
				return r.StatusCode(), r.Body
			},
			"getIdentityDump": func() (int, []byte) {
				r, _ := s.Platform.GetIdentityDumpWithResponse(ctx, validator)
				return r.StatusCode(), r.Body
			},
		} {
			if status, raw := call(); status != http.StatusBadGateway {
				t.Fatalf("%s: got %d %s, want 502", op, status, raw)
			}
		}
	})
	t.Run("502 DAR upload", func(t *testing.T) {
		fl.set(func(up string, r *http.Request) int {
			if up == "ledger" {
				return http.StatusServiceUnavailable
			}
			return 0
		})
		defer fl.set(nil)
		ct, body := multipartBody(t, "file", "m.dar", []byte("abc"))
		r, _ := s.Platform.UploadDarWithBodyWithResponse(ctx, validator, ct, body)
		expect(t, "upload", r.StatusCode(), r.Body, http.StatusBadGateway)
	})
}

// TestEndToEnd drives a validator created through 1.11 through 2.0:
// allocate a party, create a user with rights, onboard a wallet user,
// upload a DAR, and see all of it in details.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	var fl faults
	s := apitest.Start(t, apitest.Options{App: []app.Option{app.With(func(o *sandbox.Options) { o.PageSize = 2; o.Fault = fl.hook })}})
	createValidator(t, s)
	ctx := t.Context()

	p, _ := s.Platform.AllocatePartyWithResponse(ctx, validator, &platformapi.AllocatePartyParams{PartyIdHint: "alice"})
	expect(t, "allocate", p.StatusCode(), p.Body, http.StatusOK)
	alice := p.JSON200.PartyDetails.Party
	u, _ := s.Platform.CreateUserWithResponse(ctx, validator, &platformapi.CreateUserParams{UserId: "alice", PrimaryParty: &alice, CanActAs: &[]string{alice}})
	expect(t, "create user", u.StatusCode(), u.Body, http.StatusOK)
	w, _ := s.Platform.OnboardWalletUserWithResponse(ctx, validator, platformapi.OnboardWalletUserRequest{Name: "bob"})
	expect(t, "onboard", w.StatusCode(), w.Body, http.StatusOK)
	ct, body := multipartBody(t, "file", "model.dar", dar(t, map[string]string{"m.dalf": "model"}, "m.dalf"))
	d, _ := s.Platform.UploadDarWithBodyWithResponse(ctx, validator, ct, body)
	expect(t, "upload", d.StatusCode(), d.Body, http.StatusOK)

	r, err := s.Platform.GetValidatorDetailsWithResponse(ctx, validator)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "details", r.StatusCode(), r.Body, http.StatusOK)
	det := r.JSON200
	if det.Validator.Metadata == nil || det.Validator.Metadata.Name == nil || *det.Validator.Metadata.Name != validator {
		t.Fatalf("validator: got %s", r.Body)
	}
	if strings.Contains(string(r.Body), "managedFields") {
		t.Fatal("details carry metadata.managedFields")
	}
	if det.LedgerApiEndpoint == nil || !strings.HasPrefix(*det.LedgerApiEndpoint, "http://127.0.0.1:") {
		t.Fatalf("ledgerApiEndpoint: got %v, want the sandbox ledger", det.LedgerApiEndpoint)
	}
	if det.AuthenticatedUser == nil || det.AuthenticatedUser.User == nil || det.AuthenticatedUser.User.Id != validator+"-validator-operator" {
		t.Fatalf("authenticatedUser: got %s", r.Body)
	}
	var users []string
	for _, u := range *det.AllUsers {
		users = append(users, u.Id)
	}
	if want := []string{"alice", "bob", validator + "-validator-operator"}; strings.Join(users, ",") != strings.Join(want, ",") {
		t.Fatalf("allUsers (over pages of two): got %v, want %v", users, want)
	}
	if det.Dars == nil || len(*det.Dars) != 4 { // three Splice DARs and the uploaded one
		t.Fatalf("dars: got %v", det.Dars)
	}
	for i, name := range []string{"splice-amulet", "splice-wallet", "splice-wallet-payments"} {
		if d := (*det.Dars)[i]; d.Name != name || d.Version == "" || len(d.MainPackageId) != 64 {
			t.Fatalf("dars[%d]: got %+v, want %s with a version and its main package id", i, d, name)
		}
	}
	if det.AuthenticatedUserError != nil || det.AllUsersError != nil || det.DarsError != nil {
		t.Fatalf("no section failed, got errors in %s", r.Body)
	}

	t.Run("a failed section", func(t *testing.T) {
		fl.set(func(up string, r *http.Request) int {
			if r.URL.Path == "/com.digitalasset.canton.admin.participant.v30.PackageService/ListDars" {
				return http.StatusServiceUnavailable
			}
			return 0
		})
		defer fl.set(nil)
		r, err := s.Platform.GetValidatorDetailsWithResponse(ctx, validator)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, "details", r.StatusCode(), r.Body, http.StatusOK)
		if r.JSON200.Dars != nil || r.JSON200.DarsError == nil || !strings.Contains(*r.JSON200.DarsError, "ListDars: the participant admin API is unavailable: INJECTED_FAILURE") || r.JSON200.AllUsers == nil {
			t.Fatalf("got %s, want darsError in place of dars and the other sections", r.Body)
		}
	})
}

// TestUpstreamCallsAreMeasured: a proxied call shows in /actuator/prometheus
// by upstream and outcome.
func TestUpstreamCallsAreMeasured(t *testing.T) {
	t.Parallel()
	s := startWithValidator(t, nil)
	if r, err := s.Platform.ListPartiesWithResponse(t.Context(), validator, nil); err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("listParties: %v %v", err, r.StatusCode())
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+"/actuator/prometheus", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := s.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	want := `validator_manager_upstream_request_duration_seconds_count{outcome="ok",upstream="ledger"}`
	if !strings.Contains(string(body), want) {
		t.Errorf("metrics: got no %s in\n%s", want, body)
	}
}

// upstreamFault makes the sandbox's upstreams misbehave (fault: a status to
// answer instead, or 0 to answer as usual), and says what the 502's error
// must then contain.
type upstreamFault struct {
	name  string
	fault func(up string, r *http.Request) int
	want  string
}

var ledgerUnavailable = upstreamFault{"ledger unavailable", func(up string, r *http.Request) int {
	if up == "ledger" {
		return http.StatusServiceUnavailable
	}
	return 0
}, "INJECTED_FAILURE"}

// ledgerTooSlow holds every ledger request for d (or until its caller
// gives up), longer than the tests' upstream timeout.
func ledgerTooSlow(d time.Duration) upstreamFault {
	return upstreamFault{"ledger too slow", func(up string, r *http.Request) int {
		if up == "ledger" {
			select {
			case <-r.Context().Done():
			case <-time.After(d):
			}
		}
		return 0
	}, "did not answer in time"}
}
