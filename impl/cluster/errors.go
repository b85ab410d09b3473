package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// translate is the one place where client-go errors become domain errors;
// every exported method of Kube returns through it. op says what was being
// done ("apply validator \"v1\""). Domain errors pass unchanged.
func translate(op string, err error) error {
	if err == nil {
		return nil
	}
	var de *domain.Error
	if errors.As(err, &de) {
		return de
	}
	var status apierrors.APIStatus
	switch {
	case apierrors.IsNotFound(err):
		return domain.NotFound("cluster: %s does not exist", objectOf(err))
	case apierrors.IsAlreadyExists(err):
		return domain.Conflict("cluster: %s already exists", objectOf(err))
	case apierrors.IsConflict(err):
		return domain.Conflict("cluster: %s: %s was changed concurrently, try again", op, objectOf(err))
	case apierrors.IsInvalid(err):
		field, msg := invalidCause(err)
		return domain.Invalid(field, "cluster rejected %s: %s", op, msg)
	case unavailable(err), errors.As(err, &status) && status.Status().Code >= 500:
		// The detail (addresses, server messages) goes to the log only.
		e := domain.Unavailable("cluster: %s: the Kubernetes API server is unavailable", op)
		e.Cause = err
		return e
	}
	return fmt.Errorf("cluster: %s: %w", op, err)
}

// unavailable tells failures a retry may cure: unreachable, overloaded or timed out.
func unavailable(err error) bool {
	var ne net.Error
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err) ||
		errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
}

// objectOf names the object of a status error: `secret "v1-onboarding"`.
func objectOf(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return "object"
	}
	d := status.Status().Details
	kind := cmp.Or(strings.TrimSuffix(strings.ToLower(d.Kind), "s"), "object")
	return fmt.Sprintf("%s %q", kind, d.Name)
}

// invalidCause is the first field the API server named in a 422.
func invalidCause(err error) (string, string) {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if d := status.Status().Details; d != nil {
			for _, c := range d.Causes {
				if c.Field != "" {
					return strings.TrimPrefix(c.Field, "spec."), c.Message
				}
			}
		}
		return "", status.Status().Message
	}
	return "", err.Error()
}

// redact drops the server's message from an error about a Secret write: a
// server may quote the data it refused. Reason, code and object stay.
func redact(err error) error {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return err
	}
	s := status.Status()
	out := metav1.Status{Status: s.Status, Code: s.Code, Reason: s.Reason, Message: string(s.Reason)}
	if s.Details != nil {
		out.Details = &metav1.StatusDetails{Name: s.Details.Name, Group: s.Details.Group, Kind: s.Details.Kind}
		for _, c := range s.Details.Causes {
			out.Details.Causes = append(out.Details.Causes, metav1.StatusCause{Type: c.Type, Field: c.Field, Message: string(c.Type)})
		}
	}
	return &apierrors.StatusError{ErrStatus: out}
}
