package cluster

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/validator-manager/validator-manager/impl/domain"
)

// ReadPasswordKey reads the key of generated passwords without making it:
// only the leader makes it (PasswordKey); absent, domain.ErrUnavailable.
func (k *Kube) ReadPasswordKey(ctx context.Context) ([]byte, error) {
	key, found, err := k.readPasswordKey(ctx)
	if err == nil && !found {
		return nil, domain.Unavailable("the cluster's password key (Secret %s/%s) is not made yet: the elected leader makes it when it starts; try again shortly", k.namespace, PasswordKeySecret)
	}
	return key, err
}

// PasswordKey reads the key of generated passwords, creating it once.
func (k *Kube) PasswordKey(ctx context.Context) ([]byte, error) {
	for {
		key, found, err := k.readPasswordKey(ctx)
		if err != nil || found {
			return key, err
		}
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		err = k.client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: PasswordKeySecret, Namespace: k.namespace, Labels: map[string]string{ManagedByLabel: ManagedBy}},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"key": key},
		}, client.FieldOwner(FieldOwner))
		if err == nil {
			k.passwordKey.Store(&key)
			return key, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, translate("create the password key", redact(err))
		}
		// Another process made it first: read theirs.
	}
}

// readPasswordKey reads the key from the API server until one read found
// it, then keeps it: the key is never replaced.
func (k *Kube) readPasswordKey(ctx context.Context) (key []byte, found bool, err error) {
	if key := k.passwordKey.Load(); key != nil {
		return *key, true, nil
	}
	s := &corev1.Secret{}
	err = k.api.Get(ctx, types.NamespacedName{Namespace: k.namespace, Name: PasswordKeySecret}, s)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, translate("read the password key", redact(err))
	}
	if key := s.Data["key"]; len(key) == 32 {
		k.passwordKey.Store(&key)
		return key, true, nil
	}
	return nil, true, fmt.Errorf("Secret %s/%s holds no 32-byte key", k.namespace, PasswordKeySecret)
}
