package server_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/validator-manager/validator-manager/gen/managementapi"
	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// conditional GETs path with If-None-Match tag (none when empty) and
// returns the status, the ETag and the body (every answer is checked
// against the contract by s.HTTP).
func conditional(t *testing.T, s *apitest.Server, path, tag string) (int, string, string) {
	t.Helper()
	h := http.Header{"Authorization": {"Bearer " + s.Token}}
	if tag != "" {
		h.Set("If-None-Match", tag)
	}
	resp, body := sendHeaders(t, s, http.MethodGet, path, h)
	return resp.StatusCode, resp.Header.Get("ETag"), string(body)
}

// TestListETags: the lists of both releases answer an ETag; sent back it
// is 304 while nothing the list shows changed (a 304 is never stale: the
// list then is what it was), and 200 with a new tag once something did (a
// create, an edit, a phase, a change in the cluster), or for another query.
func TestListETags(t *testing.T) {
	t.Parallel()
	s := apitest.Start(t, apitest.Options{})
	ctx := t.Context()
	lists := []string{"/api/validators", "/api/validators?limit=1", "/api/validators?status=RUNNING", "/api/v1/validators", "/api/v1/applications"}
	tags, bodies := map[string]string{}, map[string]string{}
	remember := func(what string) {
		t.Helper()
		for _, path := range lists {
			code, tag, body := conditional(t, s, path, "")
			if code != http.StatusOK || tag == "" {
				t.Fatalf("%s: GET %s: got %d ETag %q, want 200 with a tag", what, path, code, tag)
			}
			tags[path], bodies[path] = tag, body
		}
	}
	// want checks each list against what was remembered: those named
	// changed are 200 with a new tag; a 304 of any list must be true. The
	// conditional GET is read between two plain ones: a list the
	// controllers change meanwhile (a status they write after an edit) is
	// read again, so that a 304 is judged by the list it answered for.
	want := func(what string, changed ...string) {
		t.Helper()
		for _, path := range lists {
			var code int
			var tag, now string
			for range 5 {
				_, _, before := conditional(t, s, path, "")
				code, tag, _ = conditional(t, s, path, tags[path])
				if _, _, now = conditional(t, s, path, ""); now == before {
					break
				}
			}
			switch {
			case code == http.StatusNotModified && (tag != tags[path] || now != bodies[path]):
				t.Errorf("%s: GET %s: 304 %s, but the list changed (or the tag)", what, path, tag)
			case code == http.StatusOK && tag == tags[path]:
				t.Errorf("%s: GET %s with its tag: 200 with the same tag %s", what, path, tag)
			case code != http.StatusOK && code != http.StatusNotModified:
				t.Errorf("%s: GET %s with its tag: got %d, want 200 or 304", what, path, code)
			case code != http.StatusOK && slices.Contains(changed, path):
				t.Errorf("%s: GET %s with its old tag: got %d, want 200", what, path, code)
			}
		}
		remember(what)
	}
	remember("start")
	for _, path := range lists {
		if code, tag, body := conditional(t, s, path, tags[path]); code != http.StatusNotModified || tag != tags[path] || body != "" {
			t.Errorf("nothing changed: GET %s with its tag: got %d %s %q, want 304 with the tag, no body", path, code, tag, body)
		}
	}
	if code, _, _ := conditional(t, s, "/api/validators", `"other", `+tags["/api/validators"]); code != http.StatusNotModified {
		t.Errorf("a list of tags naming it: got %d, want 304", code)
	}
	if code, _, _ := conditional(t, s, "/api/validators?limit=1", tags["/api/validators"]); code != http.StatusOK {
		t.Errorf("another query's tag: got %d, want 200", code)
	}

	if r, err := s.Management.CreateValidatorWithResponse(ctx, apitest.ValidatorPayload("tagged")); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %v", err, r)
	}
	s.Provisioned(t, "tagged")
	apitest.Eventually(t, 10*time.Second, "the validator in the cache", func() error { return s.Kube.Settle(ctx) })
	want("a create", "/api/validators", "/api/validators?limit=1", "/api/v1/validators")

	tag := "0.4.3"
	if r, err := s.Management.UpdateValidatorWithResponse(ctx, managementapi.ValidatorEditDto{Name: "tagged", ImageTag: &tag}); err != nil || r.StatusCode() != http.StatusOK {
		t.Fatalf("edit: %v %v", err, r)
	}
	apitest.Eventually(t, 10*time.Second, "the edit in the cluster", func() error { return s.Kube.Settle(ctx) })
	want("an edit", "/api/validators", "/api/validators?limit=1")

	if err := s.Kube.SetStatus(ctx, "tagged", domain.PhaseRunning, true); err != nil {
		t.Fatal(err)
	}
	apitest.Eventually(t, 10*time.Second, "the phase in the database", func() error {
		r, err := s.Management.ListValidatorsWithResponse(ctx, &managementapi.ListValidatorsParams{})
		if err != nil || r.JSON200 == nil || len(r.JSON200.Validators) != 1 || r.JSON200.Validators[0].Phase == nil || *r.JSON200.Validators[0].Phase != managementapi.RUNNING {
			return errStill("not RUNNING yet")
		}
		return nil
	})
	want("a phase", "/api/validators", "/api/validators?limit=1", "/api/validators?status=RUNNING", "/api/v1/validators")

	// The simulated node writes the application's status meanwhile.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		app, err := s.Kube.Applications().Get(ctx, "sample-app", metav1.GetOptions{})
		if err != nil {
			return err
		}
		app.SetLabels(map[string]string{"edited": "yes"})
		_, err = s.Kube.Applications().Update(ctx, app, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	apitest.Eventually(t, 10*time.Second, "the application in the cache", func() error { return s.Kube.Settle(ctx) })
	want("an application changed", "/api/v1/applications")
}

type errStill string

func (e errStill) Error() string { return string(e) }
