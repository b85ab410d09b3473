package cluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// ReadPasswordKey reads the key of generated passwords without making it
// (handlers derive from it; only the leader makes it, PasswordKey): absent,
// it is domain.ErrUnavailable with a message that says so.
func (k *Kube) ReadPasswordKey(ctx context.Context) ([]byte, error) {
	s, err := k.core.CoreV1().Secrets(k.namespace).Get(ctx, PasswordKeySecret, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, domain.Unavailable("the cluster's password key (Secret %s/%s) is not made yet: the elected leader makes it when it starts; try again shortly", k.namespace, PasswordKeySecret)
	}
	if err != nil {
		return nil, translate("read the password key", redact(err))
	}
	if key := s.Data["key"]; len(key) == 32 {
		return key, nil
	}
	return nil, fmt.Errorf("Secret %s/%s holds no 32-byte key", k.namespace, PasswordKeySecret)
}
