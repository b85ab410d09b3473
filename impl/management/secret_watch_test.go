package management_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/validator-manager/validator-manager/impl/apitest"
	"github.com/validator-manager/validator-manager/impl/cluster"
	"github.com/validator-manager/validator-manager/impl/domain"
)

// TestSecretDeletedByHandIsWrittenAgain: the intent controller watches a
// validator's Secrets (no resync needed): a database Secret deleted by
// hand, or emptied of its key, is written again with the generated
// password.
func TestSecretDeletedByHandIsWrittenAgain(t *testing.T) {
	s := apitest.Start(t, apitest.Options{})
	ctx := context.Background()
	payload := apitest.ValidatorPayload("sigma")
	payload.DatabaseConfig.Password = nil // generated: made again when missing
	if r, err := s.Management.CreateValidatorWithResponse(ctx, payload); err != nil || r.StatusCode() != http.StatusCreated {
		t.Fatalf("create: %v %s", err, r.Body)
	}
	secrets := s.Kube.Core.CoreV1().Secrets(s.Kube.Namespace)
	name := domain.DatabaseSecretName("sigma")
	password := func() (string, error) {
		sec, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		v, ok := sec.Data[cluster.DatabaseSecretKey]
		if !ok {
			return "", fmt.Errorf("no key %s", cluster.DatabaseSecretKey)
		}
		return string(v), nil
	}
	var first string
	apitest.Eventually(t, 10*time.Second, "the database Secret", func() (err error) { first, err = password(); return err })
	for _, drift := range []struct {
		name string
		do   func() error
	}{
		{"deleted", func() error { return secrets.Delete(ctx, name, metav1.DeleteOptions{}) }},
		{"emptied", func() error {
			sec, err := secrets.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			sec.Data = map[string][]byte{}
			_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
			return err
		}},
	} {
		if err := drift.do(); err != nil {
			t.Fatalf("%s: %v", drift.name, err)
		}
		apitest.Eventually(t, 10*time.Second, "the database Secret written again after it was "+drift.name, func() error {
			got, err := password()
			if err == nil && got != first {
				return fmt.Errorf("another password")
			}
			return err
		})
	}
}
