package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	ctrlcluster "sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/validator-manager/validator-manager/impl/domain"
)

func TestTranslate(t *testing.T) {
	secrets := schema.GroupResource{Resource: "secrets"}
	validators := schema.GroupResource{Group: Group, Resource: "validators"}
	refused := &url.Error{Op: "Get", URL: "https://10.0.0.1/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	tests := []struct {
		name  string
		err   error
		code  domain.Code
		field string
		text  string
	}{
		{"not found", apierrors.NewNotFound(validators, "v1"), domain.CodeNotFound, "", `validator "v1" does not exist`},
		{"already exists", apierrors.NewAlreadyExists(secrets, "v1-onboarding"), domain.CodeConflict, "", `secret "v1-onboarding" already exists`},
		{"conflict", apierrors.NewConflict(validators, "v1", errors.New("modified")), domain.CodeConflict, "", "concurrently"},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: "batch", Kind: "CronJob"}, "v1-backup",
			field.ErrorList{field.Invalid(field.NewPath("spec", "schedule"), "x", "bad")}), domain.CodeInvalid, "schedule", "bad"},
		{"timeout", apierrors.NewTimeoutError("slow", 1), domain.CodeUnavailable, "", "cluster: op"},
		{"server timeout", apierrors.NewServerTimeout(validators, "get", 1), domain.CodeUnavailable, "", ""},
		{"too many requests", apierrors.NewTooManyRequests("busy", 1), domain.CodeUnavailable, "", ""},
		{"service unavailable", apierrors.NewServiceUnavailable("down"), domain.CodeUnavailable, "", ""},
		{"internal", apierrors.NewInternalError(errors.New("etcd")), domain.CodeUnavailable, "", ""},
		{"bad gateway", apierrors.NewGenericServerResponse(502, "get", validators, "v1", "", 0, false), domain.CodeUnavailable, "", ""},
		{"connection refused", refused, domain.CodeUnavailable, "", "cluster: op"},
		{"deadline", fmt.Errorf("wait: %w", context.DeadlineExceeded), domain.CodeUnavailable, "", ""},
		{"domain error passes", domain.Invalid("cron", "bad"), domain.CodeInvalid, "cron", "bad"},
	}
	for _, tc := range tests {
		err := translate("op", tc.err)
		var de *domain.Error
		if !errors.As(err, &de) {
			t.Errorf("%s: got %v (%T), want a domain error", tc.name, err, err)
			continue
		}
		if de.Code != tc.code || de.Field != tc.field || !strings.Contains(de.Message, tc.text) {
			t.Errorf("%s: got code %d field %q message %q, want code %d field %q containing %q", tc.name, de.Code, de.Field, de.Message, tc.code, tc.field, tc.text)
		}
	}

	forbidden := apierrors.NewForbidden(secrets, "v1-onboarding", errors.New("rbac"))
	err := translate("op", forbidden)
	var de *domain.Error
	if errors.As(err, &de) || !apierrors.IsForbidden(err) || !strings.HasPrefix(err.Error(), "cluster: op: ") {
		t.Errorf("forbidden: got %v, want it wrapped, not a domain error", err)
	}
	if translate("op", nil) != nil {
		t.Error("nil: got an error, want nil")
	}
}

func TestRedact(t *testing.T) {
	err := apierrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, "v1-onboarding",
		field.ErrorList{field.Invalid(field.NewPath("data", "secret"), "s3cr3t-value", "too long")})
	got := redact(err)
	if strings.Contains(got.Error(), "s3cr3t-value") || !apierrors.IsInvalid(got) {
		t.Errorf("redact: got %q, want an Invalid error without the value", got)
	}
	if f, _ := invalidCause(got); f != "data.secret" {
		t.Errorf("redacted cause field: got %q, want data.secret", f)
	}
}

func TestDurationText(t *testing.T) {
	for _, tc := range []struct {
		text string
		d    time.Duration
		want string
	}{
		{"48h", 0, "48h"},
		{"", 5 * time.Minute, "5m"},
		{"", 48 * time.Hour, "2d"},
		{"", 3 * time.Hour, "3h"},
		{"", 90 * time.Second, "90s"},
		{"1h30m", 90 * time.Minute, "90m"},
		{"1d12h", 36 * time.Hour, "36h"},
		{"30m1h", 90 * time.Minute, "90m"},
	} {
		if got := durationText(tc.text, tc.d); got != tc.want {
			t.Errorf("durationText(%q, %s): got %q, want %q", tc.text, tc.d, got, tc.want)
		}
	}
}

// A cluster that cannot be reached is unavailable, not an internal error.
func TestKubeUnreachable(t *testing.T) {
	unreachable := func(ns string, opts KubeOptions) (*Kube, error) {
		scheme, err := Scheme()
		if err != nil {
			t.Fatal(err)
		}
		c, err := ctrlcluster.New(&rest.Config{Host: "http://127.0.0.1:1", Timeout: 2 * time.Second}, func(o *ctrlcluster.Options) { o.Scheme = scheme })
		if err != nil {
			t.Fatal(err)
		}
		return NewKube(c, ns, opts)
	}
	k, err := unreachable("validators", KubeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := k.Ping(ctx); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Ping: got %v, want ErrUnavailable", err)
	}
	if err := k.CheckReferences(ctx, domain.References{Secrets: []domain.Reference{{Field: "f", Name: "s"}}}); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("CheckReferences: got %v, want ErrUnavailable", err)
	}
	if err := k.Start(ctx); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Start: got %v, want ErrUnavailable", err)
	}
	if _, err := k.ManagedValidators(); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("ManagedValidators before Start: got %v, want ErrUnavailable", err)
	}
	if _, err := unreachable("", KubeOptions{}); err == nil {
		t.Error("empty namespace: got nil, want an error")
	}
	if _, err := RESTConfig("docker", ""); err == nil {
		t.Error("unknown mode: got nil, want an error")
	}
}
